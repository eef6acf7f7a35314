// A training job: status, failure with its hint, attempts, inputs and
// outputs, the live log (follow, search), metric curves (atelier.report)
// and CPU / memory / GPU over time; stop, clone, delete.
import { html, useState, useEffect, useRef, useMemo } from '../js/lib.js';
import { get, post, del, lines } from '../js/api.js';
import { Page, useLoad, usePoll, pageState, Table, KV, Confirm, ErrorBox } from '../js/ui.js';
import { href, navigate } from '../js/router.js';
import { time, duration } from '../js/format.js';
import { Chart } from '../js/chart.js';
import { JobStatus, isTerminal, runningTime, seriesOf } from './job-common.js';

// MAX_LINES bounds the lines the log view keeps (the oldest go first).
const MAX_LINES = 5000;
// Points per metric series asked of the server (LTTB there).
const POINTS = 2000;

function remoteText(ch) {
	const r = ch.remote || {};
	if (r.obs) return r.obs.obs_url;
	if (r.dataset) return 'dataset ' + (r.dataset.name || r.dataset.id) + ' ' + (r.dataset.version || r.dataset.version_id || '');
	return '';
}

// Highlight shows text with the matches of term marked, as text nodes.
function Highlight({ text, term }) {
	if (!term) return text;
	const low = text.toLowerCase();
	const t = term.toLowerCase();
	const out = [];
	let i = 0;
	for (;;) {
		const j = low.indexOf(t, i);
		if (j < 0) break;
		if (j > i) out.push(text.slice(i, j));
		out.push(html`<mark>${text.slice(j, j + t.length)}</mark>`);
		i = j + t.length;
	}
	out.push(text.slice(i));
	return out;
}

function LogView({ id, ended }) {
	const [buf, setBuf] = useState({ lines: [], dropped: 0 });
	const [state, setState] = useState('connecting');
	const [error, setError] = useState(null);
	const [term, setTerm] = useState('');
	const [follow, setFollow] = useState(true);
	const box = useRef(null);
	const [gen, setGen] = useState(0);
	useEffect(() => {
		const ac = new AbortController();
		let pending = [];
		let timer = 0;
		const flush = () => {
			timer = 0;
			const add = pending;
			pending = [];
			setBuf((b) => {
				const all = b.lines.concat(add);
				const cut = Math.max(0, all.length - MAX_LINES);
				return { lines: cut ? all.slice(cut) : all, dropped: b.dropped + cut };
			});
		};
		setBuf({ lines: [], dropped: 0 });
		setState('open');
		setError(null);
		lines('/api/v1/training-jobs/' + encodeURIComponent(id) + '/logs', { follow: 'true' }, (l) => {
			if (!l.trim()) return;
			try { pending.push(JSON.parse(l)); } catch { return; }
			if (!timer) timer = setTimeout(flush, 100);
		}, ac.signal).then(() => { clearTimeout(timer); flush(); setState('ended'); })
			.catch((e) => { if (!ac.signal.aborted) { clearTimeout(timer); flush(); setError(e); setState('error'); } });
		return () => { ac.abort(); clearTimeout(timer); };
	}, [id, gen]);
	useEffect(() => {
		const el = box.current;
		if (follow && el) el.scrollTop = el.scrollHeight;
	}, [buf, follow]);
	const shown = useMemo(() => {
		if (!term) return buf.lines;
		const t = term.toLowerCase();
		return buf.lines.filter((l) => l.text.toLowerCase().includes(t));
	}, [buf, term]);
	return html`<section aria-labelledby="log-h" class="job-log">
		<div class="toolbar"><h2 id="log-h" class="grow">Log</h2>
			<label class="inline" for="log-search">Search <input id="log-search" type="search" value=${term} onInput=${(e) => setTerm(e.target.value)} /></label>
			<label class="inline" for="log-follow"><input id="log-follow" type="checkbox" checked=${follow} onChange=${(e) => setFollow(e.target.checked)} /> Follow</label>
			${(state === 'ended' || state === 'error') && !ended && html`<button onClick=${() => setGen(gen + 1)}>Reconnect</button>`}
		</div>
		<${ErrorBox} error=${error} />
		<p class="muted" role="status">${state === 'open' ? 'Streaming' : state === 'ended' ? 'The log is complete' : state === 'error' ? 'The stream broke off' : 'Connecting'} · ${buf.lines.length.toLocaleString()} lines${buf.dropped ? ' (the first ' + buf.dropped.toLocaleString() + ' not shown)' : ''}${term ? ' · ' + shown.length.toLocaleString() + ' match' : ''}</p>
		<pre class="log" ref=${box} tabindex="0" aria-label="job log" data-testid="log" data-stream=${state} data-lines=${buf.lines.length}>${shown.map((l) => html`<div class=${'ll ' + l.stream} key=${l.attempt + '.' + l.seq}><span class="ln">${l.attempt > 1 ? l.attempt + ':' : ''}${l.seq}</span><${Highlight} text=${l.text} term=${term} /></div>`)}</pre>
	</section>`;
}

const SYSTEM = [
	{ key: 'cpu_percent', title: 'CPU', unit: '%', scale: 1 },
	{ key: 'memory_bytes', title: 'Memory', unit: 'MiB', scale: 1 / 1048576 },
	{ key: 'gpu_util', title: 'GPU utilisation', unit: '%', scale: 1 },
	{ key: 'gpu_memory_bytes', title: 'GPU memory', unit: 'MiB', scale: 1 / 1048576 },
];

function MetricCharts({ id, running, phase }) {
	// One call for both kinds: the server reads the job's samples once.
	const m = useLoad(() => get('/api/v1/training-jobs/' + encodeURIComponent(id) + '/metrics', { max_points: POINTS }), [id, phase]);
	usePoll(() => m.reload(), running ? 5000 : 0, [m.reload]);
	const us = useMemo(() => (m.data ? seriesOf(m.data.samples.filter((x) => x.kind === 'user')) : {}), [m.data]);
	const ss = useMemo(() => (m.data ? seriesOf(m.data.samples.filter((x) => x.kind === 'system'), true) : {}), [m.data]);
	const names = Object.keys(us).sort();
	return html`<section aria-labelledby="metrics-h" data-testid="metrics" data-state=${pageState(m)}>
		<h2 id="metrics-h">Metrics</h2>
		<${ErrorBox} error=${m.error} />
		${m.data && names.length === 0 && html`<p class="muted">No metrics reported yet: call <code>atelier.report(step=…, loss=…)</code> in the training script.</p>`}
		${m.data && m.data.downsampled && html`<p class="muted">${m.data.total.toLocaleString()} samples; each curve is drawn from at most ${POINTS.toLocaleString()} points, picked on the server to keep its shape.</p>`}
		<div class="job-charts">${names.map((n) => html`<${Chart} key=${n} id=${'metric-' + n} title=${n} data=${[us[n].x, us[n].y]} series=${[{ label: n }]} xLabel="step" yLabel=${n} />`)}</div>
		<h2>Resources</h2>
		${m.data && Object.keys(ss).length === 0 && html`<p class="muted">No resource samples yet (the runner takes one every 5 seconds while the job runs).</p>`}
		<div class="job-charts">${SYSTEM.filter((m) => ss[m.key]).map((m) => html`<${Chart} key=${m.key} id=${'resource-' + m.key} title=${m.title + ' (' + m.unit + ')'} xTime=${true}
			data=${[ss[m.key].x, ss[m.key].y.map((v) => v * m.scale)]} series=${[{ label: m.title }]} yLabel=${m.unit} />`)}</div>
	</section>`;
}

function Failure({ job }) {
	const st = job.status || {};
	const ts = (st.task_statuses || []).find((t) => t.reason && t.reason !== 'completed' && (t.message || t.hint));
	if (!ts || st.phase === 'Completed') return null;
	return html`<div class="error-box" role="alert" data-testid="failure">
		<div><span class="code">${ts.reason}</span> ${ts.message}${ts.exit_code ? ' (exit code ' + ts.exit_code + ')' : ''}</div>
		${ts.hint && html`<div class="hint" data-testid="failure-hint">${ts.hint}</div>`}
	</div>`;
}

export default function JobDetail({ id }) {
	const job = useLoad(() => get('/api/v1/training-jobs/' + encodeURIComponent(id)), [id]);
	const j = job.data;
	const running = j && !isTerminal(j);
	usePoll(() => job.reload(), running ? 3000 : 0, [job.reload]);
	const events = useLoad(() => get('/api/v1/training-jobs/' + encodeURIComponent(id) + '/events', { limit: 100 }), [id, j && j.status && j.status.phase]);
	const [ask, setAsk] = useState('');
	const stop = async () => {
		await post('/api/v1/training-jobs/' + encodeURIComponent(id) + '/actions', { action_type: 'terminate' });
		setAsk(''); job.reload();
	};
	const remove = async () => {
		await del('/api/v1/training-jobs/' + encodeURIComponent(id));
		navigate(href('jobs'));
	};
	const name = j ? j.metadata.name : 'Training job';
	const actions = j && html`
		<button class="danger" disabled=${!running || j.status.phase === 'Terminating'} onClick=${() => setAsk('stop')} data-testid="stop">Stop</button>
		<a class="button" href=${href('jobs', 'new') + '?clone=' + encodeURIComponent(id)} data-testid="clone">Clone</a>
		<button disabled=${running} onClick=${() => setAsk('delete')}>Delete</button>`;
	const st = (j && j.status) || {};
	const a = j && j.algorithm;
	return html`<${Page} name="job" title=${name} state=${pageState(job)} error=${job.error} actions=${actions}>
		${j && html`
		<p><a href=${href('jobs')}>All training jobs</a></p>
		<div data-testid="job-phase" data-phase=${st.phase}><${JobStatus} job=${j} />${st.waiting_for && html` <span class="muted">${st.queue_position ? '#' + st.queue_position + ' in the queue: ' : ''}${st.waiting_for}</span>`}</div>
		<${Failure} job=${j} />
		<div class="grid2 job-facts">
			<div class="panel"><${KV} items=${[
				['ID', html`<code>${j.metadata.id}</code>`],
				j.metadata.description && ['Description', j.metadata.description],
				['Owner', j.metadata.user_name],
				['Created', time(j.metadata.create_time)],
				['Started', time(st.start_time)],
				['Ended', time(st.end_time)],
				['Running time', duration(runningTime(j))],
				['Attempt', st.attempt ? st.attempt + (st.retries_left ? ' (' + st.retries_left + ' retries left)' : '') : '–'],
			]} /></div>
			<div class="panel"><${KV} items=${[
				['Engine', a.engine.engine_name + (a.engine.engine_version ? ' ' + a.engine.engine_version : '')],
				['Flavor', j.spec.resource.flavor_id],
				['Code dir', a.code_dir && html`<code>${a.code_dir}</code>`],
				a.boot_file && ['Boot file', html`<code>${a.boot_file}</code>`],
				a.command && ['Command', html`<code>${a.command}</code>`],
				['Parameters', (a.parameters || []).length ? html`<code>${a.parameters.map((p) => '--' + p.name + '=' + p.value).join(' ')}</code>` : ''],
				['Max running time', j.spec.auto_stop ? j.spec.auto_stop.duration + ' ' + j.spec.auto_stop.time_unit.toLowerCase() : 'none'],
			]} /></div>
		</div>
		<h2>Inputs and outputs</h2>
		<${Table} label="inputs and outputs" empty="No inputs or outputs." rows=${[...(a.inputs || []).map((c) => ({ ...c, dir: 'input' })), ...(a.outputs || []).map((c) => ({ ...c, dir: 'output' }))]} columns=${[
			{ label: 'Kind', key: 'dir' },
			{ label: 'Name', key: 'name', className: 'name' },
			{ label: 'Where', className: 'name', render: (c) => html`<code>${remoteText(c)}</code>` },
			{ label: 'In the job', className: 'name', render: (c) => html`<code>${c.local_dir || ''}</code>` },
		]} />
		<${MetricCharts} id=${id} running=${running} phase=${st.phase} />
		<${LogView} id=${id} ended=${!running} />
		<h2>Attempts</h2>
		<${Table} label="attempts" empty="Not started yet." rows=${st.running_records || []} columns=${[
			{ label: '#', render: (r) => (st.running_records.indexOf(r) + 1) },
			{ label: 'Started', render: (r) => time(r.start_at * 1000) },
			{ label: 'Ended', render: (r) => (r.end_at ? time(r.end_at * 1000) : 'running') },
			{ label: 'How it started', key: 'start_type' },
			{ label: 'Why it ended', render: (r) => r.end_reason + (r.end_recover ? ' (retried)' : '') },
		]} />
		<h2>Events</h2>
		<${Table} label="events" rows=${events.data && events.data.items} columns=${[
			{ label: 'Time', className: 'nowrap', render: (e) => time(e.time) },
			{ label: 'Level', key: 'level' },
			{ label: 'Source', key: 'source' },
			{ label: 'Message', className: 'name', key: 'message' },
		]} />
		<${Confirm} open=${ask === 'stop'} title=${'Stop ' + name + '?'} confirmLabel="Stop" danger=${true} onConfirm=${stop} onCancel=${() => setAsk('')}>
			<p>The job's outputs are synced before it ends. It cannot be resumed; clone it to run it again.</p>
		</${Confirm}>
		<${Confirm} open=${ask === 'delete'} title=${'Delete ' + name + '?'} confirmLabel="Delete" danger=${true} typed=${name} onConfirm=${remove} onCancel=${() => setAsk('')}>
			<p>The job's record, log, metrics and events are deleted. Its outputs in OBS stay.</p>
		</${Confirm}>`}
	</${Page}>`;
}
