// Datasets: the list (paged and filtered on the server) with a create
// form, a dataset's versions with counts, publish and diff, a version's
// counts per class and validation report, a sample, and the validation of
// the source as it is now. The grid and labeling are sub-modules.
import { html, useState } from '../js/lib.js';
import { get, post, del } from '../js/api.js';
import { href, navigate, setQuery } from '../js/router.js';
import { Page, useLoad, useFollow, usePoll, pageState, Badge, Table, Pager, Field, ErrorBox, KV, Confirm, Live } from '../js/ui.js';
import { bytes, time, ago, number, plural } from '../js/format.js';
import { dsPath, imageURL, SampleImage, Findings, ClassCounts, labelsOf, published, Publish, versionCounts } from './dataset-common.js';
import GridPage from './dataset-grid.js';
import LabelPage from './dataset-label.js';

const TYPES = ['image_classification', 'object_detection', 'image_segmentation', 'text_classification', 'custom'];
const FORMATS = ['auto', 'imagefolder', 'image_txt', 'voc', 'yolo', 'coco', 'manifest'];
const PAGE = 20;

export default function Datasets({ route }) {
	const [, id, sub, ver, more] = route.parts;
	if (!id) return html`<${List} route=${route} />`;
	if (sub === 'versions' && ver && more === 'grid') return html`<${GridPage} route=${route} id=${id} version=${ver} />`;
	if (sub === 'versions' && ver) return html`<${VersionPage} id=${id} version=${ver} />`;
	if (sub === 'diff') return html`<${DiffPage} route=${route} id=${id} />`;
	if (sub === 'validate') return html`<${ValidatePage} id=${id} />`;
	if (sub === 'sample') return html`<${SamplePage} route=${route} id=${id} />`;
	if (sub === 'label') return html`<${LabelPage} route=${route} id=${id} />`;
	return html`<${DatasetPage} id=${id} />`;
}

function Crumbs({ d, id, here }) {
	return html`<nav class="ds-crumbs" aria-label="breadcrumb"><a href=${href('datasets')}>Datasets</a>
		${' / '}<a href=${href('datasets', id)}>${d ? d.dataset_name : id}</a>${here && html` / <span>${here}</span>`}</nav>`;
}

// ---- list ----

function List({ route }) {
	const q = route.query;
	const offset = Number(q.get('offset')) || 0;
	const name = q.get('name') || '';
	const [filter, setFilter] = useFollow(name);
	const list = useLoad(() => get('/api/v1/datasets', { offset, limit: PAGE, name }), [offset, name]);
	const creating = list.data && list.data.items.some((d) => d.latest_version && d.latest_version.status === 'creating');
	usePoll(() => list.reload(), creating ? 2000 : 0, [creating, list.reload]);
	return html`<${Page} name="datasets" title="Datasets" state=${pageState(list)} error=${list.error}>
		<form class="toolbar" role="search" onSubmit=${(e) => { e.preventDefault(); setQuery({ name: filter.trim(), offset: '' }); }}>
			<label class="sr-only" for="ds-filter">Filter by name</label>
			<input id="ds-filter" type="search" placeholder="Filter by name" value=${filter} onInput=${(e) => setFilter(e.target.value)} />
			<button type="submit">Filter</button>
		</form>
		<${Table} label="datasets" rows=${list.data && list.data.items} rowKey=${(d) => d.dataset_id}
			empty=${name ? 'No dataset matches.' : 'No datasets yet. Create one below over an OBS folder.'} columns=${[
			{ label: 'Name', className: 'name', render: (d) => html`<a class="ds-name" href=${href('datasets', d.dataset_id)}>${d.dataset_name}</a>` },
			{ label: 'Type', key: 'dataset_type' },
			{ label: 'Layout', key: 'data_format' },
			{ label: 'Versions', className: 'right', render: (d) => number(d.version_count) },
			{ label: 'Latest', render: (d) => d.latest_version ? html`<a href=${href('datasets', d.dataset_id, 'versions', d.latest_version.version_name)}>${d.latest_version.version_name}</a> <${Badge} status=${d.latest_version.status} />` : html`<span class="muted">none</span>` },
			{ label: 'Samples', render: (d) => versionCounts(d.latest_version) },
			{ label: 'Created', render: (d) => ago(d.create_time) },
		]} />
		${list.data && html`<${Pager} total=${list.data.total} offset=${offset} limit=${PAGE} onPage=${(o) => setQuery({ offset: o || '' })} />`}
		<${CreateForm} />
	</${Page}>`;
}

function CreateForm() {
	const [f, setF] = useState({ dataset_name: '', dataset_type: 'image_classification', data_path: '', data_format: 'auto', description: '' });
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState(null);
	const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
	const submit = async (e) => {
		e.preventDefault();
		setBusy(true); setError(null);
		try {
			const d = await post('/api/v1/datasets', {
				dataset_name: f.dataset_name.trim(), dataset_type: f.dataset_type, description: f.description,
				data_format: f.data_format, data_sources: [{ data_type: 'OBS', data_path: f.data_path.trim() }],
			});
			navigate(href('datasets', d.dataset_id));
		} catch (err) { setError(err); } finally { setBusy(false); }
	};
	return html`<details class="panel ds-create"><summary>Create a dataset</summary>
		<form onSubmit=${submit} aria-label="create a dataset">
			<div class="grid2">
				<${Field} label="Name" id="ds-name"><input id="ds-name" required value=${f.dataset_name} onInput=${set('dataset_name')} /></${Field}>
				<${Field} label="Type" id="ds-type"><select id="ds-type" value=${f.dataset_type} onChange=${set('dataset_type')}>${TYPES.map((t) => html`<option value=${t}>${t}</option>`)}</select></${Field}>
				<${Field} label="Source (OBS folder)" id="ds-source" help="obs://bucket/folder/ — upload with atelier obs cp -r"><input id="ds-source" required placeholder="obs://bucket/folder/" value=${f.data_path} onInput=${set('data_path')} /></${Field}>
				<${Field} label="Layout" id="ds-format" help="auto detects it and says why"><select id="ds-format" value=${f.data_format} onChange=${set('data_format')}>${FORMATS.map((t) => html`<option value=${t}>${t}</option>`)}</select></${Field}>
			</div>
			<${Field} label="Description" id="ds-desc"><input id="ds-desc" value=${f.description} onInput=${set('description')} /></${Field}>
			<${ErrorBox} error=${error} />
			<button class="primary" type="submit" disabled=${busy}>${busy ? 'Creating…' : 'Create dataset'}</button>
		</form>
	</details>`;
}

// ---- one dataset ----

function DatasetPage({ id }) {
	const [offset, setOffset] = useState(0);
	const ds = useLoad(() => get(dsPath(id)), [id]);
	const vs = useLoad(() => get(dsPath(id, 'versions'), { offset, limit: PAGE }), [id, offset]);
	const [confirm, setConfirm] = useState(false);
	const creating = vs.data && vs.data.items.some((v) => v.status === 'creating');
	usePoll(() => { vs.reload(); ds.reload(); }, creating ? 1500 : 0, [creating, vs.reload, ds.reload]);
	const d = ds.data;
	const state = pageState(ds, vs);
	const items = (vs.data && vs.data.items) || [];
	return html`<${Page} name="dataset" title=${d ? d.dataset_name : 'Dataset'} state=${state} error=${ds.error || vs.error}
		actions=${d && html`<a class="button" href=${href('datasets', id, 'label')}>Label</a>
			<a class="button" href=${href('datasets', id, 'validate')}>Validate</a>
			<button class="danger" onClick=${() => setConfirm(true)}>Delete</button>`}>
		<${Crumbs} d=${d} id=${id} />
		${d && html`<div class="panel"><${KV} items=${[
			['Type', d.dataset_type], ['Layout', d.data_format + (d.detection ? ` (detected, ${Math.round(d.detection.confidence * 100)}% sure)` : '')],
			['Source', html`<code>${d.data_sources[0] && d.data_sources[0].data_path}</code>`],
			d.description && ['Description', d.description], ['Owner', d.owner], ['Created', time(d.create_time)],
			['Draft', d.draft ? html`<span data-draft-labels=${d.draft.labels}>${plural(d.draft.labels, 'label')}, ${plural(d.draft.proposals, 'proposal')} waiting for the next version</span>` : 'nothing waiting'],
		]} /></div>`}
		${d && html`<${Publish} id=${id} onDone=${() => { vs.reload(); ds.reload(); }} />`}
		<h2>Versions</h2>
		<${Table} label="versions" rows=${vs.data && items} rowKey=${(v) => v.version_id} empty="No versions yet: publish one." columns=${[
			{ label: 'Version', className: 'name', render: (v) => html`<a class="ds-version" data-version=${v.version_name} href=${href('datasets', id, 'versions', v.version_name)}>${v.version_name}</a>` },
			{ label: 'Status', render: (v) => html`<${Badge} status=${v.status} />` },
			{ label: 'Samples', className: 'right', render: (v) => published(v) ? number(v.total_sample_count) : versionCounts(v) },
			{ label: 'Labelled', className: 'right', render: (v) => published(v) ? number(v.annotated_sample_count) : '' },
			{ label: 'Classes', render: (v) => (v.classes || []).length ? plural(v.classes.length, 'class', 'classes') : '–' },
			{ label: 'Findings', render: (v) => `${plural(v.errors || 0, 'error')}, ${plural(v.warnings || 0, 'warning')}` },
			{ label: 'Created', render: (v) => html`${ago(v.create_time)}${v.created_by ? ' by ' + v.created_by : ''}` },
			{ label: '', render: (v) => published(v) && html`<a href=${href('datasets', id, 'versions', v.version_name, 'grid')}>grid</a>` },
		]} />
		${vs.data && html`<${Pager} total=${vs.data.total} offset=${offset} limit=${PAGE} onPage=${setOffset} />`}
		${items.filter(published).length >= 2 && html`<p><a class="button" href=${href('datasets', id, 'diff') + '?from=' + encodeURIComponent(items.filter(published)[1].version_name) + '&to=' + encodeURIComponent(items.filter(published)[0].version_name)}>Compare the two newest versions</a></p>`}
		<${Confirm} open=${confirm} title="Delete this dataset?" danger confirmLabel="Delete" typed=${d && d.dataset_name}
			onCancel=${() => setConfirm(false)} onConfirm=${async () => { await del(dsPath(id)); navigate(href('datasets')); }}>
			<p>Its versions and their manifests are deleted; the data in OBS stays.</p>
		</${Confirm}>
	</${Page}>`;
}

// ---- a version ----

function VersionPage({ id, version }) {
	const ds = useLoad(() => get(dsPath(id)), [id]);
	const v = useLoad(() => get(dsPath(id, 'versions', version)), [id, version]);
	usePoll(() => v.reload(), v.data && v.data.status === 'creating' ? 1500 : 0, [v.data && v.data.status, v.reload]);
	const x = v.data;
	return html`<${Page} name="dataset-version" title=${x ? `${ds.data ? ds.data.dataset_name : ''} ${x.version_name}` : 'Version'} state=${pageState(ds, v)} error=${ds.error || v.error}
		actions=${x && published(x) && html`<a class="button primary" href=${href('datasets', id, 'versions', x.version_name, 'grid')}>Image grid</a>`}>
		<${Crumbs} d=${ds.data} id=${id} here=${version} />
		${x && html`
			<div class="cards">
				<div class="card"><div class="label">Status</div><div class="big"><${Badge} status=${x.status} /></div></div>
				<div class="card"><div class="label">Samples</div><div class="big" data-total=${x.total_sample_count}>${number(x.total_sample_count)}</div></div>
				<div class="card"><div class="label">Labelled</div><div class="big" data-annotated=${x.annotated_sample_count}>${number(x.annotated_sample_count)}</div></div>
				<div class="card"><div class="label">Findings</div><div class="big">${number(x.errors)} / ${number(x.warnings)}</div><div class="label">errors / warnings</div></div>
			</div>
			${x.status === 'failed' && html`<${ErrorBox} error=${{ code: 'failed', message: x.failure_message }} />`}
			${x.status === 'degraded' && html`<div class="notice" role="status">Objects changed since this version was made: ${(x.changes || []).map((c) => c.object + ' (' + c.change + ')').join(', ')}</div>`}
			<div class="grid2">
				<div><h2>Samples per class</h2><${ClassCounts} datasetID=${id} version=${x} /></div>
				<div><h2>Details</h2><div class="panel"><${KV} items=${[
					['Layout', x.data_format], ['Objects', number(x.object_count)], ['Bytes', bytes(x.bytes)],
					x.pinned_objects > 0 && ['Pinned', html`<span data-testid="pinned">${number(x.pinned_objects)} by version id, ${pinsKept(x)}</span>`],
					['Split', Object.entries(x.per_usage || {}).map(([k, n]) => `${k || 'none'} ${n}`).join(', ') || 'none'],
					x.parent_version_id && ['Parent', x.parent_version_id], ['From the draft', number(x.draft_labels || 0)],
					['Created', `${time(x.create_time)}${x.created_by ? ' by ' + x.created_by : ''}`], ['Published', time(x.publish_time)],
					['Manifest', html`<a href=${dsPath(id, 'versions', x.version_id, 'manifest')} download=${x.version_name + '.manifest'}>download</a>`],
				]} /></div></div>
			</div>
			<h2>Validation report</h2>
			<${Findings} datasetID=${id} version=${x.version_name} findings=${x.findings} empty="Validation found nothing." />
			${(x.errors + x.warnings) > (x.findings || []).length && html`<p class="muted">${number(x.errors + x.warnings)} findings in all; the version keeps the first ${(x.findings || []).length}.</p>`}
		`}
	</${Page}>`;
}

// ---- diff ----

function DiffPage({ route, id }) {
	const from = route.query.get('from') || '';
	const to = route.query.get('to') || '';
	const ds = useLoad(() => get(dsPath(id)), [id]);
	const vs = useLoad(() => get(dsPath(id, 'versions'), { limit: 100 }), [id]);
	const diff = useLoad(() => (from && to ? get(dsPath(id, 'diff'), { from, to }) : Promise.resolve(null)), [id, from, to]);
	const [f, setF] = useFollow(from);
	const [t, setT] = useFollow(to);
	const names = ((vs.data && vs.data.items) || []).filter(published).map((v) => v.version_name);
	const x = diff.data;
	const classes = x ? Object.entries(x.per_class || {}).map(([c, n]) => ({ c, ...n })) : [];
	return html`<${Page} name="dataset-diff" title="Compare versions" state=${pageState(ds, vs, diff)} error=${ds.error || vs.error || diff.error}>
		<${Crumbs} d=${ds.data} id=${id} here="diff" />
		<form class="toolbar" onSubmit=${(e) => { e.preventDefault(); setQuery({ from: f, to: t }); }} aria-label="versions to compare">
			<label for="diff-from">From</label><select id="diff-from" value=${f} onChange=${(e) => setF(e.target.value)}><option value="">–</option>${names.map((n) => html`<option value=${n}>${n}</option>`)}</select>
			<label for="diff-to">to</label><select id="diff-to" value=${t} onChange=${(e) => setT(e.target.value)}><option value="">–</option>${names.map((n) => html`<option value=${n}>${n}</option>`)}</select>
			<button type="submit" disabled=${!f || !t}>Compare</button>
		</form>
		${x && html`<div class="ds-diff" data-from=${x.from} data-to=${x.to}>
			<div class="cards">
				${[['Added', x.added], ['Removed', x.removed], ['Changed', x.changed], ['Relabelled', x.relabeled]].map(([k, n]) => html`<div class="card"><div class="label">${k}</div><div class="big" data-diff=${k.toLowerCase()}>${number(n)}</div></div>`)}
			</div>
			<h2>Per class</h2>
			<${Table} label="per class" rows=${classes} empty="No class changed." columns=${[
				{ label: 'Class', className: 'name', render: (r) => html`<span data-class=${r.c}>${r.c}</span>` },
				{ label: from, className: 'right', render: (r) => number(r.before) },
				{ label: to, className: 'right', render: (r) => number(r.after) },
				{ label: 'Added', className: 'right', render: (r) => number(r.added) },
				{ label: 'Removed', className: 'right', render: (r) => number(r.removed) },
			]} />
			<h2>Samples</h2>
			<${Table} label="changed samples" rows=${x.changes || []} empty="No sample changed." columns=${[
				{ label: 'Object', className: 'name', render: (c) => c.change === 'removed' ? c.object : html`<a href=${sampleHref(id, c.object, to)}>${c.object}</a>` },
				{ label: 'Change', render: (c) => html`<${Badge} status="info" text=${c.change} />` },
				{ label: 'Before', render: (c) => (c.before || []).join(', ') || '–' },
				{ label: 'After', render: (c) => (c.after || []).join(', ') || '–' },
			]} />
			${x.truncated && html`<p class="muted">The list is cut short; the counts cover every sample.</p>`}
		</div>`}
	</${Page}>`;
}

// sampleHref opens a sample given by its obs:// source or its key.
function sampleHref(id, object, version) {
	const q = new URLSearchParams({ key: object });
	if (version) q.set('version', version);
	return href('datasets', id, 'sample') + '?' + q.toString();
}

// ---- validation of the source as it is now ----

function ValidatePage({ id }) {
	const ds = useLoad(() => get(dsPath(id)), [id]);
	const [res, setRes] = useState(null);
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState(null);
	const [strict, setStrict] = useState(false);
	const run = async () => {
		setBusy(true); setError(null);
		try { setRes(await post(dsPath(id, 'validate'), { strict })); } catch (e) { setError(e); } finally { setBusy(false); }
	};
	return html`<${Page} name="dataset-validate" title="Validate" state=${pageState(ds)} error=${ds.error}>
		<${Crumbs} d=${ds.data} id=${id} here="validate" />
		<div class="toolbar">
			<button class="primary" onClick=${run} disabled=${busy || !ds.data}>${busy ? 'Validating…' : 'Validate the source now'}</button>
			<label><input type="checkbox" checked=${strict} onChange=${(e) => setStrict(e.target.checked)} /> strict (warnings are errors)</label>
		</div>
		<${ErrorBox} error=${error} />
		${res && html`<div class="ds-validation" data-errors=${res.errors} data-warnings=${res.warnings}>
			<p>${plural(res.samples, 'sample')} in <code>${res.data_path}</code> (${res.data_format}): ${plural(res.errors, 'error')}, ${plural(res.warnings, 'warning')}, in ${number(res.elapsed_msec)} ms.
			Objects that are not samples of the current version open without an image.</p>
			<${Findings} datasetID=${id} findings=${res.findings} empty="Validation found nothing." />
		</div>`}
	</${Page}>`;
}

// ---- one sample ----

function SamplePage({ route, id }) {
	const key = route.query.get('key') || '';
	const version = route.query.get('version') || '';
	const ds = useLoad(() => get(dsPath(id)), [id]);
	const smp = useLoad(() => get(dsPath(id, 'samples', key), { version }), [id, key, version]);
	const v = useLoad(() => (version ? get(dsPath(id, 'versions', version), { check: false }) : Promise.resolve(null)), [id, version]);
	const s = smp.data;
	const findings = ((v.data && v.data.findings) || []).filter((f) => f.object === key);
	return html`<${Page} name="dataset-sample" title=${key || 'Sample'} state=${pageState(ds, smp, v)} error=${ds.error || v.error}
		actions=${s && html`<a class="button" href=${href('datasets', id, 'label') + '?sample=' + encodeURIComponent(s.sample_id)}>Label this sample</a>`}>
		<${Crumbs} d=${ds.data} id=${id} here=${version ? version + ' / ' + key : key} />
		${smp.error && html`<${ErrorBox} error=${smp.error} />`}
		${s && html`<div class="ds-sample grid2" data-sample-key=${s.key}>
			<${SampleImage} className="ds-large" src=${imageURL(id, s.sample_id, version)} alt=${s.key} boxes=${s.annotations.boxes}
				proposal=${s.proposal && s.proposal.boxes} />
			<div class="panel"><${KV} items=${[
				['Key', s.key], ['Source', html`<code>${s.source}</code>`], ['Usage', s.usage],
				['Labels', labelsOf(s.annotations).join(', ') || 'none'], ['Label from', s.label_source || '–'], ['Labelled by', s.labeled_by],
				s.proposal && ['Proposal', `${labelsOf(s.proposal).join(', ')} (${Math.round(s.proposal.confidence * 100)}%)`],
			]} /></div>
		</div>`}
		${findings.length > 0 && html`<h2>Findings about this object</h2><${Findings} datasetID=${id} version=${version} findings=${findings} />`}
	</${Page}>`;
}

// pinsKept says what lifecycle rules may do to a version's pinned objects
// (as the CLI's dataset get does).
function pinsKept(v) {
	const held = v.held_objects || 0;
	if (held >= v.pinned_objects) return 'kept from lifecycle expiry';
	if (held === 0) return "not kept from lifecycle expiry";
	return `${number(held)} kept from lifecycle expiry`;
}
