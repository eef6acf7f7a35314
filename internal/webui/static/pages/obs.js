// OBS: buckets, the objects of a bucket by prefix (upload of files and
// folders, resumable multipart; download; presigned links; delete), and a
// bucket's policy and lifecycle editors. Everything goes through the REST
// routes under /api/v1/obs/, which authorize as S3 does, but for the bytes
// of small files: those are a browser POST upload to the S3 endpoint, with
// a form the REST API signs for exactly that key, size and type (through
// the REST API again when the S3 endpoint cannot be reached).
import { html, useState, useEffect, useRef } from '../js/lib.js';
import { get, post, put, del, request, ApiError } from '../js/api.js';
import { Page, useLoad, useFollow, pageState, ErrorBox, Badge, Field, Table, Pager, Confirm, Live } from '../js/ui.js';
import { href, navigate, setQuery } from '../js/router.js';
import { bytes, time } from '../js/format.js';

const API = '/api/v1/obs/buckets';
const enc = encodeURIComponent;
const bucketPath = (b) => API + '/' + enc(b);

// Uploads larger than this go in parts of PART_SIZE bytes (at least the
// server's minimum part size), each resumable.
const SINGLE_MAX = 8 << 20;
const PART_SIZE = 8 << 20;

export default function Obs({ route }) {
	const [, bucket, sub] = route.parts;
	if (!bucket) return html`<${Buckets} route=${route} />`;
	if (sub === 'settings') return html`<${Settings} bucket=${bucket} />`;
	// A new prefix is a new listing: its page tokens start over.
	return html`<${Objects} key=${bucket + '\n' + (route.query.get('prefix') || '')} bucket=${bucket} route=${route} />`;
}

// ---- buckets ----

function Buckets({ route }) {
	const offset = Number(route.query.get('offset') || 0);
	const limit = 50;
	const list = useLoad(() => get(API, { offset, limit }), [offset]);
	const [name, setName] = useState('');
	const [createErr, setCreateErr] = useState(null);
	const [busy, setBusy] = useState(false);
	const create = async (e) => {
		e.preventDefault();
		setBusy(true); setCreateErr(null);
		try {
			const b = await post(API, { name: name.trim() });
			setName('');
			navigate(href('obs', b.name));
		} catch (err) { setCreateErr(err); } finally { setBusy(false); }
	};
	const items = list.data && list.data.items;
	return html`<${Page} name="obs" title="Object storage" state=${pageState(list)} error=${list.error}>
		<form class="panel obs-create" onSubmit=${create} aria-label="create a bucket">
			<${Field} id="obs-new-bucket" label="New bucket name" help="3–63 lower-case letters, digits, '.' and '-'; names are shared by every user of the server"
				error=${createErr && html`<span class="code">${createErr.code}</span> ${createErr.message}${createErr.hint && html`<br /><span class="hint">${createErr.hint}</span>`}`}>
				<input id="obs-new-bucket" value=${name} onInput=${(e) => setName(e.target.value)} autocomplete="off" spellcheck="false" required
					aria-invalid=${createErr ? 'true' : 'false'} />
			</${Field}>
			<button class="primary" type="submit" disabled=${busy || !name.trim()}>Create bucket</button>
		</form>
		<${Table} label="buckets" rows=${items} rowKey=${(b) => b.name} empty="You have no buckets yet: create one above." columns=${[
			{ label: 'Bucket', className: 'name', render: (b) => html`<a href=${href('obs', b.name)} data-bucket=${b.name}>${b.name}</a>` },
			{ label: 'Region', key: 'region' },
			{ label: 'Created', render: (b) => time(b.create_time) },
			{ label: 'Configuration', render: (b) => html`${b.has_policy && html`<${Badge} status="info" text="policy" /> `}${b.has_lifecycle && html`<${Badge} status="info" text="lifecycle" />`}` },
			{ label: 'Settings', render: (b) => html`<a href=${href('obs', b.name, 'settings')} aria-label=${'policy and lifecycle of ' + b.name}>Policy & lifecycle</a>` },
		]} />
		${list.data && html`<${Pager} total=${list.data.total} offset=${offset} limit=${limit} onPage=${(o) => setQuery({ offset: o || '' })} />`}
	</${Page}>`;
}

// ---- objects ----

function Crumbs({ bucket, prefix }) {
	const segs = prefix.split('/').filter((s, i, a) => i < a.length - 1 || s !== '');
	let acc = '';
	return html`<nav class="obs-crumbs" aria-label="prefix">
		<a href=${href('obs')}>Buckets</a> / <a href=${href('obs', bucket)} data-prefix="">${bucket}</a>
		${segs.map((s) => { acc += s + '/'; const p = acc; return html` / <a href=${href('obs', bucket) + '?prefix=' + enc(p)} data-prefix=${p}>${s}</a>`; })}
	</nav>`;
}

function Objects({ bucket, route }) {
	const prefix = route.query.get('prefix') || '';
	// Server-side pages: the tokens of the pages seen so far, for Previous.
	const [tokens, setTokens] = useState(['']);
	const [page, setPage] = useState(0);
	const token = tokens[page] || '';
	const listing = useLoad(() => get(bucketPath(bucket) + '/objects', { prefix, limit: 50, token }), [bucket, prefix, token]);
	const [confirm, setConfirm] = useState(null);
	const [presigned, setPresigned] = useState(null);
	const [notice, setNotice] = useState('');
	const [actionErr, setActionErr] = useState(null);
	const [expires, setExpires] = useState('3600');
	const d = listing.data;
	const rows = d ? [...d.prefixes.map((p) => ({ prefix: p })), ...d.objects] : undefined;
	const next = () => { if (!d || !d.truncated) return; setTokens((t) => [...t.slice(0, page + 1), d.next_token]); setPage(page + 1); };
	const presign = async (key) => {
		setActionErr(null);
		try {
			const r = await post(bucketPath(bucket) + '/objects/presign', { key, expires_seconds: Number(expires) });
			setPresigned({ key, ...r });
		} catch (e) { setActionErr(e); }
	};
	const remove = async () => {
		const key = confirm;
		await del(bucketPath(bucket) + '/objects', { params: { key } });
		setConfirm(null);
		setNotice('Deleted ' + key);
		listing.reload();
	};
	const name = (k) => k.slice(prefix.length);
	return html`<${Page} name="obs-bucket" title=${bucket} state=${pageState(listing)} error=${listing.error}
		actions=${html`<a class="button" href=${href('obs', bucket, 'settings')}>Policy & lifecycle</a>`}>
		<${Crumbs} bucket=${bucket} prefix=${prefix} />
		<${Uploader} bucket=${bucket} prefix=${prefix} onDone=${() => listing.reload()} />
		<${ErrorBox} error=${actionErr} />
		${notice && html`<${Live} text=${notice} />`}
		${presigned && html`<div class="panel obs-presigned" data-testid="presigned">
			<${Field} id="obs-presigned-url" label=${'Presigned link to ' + presigned.key + ', valid until ' + time(presigned.expires_at)}
				help="Anyone with this link can download the object until it expires; it is signed with your access key.">
				<input id="obs-presigned-url" readonly value=${presigned.url} onFocus=${(e) => e.target.select()} />
			</${Field}>
			<button onClick=${() => setPresigned(null)}>Close</button>
		</div>`}
		<div class="obs-listbar">
			<label for="obs-expires">Link expiry</label>
			<select id="obs-expires" value=${expires} onChange=${(e) => setExpires(e.target.value)}>
				<option value="900">15 minutes</option><option value="3600">1 hour</option>
				<option value="86400">1 day</option><option value="604800">7 days</option>
			</select>
		</div>
		<${Table} label="objects" rows=${rows} rowKey=${(r) => r.prefix || r.key} empty=${prefix ? 'Nothing under this prefix.' : 'This bucket is empty: upload files or a folder above.'} columns=${[
			{ label: 'Name', className: 'name', render: (r) => r.prefix
				? html`<a href=${href('obs', bucket) + '?prefix=' + enc(r.prefix)} data-prefix=${r.prefix} class="obs-folder">${name(r.prefix)}</a>`
				: html`<span class="obs-key" data-key=${r.key}>${name(r.key)}</span>` },
			{ label: 'Size', className: 'right', render: (r) => (r.prefix ? '' : bytes(r.size)) },
			{ label: 'Modified', render: (r) => (r.prefix ? '' : time(r.last_modified)) },
			{ label: 'Actions', render: (r) => r.prefix ? '' : html`<span class="obs-actions">
				<a class="button" href=${bucketPath(bucket) + '/objects/content?key=' + enc(r.key)} download=${name(r.key).split('/').pop() || 'download'}
					aria-label=${'download ' + r.key} data-action="download">Download</a>
				<button onClick=${() => presign(r.key)} aria-label=${'presigned link to ' + r.key} data-action="presign">Link</button>
				<button class="danger" onClick=${() => setConfirm(r.key)} aria-label=${'delete ' + r.key} data-action="delete">Delete</button>
			</span>` },
		]} />
		${d && html`<nav class="pager" aria-label="pages">
			<button disabled=${page === 0} onClick=${() => setPage(page - 1)}>Previous</button>
			<span data-page-number=${page + 1}>Page ${page + 1}${d.truncated ? '' : ' (last)'}</span>
			<button disabled=${!d.truncated} onClick=${next} data-action="next-page">Next</button>
		</nav>`}
		<${Confirm} open=${confirm !== null} title="Delete object" confirmLabel="Delete" danger onConfirm=${remove} onCancel=${() => setConfirm(null)}>
			<p>Delete <strong class="obs-key">${confirm}</strong> from bucket <strong>${bucket}</strong>? This cannot be undone.</p>
		</${Confirm}>
	</${Page}>`;
}

// ---- uploads ----

let csrfToken = '';
// csrf is the session's CSRF token, for uploads sent with XMLHttpRequest
// (fetch has no upload progress); api.js keeps its copy private.
async function csrf() {
	if (!csrfToken) csrfToken = (await get('/api/v1/console/session')).csrf_token || '';
	return csrfToken;
}

// send PUTs body to url with XMLHttpRequest, reporting bytes sent; it
// resolves to the JSON answer and rejects with an ApiError.
function send(url, body, onProgress, job) {
	return csrf().then((token) => new Promise((resolve, reject) => {
		const x = new XMLHttpRequest();
		job.xhr = x;
		x.open('PUT', url);
		x.setRequestHeader('X-CSRF-Token', token);
		x.setRequestHeader('Accept', 'application/json');
		x.upload.onprogress = (e) => onProgress(e.loaded);
		x.onload = () => {
			job.xhr = null;
			let b = null;
			try { b = JSON.parse(x.responseText); } catch { /* not JSON */ }
			if (x.status >= 200 && x.status < 300) resolve(b); else reject(new ApiError(x.status, b));
		};
		x.onerror = () => { job.xhr = null; reject(new ApiError(0, { error_code: 'network', error_msg: 'the upload was interrupted' })); };
		x.onabort = () => { job.xhr = null; reject(new ApiError(0, { error_code: 'cancelled', error_msg: 'cancelled' })); };
		x.send(body);
	}));
}

// resumeKey names a file's multipart upload in localStorage: the same file
// (name, size, modification time) to the same key resumes it.
const resumeKey = (bucket, key, f) => 'atelier.obs.upload:' + JSON.stringify([bucket, key, f.size, f.lastModified]);

async function uploadParts(bucket, key, file, job, progress) {
	const base = bucketPath(bucket) + '/uploads';
	const rk = resumeKey(bucket, key, file);
	let saved = null;
	try { saved = JSON.parse(localStorage.getItem(rk) || 'null'); } catch { saved = null; }
	const done = new Map();
	if (saved && saved.upload_id) {
		try {
			let marker = 0;
			for (;;) {
				const r = await get(base + '/' + enc(saved.upload_id), { key, marker });
				r.parts.forEach((p) => done.set(p.number, p));
				if (!r.truncated) break;
				marker = r.next_marker;
			}
			job.resumed = done.size;
		} catch (e) {
			if (!(e instanceof ApiError) || e.status !== 404) throw e;
			saved = null; done.clear(); // completed or aborted meanwhile: start again
		}
	}
	if (!saved) {
		const u = await post(base, { key, content_type: file.type || '' });
		saved = { upload_id: u.upload_id, part_size: Math.max(PART_SIZE, u.min_part_size, Math.ceil(file.size / u.max_parts)) };
		localStorage.setItem(rk, JSON.stringify(saved));
	}
	const size = saved.part_size;
	const count = Math.max(1, Math.ceil(file.size / size));
	const parts = [];
	let sent = 0;
	for (let n = 1; n <= count; n++) {
		const from = (n - 1) * size;
		const to = Math.min(file.size, from + size);
		const have = done.get(n);
		if (have && have.size === to - from) { parts.push({ number: n, etag: have.etag }); sent += to - from; progress(sent); continue; }
		if (job.cancelled) throw new ApiError(0, { error_code: 'cancelled', error_msg: 'cancelled' });
		const url = base + '/' + enc(saved.upload_id) + '/parts/' + n + '?key=' + enc(key);
		const p = await send(url, file.slice(from, to), (b) => progress(sent + b), job);
		parts.push({ number: n, etag: p.etag });
		sent += to - from;
		progress(sent);
	}
	const obj = await post(base + '/' + enc(saved.upload_id) + '/complete', { key, parts });
	localStorage.removeItem(rk);
	return obj;
}

// postForm sends file to the S3 endpoint as a browser POST upload: the
// form's fields, then the file, with XMLHttpRequest (progress), without
// cookies — the signed policy is the only credential. It rejects with an
// ApiError (status 0 when the endpoint could not be reached).
function postForm(form, file, onProgress, job) {
	return new Promise((resolve, reject) => {
		const fd = new FormData();
		for (const [k, v] of Object.entries(form.fields)) fd.append(k, v);
		fd.append('file', file);
		const x = new XMLHttpRequest();
		job.xhr = x;
		x.open('POST', form.url);
		x.upload.onprogress = (e) => onProgress(e.loaded);
		x.onload = () => {
			job.xhr = null;
			if (x.status >= 200 && x.status < 300) { resolve(null); return; }
			const m = /<Message>([^<]*)<\/Message>/.exec(x.responseText || '');
			const c = /<Code>([^<]*)<\/Code>/.exec(x.responseText || '');
			reject(new ApiError(x.status, { error_code: c ? c[1] : 'S3', error_msg: m ? m[1] : 'the S3 endpoint refused the upload' }));
		};
		x.onerror = () => { job.xhr = null; reject(new ApiError(0, { error_code: 'network', error_msg: 'the S3 endpoint could not be reached' })); };
		x.onabort = () => { job.xhr = null; reject(new ApiError(0, { error_code: 'cancelled', error_msg: 'cancelled' })); };
		x.send(fd);
	});
}

// uploadOne uploads a file: in parts when it is large (resumable); else as
// a browser POST upload to the S3 endpoint (job.via "post"; "multipart" for parts), or, when that
// fails for any reason but a cancel (the endpoint unreachable from this
// browser, a form the server cannot sign), with one PUT through the REST
// API (job.via "api").
async function uploadOne(bucket, key, file, job, progress) {
	if (file.size > SINGLE_MAX) {
		job.via = 'multipart';
		return uploadParts(bucket, key, file, job, progress);
	}
	if (file.size > 0) {
		try {
			const form = await post(bucketPath(bucket) + '/objects/post-policy', { key, size: file.size, content_type: file.type || '' });
			await postForm(form, file, progress, job);
			job.via = 'post';
			return null;
		} catch (e) {
			if (job.cancelled) throw e;
			progress(0);
		}
	}
	job.via = 'api';
	return send(bucketPath(bucket) + '/objects/content?key=' + enc(key), file, progress, job);
}

function Uploader({ bucket, prefix, onDone }) {
	const [jobs, setJobs] = useState([]);
	const [running, setRunning] = useState(false);
	const jobsRef = useRef([]);
	const filesRef = useRef(null);
	const dirRef = useRef(null);
	const update = () => setJobs(jobsRef.current.map((j) => ({ ...j })));
	const start = async (fileList) => {
		const files = Array.from(fileList || []);
		if (!files.length) return;
		const fresh = files.map((f) => ({ file: f, key: prefix + (f.webkitRelativePath || f.name), size: f.size, sent: 0, state: 'waiting', error: null, resumed: 0, cancelled: false, xhr: null, via: '' }));
		jobsRef.current = fresh;
		update();
		setRunning(true);
		for (const j of fresh) {
			if (j.cancelled) { j.state = 'cancelled'; continue; }
			j.state = 'uploading'; update();
			try {
				await uploadOne(bucket, j.key, j.file, j, (b) => { j.sent = Math.min(b, j.size); update(); });
				j.sent = j.size; j.state = 'done';
			} catch (e) {
				j.state = j.cancelled ? 'cancelled' : 'failed';
				j.error = j.cancelled ? null : e;
			}
			update();
		}
		setRunning(false);
		if (filesRef.current) filesRef.current.value = '';
		if (dirRef.current) dirRef.current.value = '';
		onDone();
	};
	const cancel = () => {
		for (const j of jobsRef.current) {
			if (j.state === 'done') continue;
			j.cancelled = true;
			if (j.xhr) j.xhr.abort();
		}
		update();
	};
	const total = jobs.reduce((a, j) => a + j.size, 0);
	const sent = jobs.reduce((a, j) => a + j.sent, 0);
	const finished = jobs.length > 0 && !running;
	const failed = jobs.filter((j) => j.state === 'failed').length;
	return html`<section class="panel obs-upload" aria-label="upload" data-uploading=${running ? 'true' : 'false'}
		data-upload-state=${finished ? (failed ? 'failed' : 'done') : running ? 'running' : 'idle'}>
		<div class="obs-pickers">
			<${Field} id="obs-files" label=${'Upload files to ' + (prefix || 'the bucket root')}>
				<input id="obs-files" ref=${filesRef} type="file" multiple disabled=${running} onChange=${(e) => start(e.target.files)} />
			</${Field}>
			<${Field} id="obs-folder" label="Upload a folder (its relative paths become keys)">
				<input id="obs-folder" ref=${dirRef} type="file" webkitdirectory multiple disabled=${running} onChange=${(e) => start(e.target.files)} />
			</${Field}>
			${running && html`<button class="danger" onClick=${cancel} data-action="cancel-upload">Cancel upload</button>`}
		</div>
		${jobs.length > 0 && html`<div class="obs-progress">
			<label for="obs-total">Total: ${bytes(sent)} of ${bytes(total)} · ${jobs.filter((j) => j.state === 'done').length} of ${jobs.length} files${failed ? ', ' + failed + ' failed' : ''}</label>
			<progress id="obs-total" max=${total || 1} value=${sent}></progress>
			<ul class="obs-files">${jobs.map((j, i) => html`<li key=${j.key} data-upload-key=${j.key} data-state=${j.state} data-resumed=${j.resumed} data-via=${j.via}>
				<span class="obs-key">${j.key}</span> <${Badge} status=${j.state === 'done' ? 'ok' : j.state === 'failed' ? 'error' : j.state === 'uploading' ? 'running' : 'pending'} text=${j.state} />
				${j.resumed > 0 && html` <span class="muted">resumed: ${j.resumed} part${j.resumed === 1 ? '' : 's'} already uploaded</span>`}
				${j.via === 'api' && j.state === 'done' && html` <span class="muted">sent through the API</span>`}
				<progress max=${j.size || 1} value=${j.sent} aria-label=${'progress of ' + j.key} id=${'obs-p' + i}></progress>
				${j.error && html`<${ErrorBox} error=${j.error} />`}
			</li>`)}</ul>
		</div>`}
	</section>`;
}

// ---- settings: policy and lifecycle ----

const policyTemplate = (bucket) => JSON.stringify({
	Version: '2012-10-17',
	Statement: [{ Sid: 'PublicRead', Effect: 'Allow', Principal: '*', Action: ['obs:GetObject'], Resource: ['obs:::' + bucket + '/public/*'] }],
}, null, 2);

const lifecycleTemplate = JSON.stringify({ rules: [
	{ id: 'expire-tmp', status: 'Enabled', filter: { prefix: 'tmp/' }, expiration_days: 7, abort_incomplete_days: 2 },
	{ id: 'large-scratch', status: 'Disabled', filter: { prefix: 'scratch/', tags: [{ key: 'temporary', value: 'yes' }], size_greater_than: 1048576 }, expiration_date: '2030-01-01' },
] }, null, 2);

// checked turns a validate route's answer into an error to show (the
// shape of ApiError: code, message, hint), or null when the document is
// valid.
const checked = (v) => (v.valid ? null : { code: v.error_code, message: v.error_msg, hint: v.hint || '' });

// Editor edits one JSON document: Validate asks the server without saving;
// Save validates first and stores only a valid document. Errors show their
// code, message and hint.
function Editor({ id, label, help, value, onSave, onValidate, onDelete, name }) {
	const [text, setText] = useFollow(value);
	const [err, setErr] = useState(null);
	const [status, setStatus] = useState('');
	const [busy, setBusy] = useState(false);
	const act = async (fn, ok) => {
		setBusy(true); setErr(null); setStatus('');
		try { await fn(text); setStatus(ok); } catch (e) { setErr(e); } finally { setBusy(false); }
	};
	return html`<section class="panel obs-editor" data-editor=${name} data-result=${err ? 'error' : status ? 'ok' : ''}>
		<${Field} id=${id} label=${label} help=${help}>
			<textarea id=${id} rows="14" spellcheck="false" value=${text} onInput=${(e) => { setText(e.target.value); setErr(null); setStatus(''); }}
				aria-invalid=${err ? 'true' : 'false'}></textarea>
		</${Field}>
		<${ErrorBox} error=${err} />
		${status && html`<${Live} text=${status} />`}
		<div class="obs-editor-actions">
			<button onClick=${() => act(async (t) => { const e = checked(await onValidate(t)); if (e) throw e; }, 'Valid.')} disabled=${busy} data-action="validate">Validate</button>
			<button class="primary" onClick=${() => act(async (t) => { const e = checked(await onValidate(t)); if (e) throw e; await onSave(t); }, 'Saved.')} disabled=${busy} data-action="save">Save</button>
			${onDelete && html`<button class="danger" onClick=${() => act(onDelete, 'Removed.')} disabled=${busy} data-action="remove">Remove</button>`}
		</div>
	</section>`;
}

function Settings({ bucket }) {
	const b = bucketPath(bucket);
	const pol = useLoad(() => get(b + '/policy'), [bucket]);
	const lc = useLoad(() => get(b + '/lifecycle'), [bucket]);
	const json = { headers: { 'Content-Type': 'application/json' } };
	// The lifecycle text is sent as typed: the server's decoder names what
	// is wrong with it (malformed JSON, an unknown field, a wrong type).
	const lcText = lc.data ? (lc.data.rules.length ? JSON.stringify(lc.data, null, 2) : lifecycleTemplate) : '';
	const polText = pol.data ? (pol.data.policy || policyTemplate(bucket)) : '';
	return html`<${Page} name="obs-settings" title=${bucket + ': policy & lifecycle'} state=${pageState(pol, lc)} error=${pol.error || lc.error}>
		<nav class="obs-crumbs" aria-label="bucket"><a href=${href('obs')}>Buckets</a> / <a href=${href('obs', bucket)}>${bucket}</a></nav>
		<h2>Bucket policy</h2>
		${pol.data && !pol.data.policy && html`<p class="notice">This bucket has no policy: only you (and admins) may use it. The text below is an example.</p>`}
		${pol.data && html`<${Editor} id="obs-policy" name="policy" label="Policy document (JSON)" value=${polText}
			help=${'Statements name a Principal ("*" or {"AWS": ["user/NAME"]}), obs: actions, and resources obs:::BUCKET or obs:::BUCKET/prefix/*.'}
			onValidate=${(t) => post(b + '/policy/validate', { policy: t })}
			onSave=${async (t) => { await put(b + '/policy', { policy: t }); pol.reload(); }}
			onDelete=${pol.data.policy ? async () => { await del(b + '/policy'); pol.reload(); } : null} />`}
		<h2>Lifecycle</h2>
		${lc.data && !lc.data.rules.length && html`<p class="notice">This bucket has no lifecycle rules. The text below is an example.</p>`}
		${lc.data && html`<${Editor} id="obs-lifecycle" name="lifecycle" label="Lifecycle rules (JSON)" value=${lcText}
			help=${'Each rule: status Enabled or Disabled; an optional filter (prefix, tags [{key, value}] the object must all carry, size_greater_than and size_less_than in bytes); '
				+ 'expiration_days or expiration_date (midnight UTC, e.g. 2030-01-01), abort_incomplete_days (not with tags or sizes), noncurrent_days. '
				+ 'Atelier has one storage class: there are no transitions.'}
			onValidate=${(t) => request('POST', b + '/lifecycle/validate', t, json)}
			onSave=${async (t) => { await request('PUT', b + '/lifecycle', t, json); lc.reload(); }}
			onDelete=${lc.data.rules.length ? async () => { await del(b + '/lifecycle'); lc.reload(); } : null} />`}
		<${DeleteBucket} bucket=${bucket} />
	</${Page}>`;
}

function DeleteBucket({ bucket }) {
	const [open, setOpen] = useState(false);
	return html`<h2>Delete the bucket</h2>
		<p>A bucket can be deleted once it holds no objects and no unfinished uploads.</p>
		<button class="danger" onClick=${() => setOpen(true)} data-action="delete-bucket">Delete bucket…</button>
		<${Confirm} open=${open} title="Delete bucket" confirmLabel="Delete bucket" danger typed=${bucket}
			onConfirm=${async () => { await del(bucketPath(bucket)); setOpen(false); navigate(href('obs')); }} onCancel=${() => setOpen(false)}>
			<p>Delete bucket <strong>${bucket}</strong>? Its name becomes free for anyone.</p>
		</${Confirm}>`;
}
