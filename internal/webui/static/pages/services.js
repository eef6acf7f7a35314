// Online services: the list (paged and filtered on the server), and a
// service's page: status and instances, QPS / latency percentiles / errors
// over time (GET …/stats series), the canary weights and autoscale
// editors (PUT /api/v1/services/{id}, the API's errors shown as they
// come), start/stop, events, and "try it" — an image or JSON sent through
// POST …/predict (the console's session stands in for the service's
// token; the answer is shown as text, never as HTML).
import { html, useState, useMemo } from '../js/lib.js';
import { get, put, request } from '../js/api.js';
import { Page, useLoad, usePoll, pageState, Badge, Table, Pager, KV, Field, ErrorBox, Live, Events } from '../js/ui.js';
import { href, setQuery } from '../js/router.js';
import { time, ago, number, bytes } from '../js/format.js';
import { Chart } from '../js/chart.js';

const LIMIT = 20;
const enc = encodeURIComponent;

function ready(s) {
	const ins = s.instances || [];
	return `${ins.filter((i) => i.phase === 'Ready').length} / ${ins.length}`;
}

function List({ route }) {
	const offset = Number(route.query.get('offset') || 0);
	const name = route.query.get('name') || '';
	const status = route.query.get('status') || '';
	const svcs = useLoad(() => get('/api/v1/services', { name, status, offset, limit: LIMIT }), [name, status, offset]);
	usePoll(() => svcs.reload(), 5000, [name, status, offset]);
	return html`<${Page} name="services" title="Services" state=${pageState(svcs)} error=${svcs.error}>
		<div class="toolbar">
			<label class="inline">Name contains <input type="search" value=${name} onChange=${(e) => setQuery({ name: e.target.value, offset: '' })} /></label>
			<label class="inline">Status <select value=${status} onChange=${(e) => setQuery({ status: e.target.value, offset: '' })}>
				<option value="">any</option>
				${['running', 'deploying', 'concerning', 'failed', 'stopped', 'pending'].map((s) => html`<option value=${s}>${s}</option>`)}
			</select></label>
		</div>
		<${Table} label="services" rows=${svcs.data && svcs.data.items} rowKey=${(s) => s.service_id}
			empty="No services: deploy a model version from its page." columns=${[
			{ label: 'Name', className: 'name', render: (s) => html`<a href=${href('services', s.service_id)}>${s.service_name}</a>` },
			{ label: 'Status', render: (s) => html`<span data-status=${s.status}><${Badge} status=${s.status} /></span>` },
			{ label: 'Ready', render: ready },
			{ label: 'Versions', render: (s) => s.config.map((c) => `${c.model_name || c.model_id} ${c.model_version || ''} (${c.weight}%)`).join(', ') },
			{ label: 'Requests', render: (s) => number(s.invocation_times) },
			{ label: 'Failed', render: (s) => number(s.failed_times) },
			{ label: 'Updated', render: (s) => ago(s.update_time) },
		]} />
		<${Pager} total=${svcs.data && svcs.data.total} offset=${offset} limit=${LIMIT} onPage=${(o) => setQuery({ offset: o || '' })} />
	</${Page}>`;
}

// Charts of the stats series: QPS, latency percentiles, errors.
function StatsCharts({ st }) {
	const raw = st.series || [];
	// Before the first request there were none: a zero step in front lets
	// a series of one step draw as a line.
	const step = (st.step_seconds || 10) * 1000;
	const series = raw.length === 1 ? [{ time: raw[0].time - step, qps: 0, errors: 0, requests: 0 }, ...raw] : raw;
	const data = useMemo(() => {
		const xs = series.map((p) => p.time / 1000);
		return {
			qps: [xs, series.map((p) => p.qps)],
			lat: [xs, series.map((p) => (p.requests ? p.p50_ms : null)), series.map((p) => (p.requests ? p.p90_ms : null)),
				series.map((p) => (p.requests ? p.p95_ms : null)), series.map((p) => (p.requests ? p.p99_ms : null))],
			err: [xs, series.map((p) => p.errors), series.map((p) => p.requests)],
		};
	}, [st]);
	return html`<div class="cards" aria-label="figures now">
			<div class="card"><div class="label">QPS (last minute)</div><div class="big" data-testid="qps">${number(st.qps, 3)}</div></div>
			<div class="card"><div class="label">Latency P50 / P90 / P99</div><div class="big">${number(st.p50_ms, 3)}<span class="unit"> ms</span></div>
				<div class="label">${number(st.p90_ms, 3)} ms / ${number(st.p99_ms, 3)} ms</div></div>
			<div class="card"><div class="label">Requests / errors</div><div class="big" data-testid="requests">${number(st.requests)}</div>
				<div class="label">${number(st.errors)} errors · ${st.in_flight} in flight</div></div>
		</div>
		${raw.length === 0 ? html`<p class="muted" data-testid="no-series">No request in the last hour (figures start over when the server restarts).</p>` : html`
		<div class="grid3 svc-charts" data-points=${raw.length}>
			<${Chart} title="Requests per second" data=${data.qps} series=${[{ label: 'QPS' }]} xTime=${true} height=${200} />
			<${Chart} title="Latency (ms)" data=${data.lat} series=${[{ label: 'P50' }, { label: 'P90' }, { label: 'P95' }, { label: 'P99' }]} xTime=${true} height=${200} />
			<${Chart} title=${`Errors per ${st.step_seconds || 10} s`} data=${data.err} series=${[{ label: 'errors', stroke: '#b3261e' }, { label: 'requests', stroke: '#24476b' }]} xTime=${true} height=${200} />
		</div>`}`;
}

// Weights is the canary editor: the weight and instance count of each
// model version, versions added from the same model's other versions, or
// removed. The server validates (weights 0–100 summing to 100, …).
// Weights and Autoscale are remounted from the service after each save
// (their key is the saved configuration); the message of a save lives in
// Detail, so it outlives the remount.
function Weights({ svc, onSaved, saved, onEdit }) {
	const first = svc.config[0];
	const others = useLoad(() => get('/api/v1/models', { name: first.model_name, limit: 50 }), [first.model_name]);
	const [rows, setRows] = useState(() => svc.config.map((c) => ({ model_id: c.model_id, label: `${c.model_name || c.model_id} ${c.model_version || ''}`, weight: String(c.weight), count: String(c.instance_count) })));
	const [add, setAdd] = useState('');
	const [error, setError] = useState(null);
	const [busy, setBusy] = useState(false);
	const setRow = (i, k) => (e) => { const r = rows.slice(); r[i] = { ...r[i], [k]: e.target.value }; setRows(r); onEdit(); };
	const candidates = ((others.data && others.data.items) || []).filter((m) => m.model_name === first.model_name && m.model_status === 'published' && !rows.some((r) => r.model_id === m.model_id));
	const sum = rows.reduce((a, r) => a + (Number(r.weight) || 0), 0);
	const save = async (e) => {
		e.preventDefault();
		setBusy(true); setError(null); onEdit();
		try {
			await put(`/api/v1/services/${enc(svc.service_id)}`, { config: rows.map((r) => ({ model_id: r.model_id, weight: Number(r.weight), instance_count: Number(r.count) || 0 })) });
			onSaved('Saved: the gateway splits traffic by the new weights.');
		} catch (err) { setError(err); } finally { setBusy(false); }
	};
	return html`<form class="panel svc-weights" onSubmit=${save} aria-label="canary weights" data-saved=${saved ? 'true' : null}>
		<h2>Versions and weights</h2>
		<table class="data"><thead><tr><th scope="col">Version</th><th scope="col">Weight %</th><th scope="col">Instances</th><th scope="col"></th></tr></thead>
		<tbody>${rows.map((r, i) => html`<tr key=${r.model_id} data-model=${r.model_id}>
			<td class="name">${r.label}</td>
			<td><input class="num" type="number" min="0" max="100" value=${r.weight} onInput=${setRow(i, 'weight')} aria-label=${'weight of ' + r.label} /></td>
			<td><input class="num" type="number" min="0" max="128" value=${r.count} onInput=${setRow(i, 'count')} aria-label=${'instances of ' + r.label} /></td>
			<td>${rows.length > 1 && html`<button type="button" class="link" onClick=${() => setRows(rows.filter((_, j) => j !== i))} aria-label=${'remove ' + r.label}>Remove</button>`}</td>
		</tr>`)}</tbody></table>
		<p class=${sum === 100 ? 'muted' : 'field-error'}>Weights sum to ${sum}%${sum === 100 ? '' : ' (the server wants 100)'}.</p>
		${candidates.length > 0 && html`<div class="toolbar">
			<label class="inline">Add version <select value=${add} onChange=${(e) => setAdd(e.target.value)}>
				<option value="">choose…</option>
				${candidates.map((m) => html`<option value=${m.model_id}>${m.model_name} ${m.model_version}</option>`)}
			</select></label>
			<button type="button" disabled=${!add} onClick=${() => { const m = candidates.find((x) => x.model_id === add); setRows([...rows, { model_id: m.model_id, label: `${m.model_name} ${m.model_version}`, weight: '0', count: '1' }]); setAdd(''); }}>Add</button>
		</div>`}
		<${ErrorBox} error=${error} />
		${saved && html`<${Live} text=${saved} />`}
		<button type="submit" class="primary" disabled=${busy}>Save weights</button>
	</form>`;
}

function Autoscale({ svc, onSaved, saved, onEdit }) {
	const a = svc.autoscale || {};
	const [f, setF] = useState({ min: String(a.min ?? ''), max: String(a.max ?? ''), target_inflight: String(a.target_inflight ?? ''), target_qps: String(a.target_qps ?? ''), cooldown_seconds: String(a.cooldown_seconds ?? '') });
	const [error, setError] = useState(null);
	const set = (k) => (e) => { setF({ ...f, [k]: e.target.value }); onEdit(); };
	const send = async (body, done) => {
		setError(null); onEdit();
		try { await put(`/api/v1/services/${enc(svc.service_id)}`, { autoscale: body }); onSaved(done); } catch (err) { setError(err); }
	};
	const n = (v) => (v === '' ? undefined : Number(v));
	const save = (e) => {
		e.preventDefault();
		send({ min: n(f.min) ?? 0, max: n(f.max) ?? 0, target_inflight: n(f.target_inflight), target_qps: n(f.target_qps), cooldown_seconds: n(f.cooldown_seconds) },
			'Saved: the autoscaler follows the new policy.');
	};
	return html`<form class="panel svc-autoscale" onSubmit=${save} aria-label="autoscaling" data-saved=${saved ? 'true' : null}>
		<h2>Autoscaling</h2>
		<p class="muted">${svc.autoscale ? `On: ${a.min}–${a.max} instances per version.` : 'Off: instance counts are fixed.'} Min 0 scales to zero when idle.</p>
		<div class="grid3">
			<${Field} label="Min instances" id="as-min"><input id="as-min" type="number" min="0" value=${f.min} onInput=${set('min')} /></${Field}>
			<${Field} label="Max instances" id="as-max"><input id="as-max" type="number" min="0" value=${f.max} onInput=${set('max')} /></${Field}>
			<${Field} label="Target in flight per instance" id="as-if" help="default 2"><input id="as-if" type="number" step="any" min="0" value=${f.target_inflight} onInput=${set('target_inflight')} /></${Field}>
			<${Field} label="Target QPS per instance" id="as-qps" help="empty: not used"><input id="as-qps" type="number" step="any" min="0" value=${f.target_qps} onInput=${set('target_qps')} /></${Field}>
			<${Field} label="Cooldown (s)" id="as-cd" help="before scaling down; default 60"><input id="as-cd" type="number" min="0" value=${f.cooldown_seconds} onInput=${set('cooldown_seconds')} /></${Field}>
		</div>
		<${ErrorBox} error=${error} />
		${saved && html`<${Live} text=${saved} />`}
		<div class="toolbar"><button type="submit" class="primary">Save autoscaling</button>
			${svc.autoscale && html`<button type="button" onClick=${() => send({ min: 0, max: 0 }, 'Autoscaling is off.')}>Turn off</button>`}</div>
	</form>`;
}

// pretty is the answer's body as text: JSON indented, anything else as is.
function pretty(res) {
	if (res.body_encoding === 'base64') return `(${res.content_type || 'binary'}, ${res.body.length} base64 characters)\n${res.body}`;
	try { return JSON.stringify(JSON.parse(res.body), null, 2); } catch { return res.body; }
}

function TryIt({ svc, onCalled }) {
	const [mode, setMode] = useState('image');
	const [file, setFile] = useState(null);
	const [field, setField] = useState('images');
	const [json, setJson] = useState('{}');
	const [jsonErr, setJsonErr] = useState('');
	const [res, setRes] = useState(null);
	const [error, setError] = useState(null);
	const [busy, setBusy] = useState(false);
	const send = async (e) => {
		e.preventDefault();
		setError(null); setJsonErr('');
		let body; let headers;
		if (mode === 'image') {
			if (!file) { setError({ code: 'console', message: 'Choose an image first.' }); return; }
			body = new FormData();
			body.append(field || 'images', file, file.name);
		} else {
			try { JSON.parse(json); } catch (err) { setJsonErr('Not JSON: ' + err.message); return; }
			body = json; headers = { 'Content-Type': 'application/json' };
		}
		setBusy(true);
		const t0 = performance.now();
		try {
			const r = await request('POST', `/api/v1/services/${enc(svc.service_id)}/predict`, body, { headers });
			setRes({ ...r, page_ms: performance.now() - t0 });
			onCalled();
		} catch (err) { setRes(null); setError(err); } finally { setBusy(false); }
	};
	return html`<form class="panel svc-try" onSubmit=${send} aria-label="try it">
		<h2>Try it</h2>
		<fieldset class="svc-mode"><legend>Send</legend>
			<label class="inline"><input type="radio" name="mode" value="image" checked=${mode === 'image'} onChange=${() => setMode('image')} /> an image (multipart)</label>
			<label class="inline"><input type="radio" name="mode" value="json" checked=${mode === 'json'} onChange=${() => setMode('json')} /> JSON</label>
		</fieldset>
		${mode === 'image' ? html`<div class="grid2">
			<${Field} label="Image" id="try-file"><input id="try-file" type="file" accept="image/*" onChange=${(e) => setFile(e.target.files[0] || null)} /></${Field}>
			<${Field} label="Form field" id="try-field" help="the handler receives {field: {filename: file}}"><input id="try-field" value=${field} onInput=${(e) => setField(e.target.value)} /></${Field}>
		</div>` : html`<${Field} label="JSON body" id="try-json" error=${jsonErr}><textarea id="try-json" rows="6" value=${json} aria-invalid=${jsonErr ? 'true' : 'false'} onInput=${(e) => setJson(e.target.value)}></textarea></${Field}>`}
		<button type="submit" class="primary" disabled=${busy}>${busy ? 'Sending…' : 'Send'}</button>
		<${ErrorBox} error=${error} />
		${res && html`<div class="svc-answer" data-testid="answer" data-status=${res.status}>
			<${KV} items=${[
				['Status', html`<${Badge} status=${res.status < 400 ? 'OK' : 'ERROR'} text=${String(res.status)} />`],
				['Latency (page)', html`<span data-testid="page-ms">${res.page_ms.toFixed(1)} ms</span>`],
				['Latency (server)', html`<span data-testid="server-ms">${res.latency_ms.toFixed(1)} ms</span>`],
				['Model version', res.model_id], ['Instance', res.instance_id], ['Request id', res.request_id],
				['Content type', res.content_type],
			]} />
			<pre class="svc-body" data-testid="answer-body" tabindex="0" aria-label="answer">${pretty(res)}</pre>
		</div>`}
	</form>`;
}

function Detail({ id }) {
	const svc = useLoad(() => get(`/api/v1/services/${enc(id)}`), [id]);
	const stats = useLoad(() => get(`/api/v1/services/${enc(id)}/stats`), [id]);
	const [evOff, setEvOff] = useState(0);
	const evs = useLoad(() => get(`/api/v1/services/${enc(id)}/events`, { offset: evOff, limit: 20 }), [id, evOff]);
	usePoll(() => { svc.reload(); stats.reload(); evs.reload(); }, 5000, [id, evOff]);
	const [stateErr, setStateErr] = useState(null);
	const s = svc.data;
	// The editors start from the stored configuration and start again when
	// it changes (a save, or another user's on a poll): computed here, not
	// in an effect, which would run after the first paint and wipe what was
	// typed before it.
	const stored = s ? s.config.map((c) => c.model_id + ':' + c.weight + ':' + c.instance_count).join() + '|' + JSON.stringify(s.autoscale || null) : '';
	const [saved, setSaved] = useState({ weights: '', autoscale: '' });
	const reloadAll = () => { svc.reload(); stats.reload(); evs.reload(); };
	const editor = (name) => ({
		saved: saved[name],
		onEdit: () => { if (saved[name]) setSaved((v) => ({ ...v, [name]: '' })); },
		onSaved: (msg) => { setSaved((v) => ({ ...v, [name]: msg })); reloadAll(); },
	});
	const setStatus = async (status) => {
		setStateErr(null);
		try { await put(`/api/v1/services/${enc(id)}`, { status }); reloadAll(); } catch (e) { setStateErr(e); }
	};
	return html`<${Page} name="service" title=${s ? s.service_name : 'Service'} state=${pageState(svc)} error=${svc.error}
		actions=${s && html`${s.status === 'stopped' || s.status === 'failed'
			? html`<button class="primary" data-action="start" onClick=${() => setStatus('running')}>Start</button>`
			: html`<button data-action="stop" onClick=${() => setStatus('stopped')}>Stop</button>`}`}>
		<p><a href=${href('services')}>← All services</a></p>
		<${ErrorBox} error=${stateErr} />
		${s && html`
		<section class="panel" aria-label="status">
			<${KV} items=${[
				['Status', html`<span data-status=${s.status}><${Badge} status=${s.status} /></span>`],
				s.error_msg && ['Why', s.error_msg],
				s.stopped_reason && ['Stopped', s.stopped_reason],
				s.description && ['Description', html`<span data-testid="description">${s.description}</span>`],
				['Address', html`<code>${s.access_address}</code>`],
				['Authentication', s.auth + (s.auth === 'appcode' ? ' (X-Apig-AppCode)' : s.auth === 'token' ? ' (X-Auth-Token)' : '')],
				['Limits', `${s.timeout_seconds} s, ${bytes(s.max_body_bytes)}`],
				['Deployed', time(s.publish_at)],
				s.due_time && ['Stops at', time(s.due_time)],
			]} />
		</section>
		<h2>Instances</h2>
		<${Table} label="instances" rows=${s.instances || []} rowKey=${(i) => i.instance_id} empty="No instances." columns=${[
			{ label: 'Instance', render: (i) => html`<code>${i.instance_id}</code>` },
			{ label: 'Version', render: (i) => { const c = s.config.find((x) => x.model_id === i.model_id); return c ? `${c.model_name || ''} ${c.model_version || ''}` : i.model_id; } },
			{ label: 'Phase', render: (i) => html`<${Badge} status=${i.phase === 'Ready' ? 'READY' : i.phase} text=${i.phase} />` },
			{ label: 'Restarts', key: 'restarts' },
			{ label: 'Started', render: (i) => ago(i.start_time) },
			{ label: 'Message', className: 'name', key: 'message' },
		]} />
		<h2>Traffic</h2>
		${stats.data ? html`<${StatsCharts} st=${stats.data} />` : stats.error ? html`<${ErrorBox} error=${stats.error} />` : html`<p class="muted">Loading…</p>`}
		<${TryIt} svc=${s} onCalled=${() => stats.reload()} />
		<div class="grid2">
			<${Weights} key=${'w' + stored} svc=${s} ...${editor('weights')} />
			<${Autoscale} key=${'a' + stored} svc=${s} ...${editor('autoscale')} />
		</div>
		<h2>Events</h2>
		<${Events} page=${evs.data} offset=${evOff} onPage=${setEvOff} />`}
	</${Page}>`;
}

export default function Services({ route }) {
	const id = route.parts[1];
	return id ? html`<${Detail} id=${id} />` : html`<${List} route=${route} />`;
}
