// Overview: what runs now, what waits and why, capacity in use, and usage.
import { html } from '../js/lib.js';
import { get } from '../js/api.js';
import { Page, useLoad, usePoll, pageState, Badge, Table } from '../js/ui.js';
import { href } from '../js/router.js';
import { bytes, ago, number } from '../js/format.js';
import { windowStart, hours } from './usage.js';

function amount(resource, v) {
	if (resource === 'memory') return bytes(v);
	if (resource === 'cpu') return number(v, 3) + ' cores';
	return `${v} GPU${v === 1 ? '' : 's'}`;
}

function CapacityBars({ cap }) {
	return html`<div class="cards" aria-label="capacity">${cap.resources.map((r) => {
		const pct = r.bookable ? Math.min(100, Math.round((r.requested / r.bookable) * 100)) : 0;
		return html`<div class="card" data-resource=${r.resource}>
			<div class="label">${r.resource.toUpperCase()} booked</div>
			<div class="big">${pct}%</div>
			<progress max="100" value=${pct} aria-label=${r.resource + ' booked'}></progress>
			<div class="label">${amount(r.resource, r.requested)} of ${amount(r.resource, r.bookable)}${r.used !== null && r.used !== undefined ? ` · in use ${amount(r.resource, r.used)}` : ''}</div>
		</div>`;
	})}</div>`;
}

export default function Overview() {
	const jobs = useLoad(() => get('/api/v1/training-jobs', { phase: 'Pending,Running', limit: 50 }));
	const notebooks = useLoad(() => get('/api/v1/notebooks', { limit: 100 }));
	const services = useLoad(() => get('/api/v1/services', { limit: 100 }).catch((e) => (e.status === 503 ? { items: [], total: 0 } : Promise.reject(e))));
	const cap = useLoad(() => get('/api/v1/capacity').catch((e) => (e.status === 503 ? null : Promise.reject(e))));
	// This week's usage (from Monday) and what runs idle now.
	const usage = useLoad(() => get('/api/v1/usage', { since: windowStart('week'), limit: 1 }).catch((e) => (e.status === 503 ? null : Promise.reject(e))));
	usePoll(() => { jobs.reload(); notebooks.reload(); services.reload(); cap.reload(); }, 5000);
	const state = pageState(jobs, notebooks, services, cap, usage);
	const error = jobs.error || notebooks.error || services.error || cap.error || usage.error;
	const running = [];
	for (const j of (jobs.data && jobs.data.items) || []) {
		running.push({ kind: 'Training job', name: j.metadata.name, link: href('jobs', j.metadata.id), status: j.status && j.status.phase, since: j.status && (j.status.start_time || j.metadata.create_time), why: j.status && j.status.waiting_for });
	}
	for (const n of (notebooks.data && notebooks.data.items) || []) {
		if (n.status === 'STOPPED') continue;
		running.push({ kind: 'Notebook', name: n.name, link: href('notebooks', n.id), status: n.status, since: n.create_at, why: n.waiting || (n.activity && n.activity.summary) });
	}
	for (const s of (services.data && services.data.items) || []) {
		if (s.status === 'stopped') continue;
		running.push({ kind: 'Service', name: s.service_name, link: href('services', s.service_id), status: s.status, since: s.update_time || s.create_time, why: s.error_msg });
	}
	const waiting = (cap.data && cap.data.waiting) || [];
	const u = usage.data;
	const idle = u ? u.idle_notebooks.length + u.no_traffic.length : 0;
	const waste = u ? u.idle_notebooks.reduce((a, n) => a + n.cost_per_hour, 0) + u.no_traffic.reduce((a, s) => a + s.cost_per_hour, 0) : 0;
	return html`<${Page} name="overview" title="Overview" state=${state} error=${error}>
		${cap.data && html`<h2>Capacity</h2><${CapacityBars} cap=${cap.data} />`}
		<h2>Running now</h2>
		<${Table} label="running now" rows=${running} empty="Nothing is running." columns=${[
			{ label: 'Kind', key: 'kind' },
			{ label: 'Name', className: 'name', render: (r) => html`<a href=${r.link}>${r.name}</a>` },
			{ label: 'Status', render: (r) => html`<${Badge} status=${r.status} />` },
			{ label: 'Since', render: (r) => ago(r.since) },
			{ label: 'Note', render: (r) => r.why || '' },
		]} />
		<h2>Waiting for capacity</h2>
		<${Table} label="waiting" rows=${waiting} empty="Nothing waits." columns=${[
			{ label: '#', key: 'position' },
			{ label: 'Kind', key: 'kind' },
			{ label: 'Name', className: 'name', render: (w) => w.kind === 'job' ? html`<a href=${href('jobs', w.id)}>${w.name}</a>` : w.name },
			{ label: 'Owner', key: 'owner' },
			{ label: 'Why', render: (w) => html`${w.never_fits && html`<${Badge} status="ERROR" text="never fits" /> `}${w.reason}` },
		]} />
		<h2>Usage</h2>
		${u ? html`<p data-testid="week-usage">This week: <strong>${hours(u.instance_seconds)}</strong> instance-hours in ${u.total} metered workloads${u.total_cost ? html`, cost <strong>${number(u.total_cost, 4)}</strong>` : ''}.
			${idle ? html` Idle now: ${u.idle_notebooks.length} notebooks and ${u.no_traffic.length} services without traffic${waste ? html`, costing <strong>${number(waste, 4)}</strong> per hour` : ''}.` : ' Nothing runs idle.'}
			<a href=${href('usage')}>Usage details</a></p>` : html`<p class="muted">Usage metering is not enabled.</p>`}
	</${Page}>`;
}
