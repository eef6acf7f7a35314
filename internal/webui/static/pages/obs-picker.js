// ObsPicker: a "Browse…" button that opens a dialog to pick an OBS folder
// (or, with files, an object) through the console's OBS routes, paged on
// the server. onPick gets "obs://bucket/prefix/".
import { html, useState, useEffect, useRef } from '../js/lib.js';
import { get } from '../js/api.js';
import { ErrorBox } from '../js/ui.js';

function parse(url) {
	const m = /^(?:obs|s3):\/\/([^/]+)\/?(.*)$/.exec(url || '');
	if (!m) return { bucket: '', prefix: '' };
	const rest = m[2];
	return { bucket: m[1], prefix: rest.endsWith('/') || rest === '' ? rest : rest.slice(0, rest.lastIndexOf('/') + 1) };
}

export function ObsPicker({ id, value, onPick, files = false, label = 'Browse OBS' }) {
	const dlg = useRef(null);
	const [open, setOpen] = useState(false);
	const [at, setAt] = useState({ bucket: '', prefix: '' });
	const [page, setPage] = useState(null);
	const [error, setError] = useState(null);
	const [token, setToken] = useState('');
	useEffect(() => {
		const d = dlg.current;
		if (!d) return;
		if (open && !d.open) d.showModal();
		if (!open && d.open) d.close();
	}, [open]);
	useEffect(() => {
		if (!open) return;
		let live = true;
		setError(null); setPage(null);
		const load = at.bucket
			? get(`/api/v1/obs/buckets/${encodeURIComponent(at.bucket)}/objects`, { prefix: at.prefix, token, limit: 100 })
				.then((l) => ({ dirs: l.prefixes.map((p) => ({ name: p.slice(at.prefix.length), prefix: p })), objects: files ? l.objects : [], next: l.truncated ? l.next_token : '' }))
			: get('/api/v1/obs/buckets', { limit: 200 }).then((l) => ({ buckets: l.items.map((b) => b.name), next: '' }));
		load.then((p) => { if (live) setPage(p); }).catch((e) => { if (live) setError(e); });
		return () => { live = false; };
	}, [open, at.bucket, at.prefix, token]);
	const go = (bucket, prefix) => { setToken(''); setAt({ bucket, prefix }); };
	const start = () => { setAt(parse(value)); setToken(''); setOpen(true); };
	const pick = (url) => { onPick(url); setOpen(false); };
	const crumbs = at.prefix.split('/').filter(Boolean);
	return html`<span class="obs-picker">
		<button type="button" id=${id} onClick=${start}>${label}…</button>
		<dialog ref=${dlg} class="obs-picker-dialog" aria-label="pick an OBS location" onCancel=${(e) => { e.preventDefault(); setOpen(false); }}>
			<h2>Pick ${files ? 'a folder or an object' : 'a folder'}</h2>
			<nav class="crumbs" aria-label="location">
				<button type="button" class="link" onClick=${() => go('', '')}>Buckets</button>
				${at.bucket && html` / <button type="button" class="link" onClick=${() => go(at.bucket, '')}>${at.bucket}</button>`}
				${crumbs.map((c, i) => html` / <button type="button" class="link" onClick=${() => go(at.bucket, crumbs.slice(0, i + 1).join('/') + '/')}>${c}</button>`)}
			</nav>
			<${ErrorBox} error=${error} />
			${!page && !error && html`<p class="muted">Loading…</p>`}
			${page && html`<ul class="picker-list" data-state="ready">
				${page.buckets && page.buckets.map((b) => html`<li><button type="button" class="link" data-bucket=${b} onClick=${() => go(b, '')}>${b}/</button></li>`)}
				${page.buckets && page.buckets.length === 0 && html`<li class="muted">No buckets.</li>`}
				${page.dirs && page.dirs.map((d) => html`<li><button type="button" class="link" data-prefix=${d.prefix} onClick=${() => go(at.bucket, d.prefix)}>${d.name}</button></li>`)}
				${page.objects && page.objects.map((o) => html`<li><button type="button" class="link" data-key=${o.key} onClick=${() => pick(`obs://${at.bucket}/${o.key}`)}>${o.key.slice(at.prefix.length)}</button></li>`)}
				${page.dirs && page.dirs.length === 0 && (!page.objects || page.objects.length === 0) && html`<li class="muted">No folders here.</li>`}
			</ul>`}
			${page && page.next && html`<button type="button" onClick=${() => setToken(page.next)}>More</button>`}
			<div class="actions">
				<button type="button" onClick=${() => setOpen(false)}>Cancel</button>
				<button type="button" class="primary" disabled=${!at.bucket} data-use="folder" onClick=${() => pick(`obs://${at.bucket}/${at.prefix}`)}>Use ${at.bucket ? `obs://${at.bucket}/${at.prefix}` : 'this folder'}</button>
			</div>
		</dialog>
	</span>`;
}
