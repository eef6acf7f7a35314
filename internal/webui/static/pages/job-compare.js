// Compare training jobs (?ids=A,B,…): parameters and settings side by
// side (differences marked), and each metric's curves overlaid.
import { html, useMemo } from '../js/lib.js';
import { get } from '../js/api.js';
import { Page, useLoad, pageState } from '../js/ui.js';
import { href } from '../js/router.js';
import { duration } from '../js/format.js';
import { Chart, align } from '../js/chart.js';
import { JobStatus, runningTime, seriesOf } from './job-common.js';

const POINTS = 1000;
const MAX_JOBS = 8;

export default function JobCompare({ route }) {
	const ids = (route.query.get('ids') || '').split(',').map((s) => s.trim()).filter(Boolean).slice(0, MAX_JOBS);
	const key = ids.join(',');
	const load = useLoad(() => Promise.all(ids.map(async (id) => {
		const enc = encodeURIComponent(id);
		const [job, m] = await Promise.all([get('/api/v1/training-jobs/' + enc), get('/api/v1/training-jobs/' + enc + '/metrics', { kind: 'user', max_points: POINTS })]);
		return { job, series: seriesOf(m.samples) };
	})), [key]);
	const runs = load.data || [];
	const rows = useMemo(() => {
		const fixed = [
			['Status', (j) => html`<${JobStatus} job=${j} />`, (j) => j.status.phase],
			['Engine', (j) => j.algorithm.engine.engine_name],
			['Flavor', (j) => j.spec.resource.flavor_id],
			['Boot file / command', (j) => j.algorithm.boot_file || j.algorithm.command],
			['Running time', (j) => duration(runningTime(j))],
		];
		const names = Array.from(new Set(runs.flatMap((r) => (r.job.algorithm.parameters || []).map((p) => p.name)))).sort();
		const param = (name) => (j) => {
			const p = (j.algorithm.parameters || []).find((x) => x.name === name);
			return p ? p.value : undefined;
		};
		const ins = Array.from(new Set(runs.flatMap((r) => (r.job.algorithm.inputs || []).map((c) => c.name)))).sort();
		const input = (name) => (j) => {
			const c = (j.algorithm.inputs || []).find((x) => x.name === name);
			if (!c) return undefined;
			return c.remote.obs ? c.remote.obs.obs_url : 'dataset ' + (c.remote.dataset.name || c.remote.dataset.id) + ' ' + (c.remote.dataset.version || '');
		};
		return [
			...fixed.map(([label, show, raw]) => ({ label, show, raw: raw || show })),
			...names.map((n) => ({ label: '--' + n, show: param(n), raw: param(n), param: true })),
			...ins.map((n) => ({ label: 'input ' + n, show: input(n), raw: input(n) })),
		];
	}, [load.data]);
	const metrics = Array.from(new Set(runs.flatMap((r) => Object.keys(r.series)))).sort();
	const title = 'Compare training jobs';
	return html`<${Page} name="jobs-compare" title=${title} state=${pageState(load)} error=${load.error}>
		<p><a href=${href('jobs')}>All training jobs</a></p>
		${ids.length < 2 && html`<p class="notice">Pick two or more jobs in the list to compare them.</p>`}
		${runs.length > 0 && html`
		<div class="job-compare-table"><table class="data" aria-label="parameters side by side">
			<thead><tr><th scope="col">Setting</th>${runs.map((r) => html`<th scope="col" class="name"><a href=${href('jobs', r.job.metadata.id)}>${r.job.metadata.name}</a></th>`)}</tr></thead>
			<tbody>${rows.map((row) => {
				const vals = runs.map((r) => row.raw(r.job));
				const differs = new Set(vals.map((v) => String(v))).size > 1;
				return html`<tr class=${differs ? 'differs' : ''} data-differs=${differs ? 'true' : 'false'}><th scope="row">${row.label}${differs ? html` <span class="sr-only">(differs)</span>` : ''}</th>
					${runs.map((r) => { const v = row.show(r.job); return html`<td class="name">${v === undefined || v === null || v === '' ? html`<span class="muted">–</span>` : v}</td>`; })}</tr>`;
			})}</tbody>
		</table></div>
		<h2>Metrics</h2>
		${metrics.length === 0 && html`<p class="muted">None of these jobs reported metrics.</p>`}
		<div class="job-charts">${metrics.map((m) => {
			const have = runs.filter((r) => r.series[m]);
			return html`<${Chart} key=${m + key} id=${'compare-' + m} title=${m} xLabel="step" yLabel=${m}
				data=${align(have.map((r) => r.series[m]))} series=${have.map((r) => ({ label: r.job.metadata.name }))} />`;
		})}</div>`}
	</${Page}>`;
}
