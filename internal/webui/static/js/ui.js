// Components shared by every page. Pages mark their state on <main>
// (data-page, data-state = loading | ready | error) so tests wait on it.
import { html, useState, useEffect, useRef, useCallback } from './lib.js';
import { statusClass, time } from './format.js';

// useLoad runs load() now and whenever deps (primitives) change; reload()
// runs it again. While a reload runs, the previous data stays on screen;
// stale says it was loaded for other deps (a new query, a new route), and
// pageState counts it as loading until the new answer is in.
export function useLoad(load, deps = []) {
	const key = JSON.stringify(deps);
	const [st, set] = useState({ data: undefined, error: null, loading: true, key: undefined });
	const seq = useRef(0);
	const run = useCallback(async () => {
		const n = ++seq.current;
		set((s) => ({ ...s, loading: true }));
		try {
			const data = await load();
			if (n === seq.current) set({ data, error: null, loading: false, key });
		} catch (error) {
			// The previous answer stays only if it was for the same deps.
			if (n === seq.current) set((s) => ({ data: s.key === key ? s.data : undefined, error, loading: false, key }));
		}
	}, deps);
	useEffect(() => { run(); }, [run]);
	return { ...st, stale: st.key !== key, reload: run };
}

// useFollow is editable state that starts as value and is replaced when
// value changes (a reload, a new route) — never on mount, where an effect
// would run after the first paint and could wipe what was typed before it.
export function useFollow(value) {
	const [v, setV] = useState(value);
	const seen = useRef(value);
	useEffect(() => {
		if (seen.current !== value) { seen.current = value; setV(value); }
	}, [value]);
	return [v, setV];
}

// useModule is the page module named key (null: none), imported once by
// load (a closure of the caller: import() resolves against its module)
// and kept in cache. It is read from the cache while rendering, so a route
// change never renders the previous page's module with the new route.
// error is load's failure for this key.
export function useModule(cache, key, load) {
	const [, setLoaded] = useState(0);
	const [failed, setFailed] = useState(null); // { key, error }
	useEffect(() => {
		if (key == null || cache.has(key)) return undefined;
		let live = true;
		load().then((m) => { cache.set(key, m); if (live) setLoaded((n) => n + 1); })
			.catch((error) => { if (live) setFailed({ key, error }); });
		return () => { live = false; };
	}, [key]);
	return { mod: (key != null && cache.get(key)) || null, error: failed && failed.key === key ? failed.error : null };
}

// usePoll calls fn every ms while the page is visible.
export function usePoll(fn, ms, deps = []) {
	useEffect(() => {
		if (!ms) return undefined;
		const t = setInterval(() => { if (!document.hidden) fn(); }, ms);
		return () => clearInterval(t);
	}, [ms, ...deps]);
}

export function Page({ name, title, state, error, actions, children }) {
	useEffect(() => { if (title) document.title = `${title} · Atelier`; }, [title]);
	return html`<main id="main" class="page" data-page=${name} data-state=${state} aria-busy=${state === 'loading' ? 'true' : 'false'}>
		<div class="toolbar"><h1 class="grow">${title}</h1>${actions}</div>
		${error && html`<${ErrorBox} error=${error} />`}
		${children}
	</main>`;
}

// pageState is the data-state of a page from one or more useLoad results.
export function pageState(...loads) {
	if (loads.some((l) => (l.data === undefined && l.loading) || l.stale)) return 'loading';
	if (loads.some((l) => l.error && l.data === undefined)) return 'error';
	return 'ready';
}

export function ErrorBox({ error }) {
	if (!error) return null;
	return html`<div class="error-box" role="alert">
		<div><span class="code">${error.code || 'error'}</span> ${error.message}</div>
		${error.hint && html`<div class="hint">${error.hint}</div>`}
	</div>`;
}

export function Badge({ status, text }) {
	return html`<span class=${'badge ' + statusClass(status)}>${text || status || '–'}</span>`;
}

export function Field({ label, help, error, children, id }) {
	return html`<label class="field" for=${id}>${label}
		${children}
		${help && html`<span class="help">${help}</span>`}
		${error && html`<span class="field-error" role="alert">${error}</span>`}
	</label>`;
}

// Table renders rows with columns [{key, label, render(row), sort: 'field', className}].
export function Table({ columns, rows, rowKey, empty, sort, onSort, caption, label }) {
	if (!rows) return null;
	return html`<table class="data" aria-label=${label || caption}>
		${caption && html`<caption class="sr-only">${caption}</caption>`}
		<thead><tr>${columns.map((c) => html`<th scope="col" class=${c.className} aria-sort=${sort && c.sort && sort.replace(/^-/, '') === c.sort ? (sort.startsWith('-') ? 'descending' : 'ascending') : undefined}>
			${c.sort && onSort
				? html`<button class="sort" onClick=${() => onSort(sort === c.sort ? '-' + c.sort : c.sort)}>${c.label}${sort === c.sort ? ' ▲' : sort === '-' + c.sort ? ' ▼' : ''}</button>`
				: c.label}</th>`)}</tr></thead>
		<tbody>
			${rows.length === 0 && html`<tr><td colspan=${columns.length} class="muted">${empty || 'Nothing here yet.'}</td></tr>`}
			${rows.map((r, i) => html`<tr key=${rowKey ? rowKey(r) : i}>${columns.map((c) => html`<td class=${c.className}>${c.render ? c.render(r) : r[c.key]}</td>`)}</tr>`)}
		</tbody>
	</table>`;
}

export function Pager({ total, offset, limit, onPage }) {
	if (total === undefined) return null;
	const from = total === 0 ? 0 : offset + 1;
	const to = Math.min(offset + limit, total);
	return html`<nav class="pager" aria-label="pages">
		<button disabled=${offset === 0} onClick=${() => onPage(Math.max(0, offset - limit))}>Previous</button>
		<span>${from}–${to} of ${total.toLocaleString()}</span>
		<button disabled=${to >= total} onClick=${() => onPage(offset + limit)}>Next</button>
	</nav>`;
}

// Confirm is a modal dialog. typed: the text the user must type to enable
// the confirm button (deleting something that cannot come back).
export function Confirm({ open, title, children, confirmLabel = 'Confirm', danger, typed, onConfirm, onCancel }) {
	const ref = useRef(null);
	const [text, setText] = useState('');
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState(null);
	useEffect(() => {
		const d = ref.current;
		if (!d) return;
		if (open && !d.open) { setText(''); setError(null); d.showModal(); }
		if (!open && d.open) d.close();
	}, [open]);
	const ok = async () => {
		setBusy(true); setError(null);
		try { await onConfirm(); } catch (e) { setError(e); } finally { setBusy(false); }
	};
	return html`<dialog ref=${ref} onCancel=${(e) => { e.preventDefault(); onCancel(); }} aria-labelledby="dlg-title">
		<h2 id="dlg-title">${title}</h2>
		${children}
		${typed && html`<${Field} label=${`Type ${typed} to confirm`}><input value=${text} onInput=${(e) => setText(e.target.value)} autocomplete="off" /></${Field}>`}
		<${ErrorBox} error=${error} />
		<div class="actions">
			<button onClick=${onCancel}>Cancel</button>
			<button class=${danger ? 'danger' : 'primary'} disabled=${busy || (typed && text !== typed)} onClick=${ok}>${confirmLabel}</button>
		</div>
	</dialog>`;
}

// Status of a background action, announced to screen readers.
export function Live({ text }) {
	return html`<p class="muted" role="status" aria-live="polite">${text}</p>`;
}

export function KV({ items }) {
	return html`<dl class="kv">${items.filter(Boolean).map(([k, v]) => html`<dt>${k}</dt><dd>${v === undefined || v === null || v === '' ? '–' : v}</dd>`)}</dl>`;
}

// Events is one page of a resource's events (a notebook's, a service's):
// time, level, source and message, with the pager under it.
export function Events({ page, offset, limit = 20, onPage }) {
	return html`<${Table} label="events" rows=${page && page.items} empty="No events." columns=${[
		{ label: 'Time', render: (e) => html`<span class="nowrap">${time(e.time)}</span>` },
		{ label: 'Level', render: (e) => html`<${Badge} status=${e.level === 'Error' ? 'ERROR' : e.level === 'Warning' ? 'WAIT' : 'INFO'} text=${e.level} />` },
		{ label: 'Source', key: 'source' },
		{ label: 'Message', className: 'name', key: 'message' },
	]} />
	<${Pager} total=${page && page.total} offset=${offset} limit=${limit} onPage=${onPage} />`;
}
