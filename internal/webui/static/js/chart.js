// Chart draws time series with uPlot (vendored). data: [xs, ...ys] as
// uPlot wants it (xs ascending); series: [{label, stroke}] for the ys.
// Large series are drawn as they are: uPlot handles 100k points per
// series; the chart marks itself data-drawn="N" once drawn (tests wait on
// it).
import { html, useEffect, useRef } from './lib.js';
import uPlot from '../vendor/uPlot.esm.js';

const palette = ['#24476b', '#d1495b', '#2e933c', '#edae49', '#7b2cbf', '#00798c', '#9c6644', '#3d5a80'];

export function Chart({ title, data, series, xLabel, yLabel, xTime = false, height = 240, id }) {
	const box = useRef(null);
	const plot = useRef(null);
	useEffect(() => {
		const el = box.current;
		if (!el || !data || !data[0]) return undefined;
		const width = Math.max(280, el.clientWidth || 600);
		const opts = {
			title, width, height,
			scales: { x: { time: xTime } },
			axes: [{ label: xLabel }, { label: yLabel }],
			series: [{ label: xLabel || 'x' }, ...series.map((s, i) => ({ label: s.label, stroke: s.stroke || palette[i % palette.length], width: 1.5, spanGaps: true, points: { show: false } }))],
			cursor: { drag: { x: true, y: false } },
		};
		if (plot.current) plot.current.destroy();
		plot.current = new uPlot(opts, data, el);
		el.dataset.drawn = String(data[0].length);
		const ro = new ResizeObserver(() => {
			if (plot.current && el.clientWidth) plot.current.setSize({ width: el.clientWidth, height });
		});
		ro.observe(el);
		return () => { ro.disconnect(); if (plot.current) { plot.current.destroy(); plot.current = null; } };
	}, [data, series && series.map((s) => s.label).join('\u0000'), height, title]);
	return html`<figure class="chart" id=${id} ref=${box} aria-label=${title || 'chart'} role="img"></figure>`;
}

// align merges series [{x: [...], y: [...]}] on the union of their x values
// (for overlays: several jobs' curves on one chart), null where absent.
export function align(list) {
	const xs = Array.from(new Set(list.flatMap((s) => s.x))).sort((a, b) => a - b);
	const idx = new Map(xs.map((x, i) => [x, i]));
	const ys = list.map((s) => {
		const y = new Array(xs.length).fill(null);
		s.x.forEach((x, i) => { y[idx.get(x)] = s.y[i]; });
		return y;
	});
	return [xs, ...ys];
}
