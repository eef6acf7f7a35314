// The image grid of a version: its samples of one class (or all), paged on
// the server (after/next), each image with its boxes drawn over it.
import { html, useState } from '../js/lib.js';
import { get } from '../js/api.js';
import { href, setQuery } from '../js/router.js';
import { Page, useLoad, pageState, Badge } from '../js/ui.js';
import { number } from '../js/format.js';
import { dsPath, imageURL, sampleLink, SampleImage, labelsOf } from './dataset-common.js';

const PAGE = 24;

export default function GridPage({ route, id, version }) {
	const cls = route.query.get('class') || '';
	const after = route.query.get('after') || '';
	// The cursors of the pages before this one, for "Previous".
	const [back, setBack] = useState([]);
	const ds = useLoad(() => get(dsPath(id)), [id]);
	const v = useLoad(() => get(dsPath(id, 'versions', version), { check: false }), [id, version]);
	const page = useLoad(() => get(dsPath(id, 'samples'), { version, class: cls, after, limit: PAGE }), [id, version, cls, after]);
	const x = v.data;
	const per = (x && x.per_class) || {};
	const classes = x ? [...new Set([...(x.classes || []), ...Object.keys(per)])] : [];
	const pick = (c) => { setBack([]); setQuery({ class: c, after: '' }); };
	const next = () => { setBack([...back, after]); setQuery({ after: page.data.next }); };
	const prev = () => { const b = back.slice(0, -1); setQuery({ after: back[back.length - 1] || '' }); setBack(b); };
	const samples = (page.data && page.data.samples) || [];
	return html`<${Page} name="dataset-grid" title=${`${ds.data ? ds.data.dataset_name : ''} ${version}: ${cls || 'all classes'}`}
		state=${pageState(ds, v, page)} error=${ds.error || v.error || page.error}>
		<nav class="ds-crumbs" aria-label="breadcrumb"><a href=${href('datasets')}>Datasets</a> / <a href=${href('datasets', id)}>${ds.data ? ds.data.dataset_name : id}</a>
			${' / '}<a href=${href('datasets', id, 'versions', version)}>${version}</a> / grid</nav>
		<div class="ds-classes" role="group" aria-label="classes">
			<button class=${cls === '' ? 'primary' : ''} aria-pressed=${cls === '' ? 'true' : 'false'} onClick=${() => pick('')}>All <span class="muted">${x ? number(x.total_sample_count) : ''}</span></button>
			${classes.map((c) => html`<button class=${cls === c ? 'primary' : ''} aria-pressed=${cls === c ? 'true' : 'false'} data-class=${c} onClick=${() => pick(c)}>${c} <span class="muted">${number(per[c] || 0)}</span></button>`)}
		</div>
		<div class="thumbs ds-grid" aria-label="samples" data-count=${samples.length}>
			${samples.map((s) => html`<a key=${s.sample_id} class="thumb ds-tile" data-sample-key=${s.key} href=${sampleLink(id, s.key, version)}>
				<${SampleImage} src=${imageURL(id, s.sample_id, x && x.version_id)} alt=${s.key} boxes=${s.annotations.boxes} />
				<div class="cap">${s.key}</div>
				<div class="cap">${labelsOf(s.annotations).map((l) => html`<${Badge} status="info" text=${l} /> `)}${!s.labeled && html`<span class="muted">unlabelled</span>`}</div>
			</a>`)}
		</div>
		${page.data && samples.length === 0 && html`<p class="muted">No samples${cls ? ' of this class' : ''}.</p>`}
		<nav class="pager" aria-label="pages">
			<button disabled=${!after} onClick=${prev}>Previous</button>
			<button disabled=${!(page.data && page.data.next)} onClick=${next}>Next</button>
		</nav>
	</${Page}>`;
}
