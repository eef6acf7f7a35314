// Shared bits of the training-job pages: the status of a job, metric
// series from GET …/metrics, and the tar archive a folder upload sends to
// POST /api/v1/training-jobs/code (the CLI's request format).
import { html } from '../js/lib.js';
import { Badge } from '../js/ui.js';

export const TERMINAL = ['Completed', 'Failed', 'Terminated', 'Abnormal'];
export const PHASES = ['Creating', 'Pending', 'Running', 'Completed', 'Failed', 'Terminating', 'Terminated', 'Abnormal'];

export function isTerminal(job) {
	return !!(job && job.status && TERMINAL.includes(job.status.phase));
}

export function JobStatus({ job }) {
	const st = job.status || {};
	const sec = st.secondary_phase && st.secondary_phase !== st.phase ? st.secondary_phase : '';
	return html`<span class="job-status"><${Badge} status=${st.phase} />${sec && html` <span class="muted">${sec}</span>`}</span>`;
}

// runningTime is the job's running time in ms: the ended attempts' and,
// while it runs, the current one's.
export function runningTime(job, now = Date.now()) {
	const st = job.status || {};
	let d = st.duration || 0;
	const recs = st.running_records || [];
	const last = recs[recs.length - 1];
	if (st.phase === 'Running' && last && !last.end_at) d += Math.max(0, now - last.start_at * 1000);
	return d;
}

// seriesOf groups metric samples by metric name: {name: {x: [], y: []}},
// x being the step (the sample's index when it has none) or, with byTime,
// the time in seconds (uPlot's time unit).
export function seriesOf(samples, byTime = false) {
	const out = {};
	const counters = {};
	for (const s of samples) {
		for (const [name, v] of Object.entries(s.values || {})) {
			const ser = out[name] || (out[name] = { x: [], y: [] });
			counters[name] = (counters[name] || 0) + 1;
			let x;
			if (byTime) x = s.time / 1000;
			else x = s.step !== undefined && s.step !== null ? s.step : counters[name] - 1;
			ser.x.push(x);
			ser.y.push(v);
		}
	}
	// uPlot needs ascending x; steps may restart on a retry: keep the last
	// value of each x, in x order.
	for (const ser of Object.values(out)) {
		let sorted = true;
		for (let i = 1; i < ser.x.length; i++) if (ser.x[i] <= ser.x[i - 1]) { sorted = false; break; }
		if (sorted) continue;
		const m = new Map();
		ser.x.forEach((x, i) => m.set(x, ser.y[i]));
		const xs = Array.from(m.keys()).sort((a, b) => a - b);
		ser.x = xs;
		ser.y = xs.map((x) => m.get(x));
	}
	return out;
}

// ---- tar (ustar) of a folder picked with <input webkitdirectory> ----

const enc = new TextEncoder();

function octal(n, len) {
	return n.toString(8).padStart(len - 1, '0') + '\0';
}

function putString(buf, off, len, s) {
	const b = typeof s === 'string' ? enc.encode(s) : s;
	buf.set(b.subarray(0, len), off);
}

// splitName splits a path for the ustar name (100 bytes) and prefix (155)
// fields; null when it does not fit.
function splitName(path) {
	const b = enc.encode(path);
	if (b.length <= 100) return ['', path];
	for (let i = path.length - 1; i > 0; i--) {
		if (path[i] !== '/') continue;
		const pre = path.slice(0, i);
		const name = path.slice(i + 1);
		if (enc.encode(pre).length <= 155 && enc.encode(name).length <= 100 && name) return [pre, name];
	}
	return null;
}

function header(path, size, mtime) {
	const h = new Uint8Array(512);
	const split = splitName(path);
	if (!split) throw new Error('the path ' + path + ' is too long for the upload (at most 255 bytes)');
	putString(h, 0, 100, split[1]);
	putString(h, 100, 8, octal(0o644, 8));
	putString(h, 108, 8, octal(0, 8));
	putString(h, 116, 8, octal(0, 8));
	putString(h, 124, 12, octal(size, 12));
	putString(h, 136, 12, octal(Math.floor(mtime / 1000), 12));
	putString(h, 148, 8, '        ');
	h[156] = 0x30; // '0' regular file
	putString(h, 257, 6, 'ustar\0');
	putString(h, 263, 2, '00');
	putString(h, 345, 155, split[0]);
	let sum = 0;
	for (const x of h) sum += x;
	putString(h, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
	return h;
}

// The dirs a browser upload leaves out, as the CLI's defaults do for
// caches and VCS metadata.
const SKIP = /(^|\/)(\.git|__pycache__|\.ipynb_checkpoints|\.venv)(\/|$)/;

// folderFiles are the files of a folder input: [{rel, file}] with rel
// relative to the folder, and the folder's name.
export function folderFiles(fileList) {
	const files = Array.from(fileList || []);
	if (files.length === 0) return { name: '', files: [] };
	const first = files[0].webkitRelativePath || files[0].name;
	const name = first.includes('/') ? first.split('/')[0] : 'code';
	const out = [];
	for (const f of files) {
		const full = f.webkitRelativePath || f.name;
		const rel = full.includes('/') ? full.slice(full.indexOf('/') + 1) : full;
		if (!rel || SKIP.test(rel)) continue;
		out.push({ rel, file: f });
	}
	out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
	return { name, files: out };
}

// tarOf packs the files into a Blob (application/x-tar).
export async function tarOf(files) {
	const parts = [];
	for (const { rel, file } of files) {
		parts.push(header(rel, file.size, file.lastModified || Date.now()));
		parts.push(file);
		const pad = (512 - (file.size % 512)) % 512;
		if (pad) parts.push(new Uint8Array(pad));
	}
	parts.push(new Uint8Array(1024));
	return new Blob(parts, { type: 'application/x-tar' });
}
