// Models: the registry's versions (paged on the server, filtered by name),
// a version's page with its lineage (job, parameters, dataset versions,
// metrics), its package's config.json as text, its files, and a deploy
// form that creates an online service (POST /api/v1/services).
import { html, useState } from '../js/lib.js';
import { get, post } from '../js/api.js';
import { Page, useLoad, pageState, Badge, Table, Pager, KV, Field, ErrorBox } from '../js/ui.js';
import { href, navigate, setQuery } from '../js/router.js';
import { bytes, time, number } from '../js/format.js';

const LIMIT = 20;

function List({ route }) {
	const offset = Number(route.query.get('offset') || 0);
	const name = route.query.get('name') || '';
	const models = useLoad(() => get('/api/v1/models', { name, offset, limit: LIMIT }), [name, offset]);
	return html`<${Page} name="models" title="Models" state=${pageState(models)} error=${models.error}>
		<div class="toolbar"><label class="inline">Name contains <input type="search" value=${name} onChange=${(e) => setQuery({ name: e.target.value, offset: '' })} /></label></div>
		<${Table} label="model versions" rows=${models.data && models.data.items} rowKey=${(m) => m.model_id}
			empty="No models yet: import one with atelier model import, or from a training job's output." columns=${[
			{ label: 'Name', className: 'name', render: (m) => html`<a href=${href('models', m.model_id)}>${m.model_name}</a>` },
			{ label: 'Version', key: 'model_version' },
			{ label: 'Status', render: (m) => html`<${Badge} status=${m.model_status} />` },
			{ label: 'Type', key: 'model_type' },
			{ label: 'Runtime', key: 'runtime' },
			{ label: 'From', render: (m) => (m.source_job_id ? html`<a href=${href('jobs', m.source_job_id)}>job</a>` : 'OBS') },
			{ label: 'Created', render: (m) => time(m.create_time) },
		]} />
		<${Pager} total=${models.data && models.data.total} offset=${offset} limit=${LIMIT} onPage=${(o) => setQuery({ offset: o || '' })} />
	</${Page}>`;
}

function Lineage({ l, m }) {
	if (!l) return html`<p class="muted">Imported from <code>${m.source_location}</code>: no training job recorded.</p>`;
	const metrics = Object.entries(l.metrics || {});
	return html`<div class="lineage">
		<${KV} items=${[
			['Training job', l.job_id ? html`<a href=${href('jobs', l.job_id)}>${l.job_name || l.job_id}</a>` : '–'],
			['Engine', l.engine],
		]} />
		<h3>Parameters</h3>
		<${Table} label="parameters" rows=${l.parameters || []} empty="No parameters." columns=${[
			{ label: 'Name', key: 'name' }, { label: 'Value', className: 'name', key: 'value' }]} />
		<h3>Inputs</h3>
		<${Table} label="inputs" rows=${l.inputs || []} empty="No inputs." columns=${[
			{ label: 'Name', key: 'name' },
			{ label: 'Dataset version', render: (i) => (i.dataset ? html`<a href=${href('datasets', i.dataset.id)}>${i.dataset.name || i.dataset.id} ${i.dataset.version || ''}</a>` : '–') },
			{ label: 'Location', className: 'name', render: (i) => html`<code>${i.obs_url}</code>` },
			{ label: 'Objects', key: 'objects' },
		]} />
		<h3>Metrics</h3>
		${metrics.length ? html`<${KV} items=${metrics.map(([k, v]) => [k, number(v)])} />` : html`<p class="muted">No metrics.</p>`}
	</div>`;
}

function DeployForm({ m }) {
	const flavors = useLoad(() => get('/api/v1/training-job-flavors'));
	const [f, setF] = useState({ name: '', description: '', flavor: '', count: '1', auth: 'token' });
	const [error, setError] = useState(null);
	const [busy, setBusy] = useState(false);
	const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
	const submit = async (e) => {
		e.preventDefault();
		setBusy(true); setError(null);
		try {
			const s = await post('/api/v1/services', { service_name: f.name, description: f.description || undefined, auth: f.auth,
				config: [{ model_id: m.model_id, specification: f.flavor || undefined, instance_count: Number(f.count), weight: 100 }] });
			navigate(href('services', s.service_id));
		} catch (err) { setError(err); } finally { setBusy(false); }
	};
	return html`<form class="panel" onSubmit=${submit} aria-label="deploy">
		<h2>Deploy as an online service</h2>
		<div class="grid2">
			<${Field} label="Service name" id="dep-name"><input id="dep-name" required value=${f.name} onInput=${set('name')} autocomplete="off" /></${Field}>
			<${Field} label="Description" id="dep-desc"><input id="dep-desc" value=${f.description} onInput=${set('description')} autocomplete="off" /></${Field}>
			<${Field} label="Flavor" id="dep-flavor"><select id="dep-flavor" value=${f.flavor} onChange=${set('flavor')}>
				<option value="">default</option>
				${((flavors.data && flavors.data.items) || []).map((x) => html`<option value=${x.flavor_id}>${x.flavor_id}</option>`)}
			</select></${Field}>
			<${Field} label="Instances" id="dep-count"><input id="dep-count" type="number" min="1" max="128" value=${f.count} onInput=${set('count')} /></${Field}>
			<${Field} label="Authentication" id="dep-auth" help="how programs call it at /v1/infers/…"><select id="dep-auth" value=${f.auth} onChange=${set('auth')}>
				<option value="token">token (X-Auth-Token)</option><option value="appcode">app code (X-Apig-AppCode)</option><option value="none">none</option>
			</select></${Field}>
		</div>
		<${ErrorBox} error=${error} />
		<button type="submit" class="primary" disabled=${busy || m.model_status !== 'published'}>Deploy</button>
	</form>`;
}

function Detail({ id }) {
	const model = useLoad(() => get(`/api/v1/models/${encodeURIComponent(id)}`), [id]);
	const m = model.data;
	const versions = useLoad(() => (m ? get('/api/v1/models', { name: m.model_name, limit: 50 }) : Promise.resolve(undefined)), [m && m.model_name]);
	return html`<${Page} name="model" title=${m ? `${m.model_name} ${m.model_version}` : 'Model'} state=${pageState(model)} error=${model.error}>
		<p><a href=${href('models')}>← All models</a></p>
		${m && html`
		<section class="panel" aria-label="version">
			<${KV} items=${[
				['Name', html`<span data-testid="model-name">${m.model_name}</span>`], ['Version', m.model_version],
				['Status', html`<${Badge} status=${m.model_status} />`], ['Type', m.model_type],
				['Runtime', m.runtime + (m.runtime_request ? ` (asked: ${m.runtime_request})` : '')],
				['Source', html`<code>${m.source_location}</code>`], ['Stored at', html`<code>${m.location}</code>`],
				['Created', time(m.create_time)], m.description && ['Description', m.description],
				['Deployed in', (m.deployed_in || []).length ? html`${m.deployed_in.map((s) => html`<a href=${href('services', s)}>${s}</a> `)}` : 'no service'],
			]} />
			${(m.warnings || []).map((w) => html`<p class="notice">${w}</p>`)}
		</section>
		<h2>Versions</h2>
		<${Table} label="versions" rows=${versions.data && versions.data.items.filter((v) => v.model_name === m.model_name)} rowKey=${(v) => v.model_id} columns=${[
			{ label: 'Version', render: (v) => (v.model_id === m.model_id ? html`<strong>${v.model_version}</strong>` : html`<a href=${href('models', v.model_id)}>${v.model_version}</a>`) },
			{ label: 'Status', render: (v) => html`<${Badge} status=${v.model_status} />` },
			{ label: 'Created', render: (v) => time(v.create_time) },
		]} />
		<h2>Lineage</h2>
		<section class="panel" aria-label="lineage" data-testid="lineage"><${Lineage} l=${m.lineage} m=${m} /></section>
		<h2>config.json</h2>
		<pre class="config-json" data-testid="config-json" tabindex="0" aria-label="config.json">${JSON.stringify(m.config || {}, null, 2)}</pre>
		<h2>Files</h2>
		<${Table} label="files" rows=${m.files || []} columns=${[
			{ label: 'Path', className: 'name', render: (f) => html`<code>${f.path}</code>` },
			{ label: 'Size', render: (f) => bytes(f.size) },
			{ label: 'ETag', render: (f) => html`<code>${f.etag}</code>` },
		]} />
		<${DeployForm} m=${m} />`}
	</${Page}>`;
}

export default function Models({ route }) {
	const id = route.parts[1];
	return id ? html`<${Detail} id=${id} />` : html`<${List} route=${route} />`;
}
