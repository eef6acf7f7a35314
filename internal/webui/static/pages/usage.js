// Usage: instance-hours and cost in a window (this week by default), per
// user, flavor and kind, the metered items (paged on the server), and what
// costs without use now: idle notebooks and services with no traffic in
// the window. Admins may see every user's.
import { html, useContext } from '../js/lib.js';
import { get } from '../js/api.js';
import { Page, useLoad, pageState, Table, Pager } from '../js/ui.js';
import { href, setQuery } from '../js/router.js';
import { time, ago } from '../js/format.js';
import { SessionContext } from '../js/session.js';

const LIMIT = 25;

// windowStart is the start of a named window, in epoch ms (0: all time).
export function windowStart(w, now = new Date()) {
	const d = new Date(now);
	d.setHours(0, 0, 0, 0);
	if (w === 'today') return d.getTime();
	if (w === 'week') { d.setDate(d.getDate() - ((d.getDay() + 6) % 7)); return d.getTime(); } // Monday
	if (w === 'month') { d.setDate(1); return d.getTime(); }
	return 0;
}

// hours formats instance-seconds as hours: two decimals, or two
// significant digits below a hundredth (a service that ran 11 s).
export const hours = (secs) => {
	const h = (secs || 0) / 3600;
	if (h === 0) return '0';
	return h < 0.01 ? String(Number(h.toPrecision(2))) : h.toLocaleString(undefined, { maximumFractionDigits: 2 });
};
const cost = (c) => (c ? c.toLocaleString(undefined, { maximumFractionDigits: c < 0.01 ? 6 : 4 }) : '0');

function Groups({ title, rows, keyLabel }) {
	return html`<section class="panel" aria-label=${title}><h2>${title}</h2>
		<${Table} label=${title} rows=${rows} empty="Nothing metered." columns=${[
			{ label: keyLabel, className: 'name', render: (g) => g.key || '–' },
			{ label: 'Instance-hours', className: 'right', render: (g) => hours(g.instance_seconds) },
			{ label: 'Cost', className: 'right', render: (g) => cost(g.cost) },
		]} /></section>`;
}

function link(it) {
	if (it.kind === 'service') return href('services', it.resource_id);
	if (it.kind === 'notebook') return href('notebooks', it.resource_id);
	return href('jobs', it.resource_id);
}

export default function Usage({ route }) {
	const session = useContext(SessionContext) || {};
	const win = route.query.get('window') || 'week';
	const all = route.query.get('all') === 'true';
	const offset = Number(route.query.get('offset') || 0);
	const since = windowStart(win);
	const u = useLoad(() => get('/api/v1/usage', { since: since || undefined, all: all || undefined, offset, limit: LIMIT }), [win, all, offset]);
	const d = u.data;
	return html`<${Page} name="usage" title="Usage" state=${pageState(u)} error=${u.error}>
		<div class="toolbar">
			<label class="inline">Window <select value=${win} onChange=${(e) => setQuery({ window: e.target.value, offset: '' })}>
				<option value="today">today</option><option value="week">this week</option><option value="month">this month</option><option value="all">all time</option>
			</select></label>
			${session.admin && html`<label class="inline"><input type="checkbox" checked=${all} onChange=${(e) => setQuery({ all: e.target.checked ? 'true' : '', offset: '' })} /> every user</label>`}
		</div>
		${d && html`
		<p class="muted">From ${d.since ? time(d.since) : 'the beginning'} to ${time(d.until)}. Cost is instance-hours × the flavor's price per hour.</p>
		<div class="cards">
			<div class="card"><div class="label">Instance-hours</div><div class="big" data-testid="instance-hours" data-seconds=${d.instance_seconds}>${hours(d.instance_seconds)}</div></div>
			<div class="card"><div class="label">Cost</div><div class="big" data-testid="total-cost">${cost(d.total_cost)}</div></div>
			<div class="card"><div class="label">Idle now</div><div class="big">${d.idle_notebooks.length + d.no_traffic.length}</div>
				<div class="label">${d.idle_notebooks.length} notebooks, ${d.no_traffic.length} services without traffic</div></div>
		</div>
		<div class="grid3">
			<${Groups} title="Per user" rows=${d.by_user} keyLabel="User" />
			<${Groups} title="Per flavor" rows=${d.by_flavor} keyLabel="Flavor" />
			<${Groups} title="Per kind" rows=${d.by_kind} keyLabel="Kind" />
		</div>
		<h2>Idle notebooks</h2>
		<${Table} label="idle notebooks" rows=${d.idle_notebooks} empty="No notebook runs idle." columns=${[
			{ label: 'Notebook', className: 'name', render: (n) => html`<a href=${href('notebooks', n.id)}>${n.name}</a>` },
			{ label: 'Owner', key: 'owner' }, { label: 'Flavor', key: 'flavor' },
			{ label: 'Idle since', render: (n) => ago(n.idle_since) },
			{ label: 'Why', key: 'reason' },
			{ label: 'Stops', render: (n) => (n.stop_at ? ago(n.stop_at) : 'never') },
			{ label: 'Cost / hour', className: 'right', render: (n) => cost(n.cost_per_hour) },
		]} />
		<h2>Services without traffic in the window</h2>
		<${Table} label="services without traffic" rows=${d.no_traffic} empty="Every running service had requests." columns=${[
			{ label: 'Service', className: 'name', render: (s) => html`<a href=${href('services', s.service_id)}>${s.name}</a>` },
			{ label: 'Owner', key: 'owner' }, { label: 'Instances', key: 'instances' },
			{ label: 'Running since', render: (s) => ago(s.running_since) },
			{ label: 'Last request', render: (s) => (s.last_request ? ago(s.last_request) : 'none seen') },
			{ label: 'Cost / hour', className: 'right', render: (s) => cost(s.cost_per_hour) },
		]} />
		<h2>Metered items</h2>
		<${Table} label="metered items" rows=${d.items} rowKey=${(it) => it.kind + it.resource_id + it.flavor} empty="Nothing ran in this window." columns=${[
			{ label: 'Kind', key: 'kind' },
			{ label: 'Name', className: 'name', render: (it) => html`<a href=${link(it)}>${it.name}</a>` },
			{ label: 'Owner', key: 'owner' }, { label: 'Flavor', key: 'flavor' },
			{ label: 'Instance-hours', className: 'right', render: (it) => html`<span data-seconds=${it.instance_seconds}>${hours(it.instance_seconds)}</span>` },
			{ label: 'Cost', className: 'right', render: (it) => cost(it.cost) },
		]} />
		<${Pager} total=${d.total} offset=${offset} limit=${LIMIT} onPage=${(o) => setQuery({ offset: o || '' })} />`}
	</${Page}>`;
}
