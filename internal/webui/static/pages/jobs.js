// Training jobs: the list (paged, sorted and filtered on the server), and
// the sub-pages: /jobs/new (create, or clone with ?clone=ID), /jobs/compare
// (?ids=A,B,…) and /jobs/ID (detail).
import { html, useState } from '../js/lib.js';
import { get } from '../js/api.js';
import { Page, useLoad, useFollow, useModule, usePoll, pageState, Table, Pager } from '../js/ui.js';
import { href, setQuery, navigate } from '../js/router.js';
import { time, duration } from '../js/format.js';
import { JobStatus, PHASES, isTerminal, runningTime } from './job-common.js';

const LIMIT = 50;

function JobList({ route }) {
	const q = route.query;
	const name = q.get('name') || '';
	const phase = q.get('phase') || '';
	const sort = q.get('sort') || '-create_time';
	const offset = Math.max(0, parseInt(q.get('offset') || '0', 10) || 0);
	const limit = Math.min(1000, Math.max(1, parseInt(q.get('limit') || String(LIMIT), 10) || LIMIT));
	const [search, setSearch] = useFollow(name);
	const [picked, setPicked] = useState([]);
	const jobs = useLoad(() => get('/api/v1/training-jobs', { name, phase, sort, offset, limit }), [name, phase, sort, offset, limit]);
	const items = (jobs.data && jobs.data.items) || [];
	usePoll(() => jobs.reload(), items.some((j) => !isTerminal(j)) ? 5000 : 0, [jobs.reload]);
	const toggle = (j) => setPicked((p) => (p.some((x) => x.id === j.metadata.id) ? p.filter((x) => x.id !== j.metadata.id) : [...p, { id: j.metadata.id, name: j.metadata.name }]));
	const onSearch = (e) => { e.preventDefault(); setQuery({ name: search.trim(), offset: '' }); };
	const actions = html`
		<button disabled=${picked.length < 2} onClick=${() => navigate(href('jobs', 'compare') + '?ids=' + picked.map((p) => encodeURIComponent(p.id)).join(','))} data-testid="compare">Compare ${picked.length || ''}</button>
		<a class="button primary" href=${href('jobs', 'new')}>New training job</a>`;
	return html`<${Page} name="jobs" title="Training jobs" state=${pageState(jobs)} error=${jobs.error} actions=${actions}>
		<form class="job-filters" role="search" onSubmit=${onSearch}>
			<label class="field" for="job-filter-name">Name contains
				<input id="job-filter-name" type="search" value=${search} onInput=${(e) => setSearch(e.target.value)} /></label>
			<label class="field" for="job-filter-phase">Status
				<select id="job-filter-phase" value=${phase} onChange=${(e) => setQuery({ phase: e.target.value, offset: '' })}>
					<option value="">Any</option>
					${PHASES.map((p) => html`<option value=${p}>${p}</option>`)}
				</select></label>
			<button type="submit">Filter</button>
		</form>
		${picked.length > 0 && html`<p class="muted" data-testid="picked">Selected for comparison: ${picked.map((p) => p.name).join(', ')} <button class="link" onClick=${() => setPicked([])}>clear</button></p>`}
		<div data-testid="job-list" data-total=${jobs.data ? jobs.data.total : ''} data-sort=${sort} data-offset=${jobs.data ? offset : ''}>
		<${Table} label="training jobs" rows=${jobs.data && items} rowKey=${(j) => j.metadata.id} sort=${sort}
			onSort=${(s) => setQuery({ sort: s === '-create_time' ? '' : s, offset: '' })}
			empty=${name || phase ? 'No job matches.' : 'No training jobs yet.'} columns=${[
			{ label: html`<span class="sr-only">Select</span>`, className: 'pick', render: (j) => html`<input type="checkbox" aria-label=${'select ' + j.metadata.name} checked=${picked.some((p) => p.id === j.metadata.id)} onChange=${() => toggle(j)} />` },
			{ label: 'Name', sort: 'name', className: 'name', render: (j) => html`<a href=${href('jobs', j.metadata.id)}>${j.metadata.name}</a>` },
			{ label: 'Status', sort: 'status', render: (j) => html`<${JobStatus} job=${j} />` },
			{ label: 'Engine', render: (j) => j.algorithm.engine && j.algorithm.engine.engine_name },
			{ label: 'Flavor', render: (j) => j.spec.resource && j.spec.resource.flavor_id },
			{ label: 'Created', sort: 'create_time', className: 'nowrap', render: (j) => time(j.metadata.create_time) },
			{ label: 'Duration', sort: 'duration', className: 'nowrap', render: (j) => duration(runningTime(j)) },
		]} />
		</div>
		<${Pager} total=${jobs.data && jobs.data.total} offset=${offset} limit=${limit} onPage=${(o) => setQuery({ offset: o || '' })} />
	</${Page}>`;
}

// The sub-pages are loaded when first visited (the list does not wait for
// the charts' code).
const subPages = { new: ['./job-new.js', 'job-new'], compare: ['./job-compare.js', 'jobs-compare'] };
const loadedSub = new Map();

function Sub({ route, sub }) {
	const [file, page] = subPages[sub] || ['./job-detail.js', 'job'];
	const { mod, error: failed } = useModule(loadedSub, file, () => import(file));
	const error = failed && { code: 'console', message: 'The page could not be loaded: ' + failed.message, hint: 'reload the page' };
	if (error) return html`<${Page} name=${page} title="Training jobs" state="error" error=${error} />`;
	if (!mod) return html`<main id="main" class="page" data-page=${page} data-state="loading" aria-busy="true"><p class="muted">Loading…</p></main>`;
	const P = mod.default;
	return html`<${P} route=${route} id=${sub} />`;
}

export default function Jobs({ route }) {
	const sub = route.parts[1];
	if (!sub) return html`<${JobList} route=${route} />`;
	return html`<${Sub} route=${route} sub=${sub} />`;
}
