// The REST API client of the console. The session is the HttpOnly cookie
// the server set at sign-in; state-changing calls add the session's CSRF
// token (from GET /api/v1/console/session, kept in memory only).

let csrf = '';
let onSignedOut = () => {};

export function setCSRF(token) { csrf = token || ''; }
export function onUnauthenticated(fn) { onSignedOut = fn; }

// ApiError carries the API's stable error code, message and hint.
export class ApiError extends Error {
	constructor(status, body) {
		super((body && body.error_msg) || `HTTP ${status}`);
		this.status = status;
		this.code = (body && body.error_code) || `HTTP.${status}`;
		this.hint = (body && body.hint) || '';
		this.requestId = (body && body.request_id) || '';
	}
}

function query(params) {
	if (!params) return '';
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(params)) {
		if (v === undefined || v === null || v === '') continue;
		if (Array.isArray(v)) v.forEach((x) => q.append(k, String(x)));
		else q.set(k, String(v));
	}
	const s = q.toString();
	return s ? '?' + s : '';
}

// request sends one API call. body: a plain object (sent as JSON), a
// FormData, a Blob/File or undefined. opts.params: query parameters;
// opts.raw: return the Response (for streams and downloads); opts.signal.
export async function request(method, path, body, opts = {}) {
	const headers = { Accept: 'application/json' };
	if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = csrf;
	let payload = body;
	if (body !== undefined && !(body instanceof FormData) && !(body instanceof Blob) && typeof body !== 'string') {
		headers['Content-Type'] = 'application/json';
		payload = JSON.stringify(body);
	}
	if (opts.headers) Object.assign(headers, opts.headers);
	const res = await fetch(path + query(opts.params), {
		method, headers, body: payload, credentials: 'same-origin', signal: opts.signal, cache: 'no-store',
	});
	if (!res.ok) {
		let b = null;
		try { b = await res.json(); } catch { /* not JSON */ }
		const err = new ApiError(res.status, b);
		if (res.status === 401 && !opts.quiet401) onSignedOut(err);
		throw err;
	}
	if (opts.raw) return res;
	if (res.status === 204) return null;
	const ct = res.headers.get('Content-Type') || '';
	return ct.includes('json') ? res.json() : res.text();
}

export const get = (path, params, opts = {}) => request('GET', path, undefined, { ...opts, params });
export const post = (path, body, opts) => request('POST', path, body === undefined ? {} : body, opts);
export const put = (path, body, opts) => request('PUT', path, body, opts);
export const patch = (path, body, opts) => request('PATCH', path, body, opts);
export const del = (path, opts) => request('DELETE', path, undefined, opts);

// lines reads a streaming response (NDJSON or text) line by line, calling
// onLine for each, until the stream ends or signal aborts.
export async function lines(path, params, onLine, signal) {
	const res = await request('GET', path, undefined, { params, raw: true, signal });
	const reader = res.body.getReader();
	const dec = new TextDecoder();
	let buf = '';
	for (;;) {
		const { value, done } = await reader.read();
		if (done) break;
		buf += dec.decode(value, { stream: true });
		let i;
		while ((i = buf.indexOf('\n')) >= 0) {
			onLine(buf.slice(0, i));
			buf = buf.slice(i + 1);
		}
	}
	if (buf) onLine(buf);
}
