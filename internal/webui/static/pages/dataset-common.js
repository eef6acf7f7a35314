// Pieces the datasets pages share: API paths, an image with its boxes
// drawn over it (positioned in percent of the image's own pixels, so they
// follow the rendered size), the findings table and the version's counts.
import { html, useState } from '../js/lib.js';
import { get, post } from '../js/api.js';
import { href } from '../js/router.js';
import { Badge, Table, usePoll, ErrorBox, Live } from '../js/ui.js';
import { number, plural } from '../js/format.js';

const enc = encodeURIComponent;

export const dsPath = (id, ...rest) => ['/api/v1/datasets', enc(id), ...rest.map((p) => enc(String(p)))].join('/');

// imageURL is a sample's image on the API's own origin (the console's
// CSP allows images from 'self' only).
export function imageURL(datasetID, sampleID, version) {
	return dsPath(datasetID, 'samples', sampleID, 'image') + (version ? '?version=' + enc(version) : '');
}

// sampleLink opens a sample (by key) in the sample view; version '' is
// the current version with the draft's labels.
export function sampleLink(datasetID, key, version) {
	const q = new URLSearchParams({ key });
	if (version) q.set('version', version);
	return href('datasets', datasetID, 'sample') + '?' + q.toString();
}

export const labelsOf = (ann) => {
	const out = [...((ann && ann.tags) || [])];
	for (const b of (ann && ann.boxes) || []) if (!out.includes(b.label)) out.push(b.label);
	return out;
};

// pct positions a box in percent of the image's natural size.
function pct(b, w, h) {
	return { left: (b.xmin / w) * 100 + '%', top: (b.ymin / h) * 100 + '%', width: ((b.xmax - b.xmin) / w) * 100 + '%', height: ((b.ymax - b.ymin) / h) * 100 + '%' };
}

// Boxes draws boxes over an image whose natural size is w×h. kind:
// 'label' (a person's or the version's), 'proposal' (dashed), 'draft'
// (the one being drawn).
export function Boxes({ boxes, w, h, kind = 'label', selected = -1, onSelect }) {
	if (!w || !h || !boxes || !boxes.length) return null;
	return boxes.map((b, i) => html`<div key=${kind + i} class=${'ds-box ds-kind-' + kind + (i === selected ? ' selected' : '')}
		data-box=${i} data-label=${b.label} style=${pct(b, w, h)}
		onPointerDown=${onSelect ? (e) => { e.stopPropagation(); onSelect(i); } : undefined}>
		${b.label && html`<span class="ds-box-tag">${b.label}</span>`}
	</div>`);
}

// SampleImage is an image with its boxes; it reports its natural size.
export function SampleImage({ src, alt, boxes, proposal, className = '', onSize }) {
	const [size, setSize] = useState(null);
	const load = (e) => {
		const s = { w: e.target.naturalWidth, h: e.target.naturalHeight };
		setSize(s);
		if (onSize) onSize(s);
	};
	return html`<div class=${'ds-stage ' + className} data-loaded=${size ? 'true' : 'false'}>
		<img src=${src} alt=${alt} onLoad=${load} draggable="false" />
		${size && html`<${Boxes} boxes=${boxes} w=${size.w} h=${size.h} />`}
		${size && proposal && html`<${Boxes} boxes=${proposal} w=${size.w} h=${size.h} kind="proposal" />`}
	</div>`;
}

// Findings is a validation report: each finding links to its object.
export function Findings({ datasetID, findings, version, empty }) {
	return html`<${Table} label="findings" rows=${findings || []} empty=${empty || 'No findings.'} columns=${[
		{ label: 'Severity', render: (f) => html`<${Badge} status=${f.severity === 'error' ? 'ERROR' : 'WAIT'} text=${f.severity} />` },
		{ label: 'Rule', render: (f) => html`<code>${f.rule}</code>` },
		{ label: 'Object', className: 'name', render: (f) => f.object
			? html`<a class="ds-finding-object" data-object=${f.object} href=${sampleLink(datasetID, f.object, version)}>${f.object}</a>${f.line ? html` <span class="muted">line ${f.line}</span>` : ''}`
			: html`<span class="muted">${f.path || '–'}</span>` },
		{ label: 'Finding', render: (f) => html`${f.message}${f.hint && html`<div class="muted">${f.hint}</div>`}` },
	]} />`;
}

// ClassCounts is a version's samples per class, with bars, each class
// linking to its grid.
export function ClassCounts({ datasetID, version }) {
	const per = version.per_class || {};
	const classes = [...new Set([...(version.classes || []), ...Object.keys(per)])];
	const max = Math.max(1, ...Object.values(per));
	const rows = classes.map((c) => ({ c, n: per[c] || 0 }));
	return html`<${Table} label="samples per class" rows=${rows} empty="No classes." columns=${[
		{ label: 'Class', className: 'name', render: (r) => html`<a class="ds-class" data-class=${r.c} href=${href('datasets', datasetID, 'versions', version.version_name, 'grid') + '?class=' + enc(r.c)}>${r.c}</a>` },
		{ label: 'Samples', className: 'right', render: (r) => html`<span data-count=${r.c}>${number(r.n)}</span>` },
		{ label: '', render: (r) => html`<span class="ds-bar" aria-hidden="true"><span style=${{ width: (r.n / max) * 100 + '%' }}></span></span>` },
	]} />`;
}

export const published = (v) => v && (v.status === 'published' || v.status === 'degraded');

export function versionCounts(v) {
	if (!v) return '–';
	if (v.status === 'creating') return v.progress ? `${v.progress.phase} ${v.progress.done}/${v.progress.total || '?'}` : 'queued';
	return `${number(v.total_sample_count)} samples, ${number(v.annotated_sample_count)} labelled`;
}

// Publish makes a new version (the draft's labels go into it) and follows
// it until it is published, then shows its counts.
export function Publish({ id, onDone }) {
	const [v, setV] = useState(null);
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState(null);
	const start = async () => {
		setBusy(true); setError(null);
		try { setV(await post(dsPath(id, 'versions'), {})); } catch (e) { setError(e); setBusy(false); }
	};
	usePoll(async () => {
		try {
			const got = await get(dsPath(id, 'versions', v.version_id), { check: false });
			setV(got);
			if (got.status !== 'creating') { setBusy(false); if (onDone) onDone(got); }
		} catch (e) { setError(e); setBusy(false); }
	}, v && v.status === 'creating' ? 1000 : 0, [v && v.version_id, v && v.status]);
	return html`<div class="panel ds-publish">
		<button class="primary" onClick=${start} disabled=${busy}>${busy ? 'Publishing…' : 'Publish a new version'}</button>
		<span class="muted"> the source as it is now, with the draft's labels</span>
		<${ErrorBox} error=${error} />
		${v && html`<div class="ds-published" data-status=${v.status} data-version=${v.version_name}>
			<${Live} text=${v.status === 'creating' ? `Version ${v.version_name}: ${versionCounts(v)}` : `Version ${v.version_name} is ${v.status}.`} />
			${v.status === 'failed' && html`<${ErrorBox} error=${{ code: 'failed', message: v.failure_message }} />`}
			${published(v) && html`<p><a href=${href('datasets', id, 'versions', v.version_name)}>${v.version_name}</a>:
				<span data-total=${v.total_sample_count}>${plural(v.total_sample_count, 'sample')}</span>,
				<span data-annotated=${v.annotated_sample_count}>${number(v.annotated_sample_count)} labelled</span>
				(${number(v.draft_labels || 0)} from the draft)</p>
				<${ClassCounts} datasetID=${id} version=${v} />`}
		</div>`}
	</div>`;
}
