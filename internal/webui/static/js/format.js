// Formatters shared by every page.

export function bytes(n) {
	if (n === undefined || n === null || isNaN(n)) return '–';
	const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
	let i = 0; let v = Number(n);
	while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
	return (i === 0 ? String(v) : v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0)) + ' ' + u[i];
}

export function duration(ms) {
	if (ms === undefined || ms === null || isNaN(ms)) return '–';
	let s = Math.round(ms / 1000);
	if (ms < 1000) return ms + ' ms';
	const d = Math.floor(s / 86400); s -= d * 86400;
	const h = Math.floor(s / 3600); s -= h * 3600;
	const m = Math.floor(s / 60); s -= m * 60;
	if (d) return `${d}d ${h}h`;
	if (h) return `${h}h ${m}m`;
	if (m) return `${m}m ${s}s`;
	return `${s}s`;
}

export function time(ms) {
	if (!ms) return '–';
	const d = new Date(ms);
	return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function ago(ms, now = Date.now()) {
	if (!ms) return '–';
	const d = now - ms;
	if (d < 0) return 'in ' + duration(-d);
	if (d < 5000) return 'just now';
	return duration(d) + ' ago';
}

export function number(n, digits = 4) {
	if (n === undefined || n === null || isNaN(n)) return '–';
	if (Number.isInteger(n)) return n.toLocaleString();
	return Number(n).toPrecision(digits);
}

export function plural(n, one, many) {
	return `${Number(n).toLocaleString()} ${n === 1 ? one : (many || one + 's')}`;
}

// statusClass maps a ModelArts-style status to a badge colour.
export function statusClass(s) {
	const v = String(s || '').toUpperCase();
	if (/^(COMPLETED|RUNNING|READY|ACTIVE|PUBLISHED|SUCCEEDED|OK|NORMAL|PASS)$/.test(v)) return 'ok';
	if (/(FAIL|ERROR|ABNORMAL|LOST|KILLED|TIMEOUT|START_FAILED|DEPLOY_FAILED)/.test(v)) return 'bad';
	if (/^(STOPPED|DELETED|CANCELED|CANCELLED|TERMINATED|IDLE)$/.test(v)) return 'idle';
	if (/(PENDING|QUEUE|WAIT|CREATING|STARTING|STOPPING|DEPLOYING|DELETING|SCALING|INIT|UPDATING)/.test(v)) return 'warn';
	return 'info';
}
