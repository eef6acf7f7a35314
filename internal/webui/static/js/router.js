// Client-side routes under /console/: the server answers every such path
// with the app, so URLs can be bookmarked, shared and reloaded.
import { useState, useEffect } from './lib.js';

export const BASE = '/console/';
const listeners = new Set();

export function currentRoute() {
	const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '';
	return { path: path.replace(/\/+$/, ''), parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(location.search) };
}

export function navigate(to, { replace = false } = {}) {
	const url = to.startsWith('/') ? to : BASE + to;
	if (replace) history.replaceState(null, '', url); else history.pushState(null, '', url);
	listeners.forEach((fn) => fn());
	window.scrollTo(0, 0);
}

// setQuery changes query parameters of the current route (filters, pages)
// without a new history entry.
export function setQuery(changes) {
	const q = new URLSearchParams(location.search);
	for (const [k, v] of Object.entries(changes)) {
		if (v === undefined || v === null || v === '') q.delete(k); else q.set(k, String(v));
	}
	const s = q.toString();
	history.replaceState(null, '', location.pathname + (s ? '?' + s : ''));
	listeners.forEach((fn) => fn());
}

export function useRoute() {
	const [route, set] = useState(currentRoute);
	useEffect(() => {
		const fn = () => set(currentRoute());
		listeners.add(fn);
		window.addEventListener('popstate', fn);
		return () => { listeners.delete(fn); window.removeEventListener('popstate', fn); };
	}, []);
	return route;
}

// href makes a console URL from path segments (each one escaped).
export function href(...parts) {
	return BASE + parts.map((p) => encodeURIComponent(String(p))).join('/');
}

// linkClick makes plain <a href> clicks navigate inside the app.
export function linkClick(e) {
	const a = e.target.closest && e.target.closest('a[href]');
	if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
	if (a.target || a.hasAttribute('download') || a.origin !== location.origin || !a.pathname.startsWith(BASE)) return;
	if (a.pathname === BASE + 'login') return;
	e.preventDefault();
	navigate(a.pathname + a.search);
}
