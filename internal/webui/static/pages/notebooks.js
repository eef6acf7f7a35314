// Notebooks: list (paged on the server, filtered by name), create,
// start/stop, open (a single-use login link on the notebook listener, in a
// new tab), and a notebook's page: why it is active or idle, its lease,
// volume use, why it stopped, and its events.
import { html, useState } from '../js/lib.js';
import { get, post, request } from '../js/api.js';
import { Page, useLoad, usePoll, pageState, Badge, Table, Pager, KV, Field, ErrorBox, Live, Events } from '../js/ui.js';
import { href, navigate, setQuery } from '../js/router.js';
import { bytes, duration, time, ago } from '../js/format.js';

const LIMIT = 20;
const active = (s) => ['CREATING', 'STARTING', 'RUNNING', 'STOPPING'].includes(s);

// openNotebook asks for a login link and opens it in a new tab: the link
// is single-use and the notebook listens on another origin, so the
// console never embeds it and the new tab gets no opener.
async function openNotebook(id) {
	const l = await post(`/api/v1/notebooks/${encodeURIComponent(id)}/url`);
	window.open(l.url, '_blank', 'noopener');
	return l;
}

function Actions({ nb, onDone, compact }) {
	const [busy, setBusy] = useState('');
	const [error, setError] = useState(null);
	const act = (what, fn) => async () => {
		setBusy(what); setError(null);
		try { await fn(); if (onDone) onDone(); } catch (e) { setError(e); } finally { setBusy(''); }
	};
	const id = encodeURIComponent(nb.id);
	return html`<span class="nb-actions">
		${nb.status === 'RUNNING' && html`<button class="primary" data-action="open" disabled=${!!busy} onClick=${act('open', () => openNotebook(nb.id))}
			aria-label=${'Open ' + nb.name + ' in Jupyter (new tab)'}>Open</button>`}
		${active(nb.status) && nb.status !== 'STOPPING' && html`<button data-action="stop" disabled=${!!busy} onClick=${act('stop', () => post(`/api/v1/notebooks/${id}/stop`))}
			aria-label=${'Stop ' + nb.name}>Stop</button>`}
		${!active(nb.status) && nb.status !== 'DELETING' && html`<button data-action="start" disabled=${!!busy} onClick=${act('start', () => post(`/api/v1/notebooks/${id}/start`))}
			aria-label=${'Start ' + nb.name}>Start</button>`}
		${busy && html`<span class="muted"> ${busy}…</span>`}
		${error && (compact ? html`<span class="field-error" role="alert">${error.code}: ${error.message}</span>` : html`<${ErrorBox} error=${error} />`)}
	</span>`;
}

function activityText(nb) {
	if (nb.activity) return `${nb.activity.state}: ${nb.activity.reason}`;
	if (nb.waiting) return nb.waiting;
	if (nb.status === 'STOPPED' && nb.stop_reason) return `stopped (${nb.stop_reason})`;
	if (nb.fail_reason) return nb.fail_reason;
	return '';
}

function CreateForm({ onCreated, onCancel }) {
	const flavors = useLoad(() => get('/api/v1/training-job-flavors'));
	const engines = useLoad(() => get('/api/v1/training-job-engines'));
	const [f, setF] = useState({ name: '', description: '', flavor: '', engine: '', volume: '5GiB', idle: '' });
	const [error, setError] = useState(null);
	const [busy, setBusy] = useState(false);
	const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
	const submit = async (e) => {
		e.preventDefault();
		setBusy(true); setError(null);
		const fl = f.flavor || (flavors.data && flavors.data.items[0] && flavors.data.items[0].flavor_id) || '';
		try {
			const nb = await post('/api/v1/notebooks', { name: f.name, description: f.description || undefined, flavor: fl, engine: f.engine || undefined,
				volume: f.volume ? { capacity: f.volume } : undefined, idle_stop: f.idle || undefined });
			onCreated(nb);
		} catch (err) { setError(err); } finally { setBusy(false); }
	};
	return html`<form class="panel nb-create" onSubmit=${submit} aria-label="create a notebook">
		<h2>New notebook</h2>
		<div class="grid2">
			<${Field} label="Name" id="nb-name"><input id="nb-name" required value=${f.name} onInput=${set('name')} autocomplete="off" /></${Field}>
			<${Field} label="Description" id="nb-desc"><input id="nb-desc" value=${f.description} onInput=${set('description')} autocomplete="off" /></${Field}>
			<${Field} label="Flavor" id="nb-flavor"><select id="nb-flavor" value=${f.flavor} onChange=${set('flavor')}>
				${((flavors.data && flavors.data.items) || []).map((x) => html`<option value=${x.flavor_id}>${x.flavor_id} (${x.cpu} CPU, ${bytes(x.memory)}${x.gpu ? `, ${x.gpu} GPU` : ''})</option>`)}
			</select></${Field}>
			<${Field} label="Engine" id="nb-engine" help="empty: the server's default"><select id="nb-engine" value=${f.engine} onChange=${set('engine')}>
				<option value="">default</option>
				${((engines.data && engines.data.items) || []).map((x) => html`<option value=${x.name}>${x.name}</option>`)}
			</select></${Field}>
			<${Field} label="Volume size" id="nb-volume" help="e.g. 5GiB"><input id="nb-volume" value=${f.volume} onInput=${set('volume')} /></${Field}>
			<${Field} label="Idle stop" id="nb-idle" help="e.g. 60m; empty: the server's default; off: never"><input id="nb-idle" value=${f.idle} onInput=${set('idle')} /></${Field}>
		</div>
		<${ErrorBox} error=${error} />
		<div class="toolbar"><button type="submit" class="primary" disabled=${busy}>Create</button><button type="button" onClick=${onCancel}>Cancel</button></div>
	</form>`;
}

function List({ route }) {
	const offset = Number(route.query.get('offset') || 0);
	const name = route.query.get('name') || '';
	const [creating, setCreating] = useState(false);
	const nbs = useLoad(() => get('/api/v1/notebooks', { name, offset, limit: LIMIT }), [name, offset]);
	usePoll(() => nbs.reload(), 4000, [name, offset]);
	const items = nbs.data && nbs.data.items;
	return html`<${Page} name="notebooks" title="Notebooks" state=${pageState(nbs)} error=${nbs.error}
		actions=${html`<button class="primary" onClick=${() => setCreating(true)} disabled=${creating}>New notebook</button>`}>
		${creating && html`<${CreateForm} onCancel=${() => setCreating(false)} onCreated=${(nb) => navigate(href('notebooks', nb.id))} />`}
		<div class="toolbar"><label class="inline">Name contains <input type="search" value=${name} onChange=${(e) => setQuery({ name: e.target.value, offset: '' })} /></label></div>
		<${Table} label="notebooks" rows=${items} rowKey=${(n) => n.id} empty="No notebooks yet: create one to work in Jupyter next to your data." columns=${[
			{ label: 'Name', className: 'name', render: (n) => html`<a href=${href('notebooks', n.id)}>${n.name}</a>` },
			{ label: 'Status', render: (n) => html`<span data-status=${n.status}><${Badge} status=${n.status} /></span>` },
			{ label: 'Flavor', key: 'flavor' },
			{ label: 'Activity', render: (n) => html`<span class="nb-activity" data-activity=${n.activity ? n.activity.state : ''}>${activityText(n)}</span>` },
			{ label: 'Idle stop', render: (n) => (n.lease.idle_stop_at ? ago(n.lease.idle_stop_at) : n.lease.idle_stop ? duration(n.lease.idle_stop) + ' idle' : 'never') },
			{ label: '', render: (n) => html`<${Actions} nb=${n} onDone=${nbs.reload} compact=${true} />` },
		]} />
		<${Pager} total=${nbs.data && nbs.data.total} offset=${offset} limit=${LIMIT} onPage=${(o) => setQuery({ offset: o || '' })} />
	</${Page}>`;
}

function Detail({ id }) {
	const nb = useLoad(() => get(`/api/v1/notebooks/${encodeURIComponent(id)}`), [id]);
	const [evOff, setEvOff] = useState(0);
	const evs = useLoad(() => get(`/api/v1/notebooks/${encodeURIComponent(id)}/events`, { offset: evOff, limit: 20 }), [id, evOff]);
	usePoll(() => { nb.reload(); evs.reload(); }, 3000, [id, evOff]);
	const n = nb.data;
	const [extendMsg, setExtendMsg] = useState('');
	const extend = async () => {
		try {
			await request('PATCH', `/api/v1/notebooks/${encodeURIComponent(id)}/lease`, { for: '1h' });
			setExtendMsg('Kept from an idle stop for one more hour.'); nb.reload();
		} catch (e) { setExtendMsg(`${e.code}: ${e.message}`); }
	};
	const a = n && n.activity;
	return html`<${Page} name="notebook" title=${n ? n.name : 'Notebook'} state=${pageState(nb)} error=${nb.error}
		actions=${n && html`<${Actions} nb=${n} onDone=${() => { nb.reload(); evs.reload(); }} />`}>
		<p><a href=${href('notebooks')}>← All notebooks</a></p>
		${n && html`<div class="grid2">
			<section class="panel" aria-label="status">
				<h2>Status</h2>
				<${KV} items=${[
					['Status', html`<span data-status=${n.status}><${Badge} status=${n.status} /></span>`],
					n.description && ['Description', html`<span data-testid="description">${n.description}</span>`],
					['Engine', n.engine], ['Flavor', n.flavor],
					n.waiting && ['Waiting for', n.waiting],
					n.start_at && ['Started', time(n.start_at)],
					n.stop_at && ['Stopped', time(n.stop_at)],
					n.stop_reason && ['Stop reason', html`<span data-testid="stop-reason">${n.stop_reason}</span>`],
					n.fail_reason && ['Failure', n.fail_reason],
					['Address', html`<code>${n.url}</code>`],
				]} />
			</section>
			<section class="panel" aria-label="activity">
				<h2>Activity</h2>
				${a ? html`<p class="nb-why" data-activity=${a.state}><${Badge} status=${a.state === 'idle' ? 'IDLE' : 'ACTIVE'} text=${a.state} /> ${a.reason}</p>
					<${KV} items=${[['Last active', a.last_active ? `${time(a.last_active)} (${ago(a.last_active)})` : '–'], ['CPU', `${a.cpu.toFixed(2)} cores`],
						['Kernels', (a.kernels || []).length ? a.kernels.map((k) => `${k.name || k.id.slice(0, 8)}: ${k.execution_state}`).join(', ') : 'none']]} />`
					: html`<p class="muted" data-activity="none">${n.status === 'RUNNING' ? 'No report yet.' : 'Not running: no activity.'}</p>`}
			</section>
			<section class="panel" aria-label="lease">
				<h2>Lease</h2>
				<${KV} items=${[
					['Idle stop', n.lease.idle_stop ? `after ${duration(n.lease.idle_stop)} idle` : 'never'],
					n.lease.idle_stop_at && ['Stops if idle', `${time(n.lease.idle_stop_at)} (${ago(n.lease.idle_stop_at)})`],
					n.lease.max_runtime && ['Max runtime', duration(n.lease.max_runtime)],
					n.lease.max_runtime_at && ['Stops at', time(n.lease.max_runtime_at)],
					n.lease.extended_until && ['Extended until', time(n.lease.extended_until)],
				]} />
				${n.status === 'RUNNING' && html`<p><button onClick=${extend}>Keep it one more hour</button></p>`}
				${extendMsg && html`<${Live} text=${extendMsg} />`}
			</section>
			<section class="panel" aria-label="volume">
				<h2>Volume</h2>
				<${KV} items=${[['Mounted at', html`<code>${n.volume.mount_path}</code>`], ['Used', `${bytes(n.volume.used || 0)} of ${bytes(n.volume.capacity)}`],
					['Limit', n.volume.limit || '–']]} />
				<progress max=${n.volume.capacity} value=${n.volume.used || 0} aria-label="volume used"></progress>
			</section>
		</div>
		<h2>Events</h2>
		<${Events} page=${evs.data} offset=${evOff} onPage=${setEvOff} />`}
	</${Page}>`;
}

export default function Notebooks({ route }) {
	const id = route.parts[1];
	return id ? html`<${Detail} id=${id} />` : html`<${List} route=${route} />`;
}
