// Labeling: the queue of unlabelled samples (or of those with a proposal),
// filtered on the server; classification tags and bounding boxes drawn
// with a pointer (mouse, pen, touch) or the keyboard; auto-labeling
// proposals to accept or reject; publish the draft as a new version.
//
// Keys: 1–9 pick a class (classification: toggle the tag; detection: the
// class of new boxes, and of the selected box); N adds a box of the
// class (half the image, centred, selected); [ and ] select the previous
// and next box; with a box selected the arrows move it and Shift+arrows
// move its right or bottom edge, by 1 % of the image (at least a pixel);
// Delete removes the selected box; Enter (or →, with no box selected)
// saves and opens the next sample of the queue; Esc drops the selection.
import { html, useState, useEffect, useRef } from '../js/lib.js';
import { get, post, put, del } from '../js/api.js';
import { href, setQuery } from '../js/router.js';
import { Page, useLoad, pageState, ErrorBox, Field, Badge } from '../js/ui.js';
import { number, plural } from '../js/format.js';
import { dsPath, imageURL, Boxes, labelsOf, published, Publish } from './dataset-common.js';

const QUEUE = 50;

const clone = (a) => ({ tags: [...((a && a.tags) || [])], boxes: ((a && a.boxes) || []).map((b) => ({ ...b })) });
const typing = (el) => el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable);

export default function LabelPage({ route, id }) {
	const mode = route.query.get('queue') === 'proposed' ? 'proposed' : 'unlabeled';
	const want = route.query.get('sample') || '';
	const filter = mode === 'proposed' ? { proposed: true } : { labeled: false };
	const ds = useLoad(() => get(dsPath(id)), [id]);
	const queue = useLoad(() => get(dsPath(id, 'samples'), { ...filter, limit: QUEUE }), [id, mode]);
	const [cur, setCur] = useState(undefined); // undefined: not chosen yet; null: the queue is empty
	const [curErr, setCurErr] = useState(null);
	const [edit, setEdit] = useState({ tags: [], boxes: [] });
	const [dirty, setDirty] = useState(false);
	const [added, setAdded] = useState([]);
	const [active, setActive] = useState(0);
	const [sel, setSel] = useState(-1);
	const [size, setSize] = useState(null);
	const [drag, setDrag] = useState(null);
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState(null);
	const [saved, setSaved] = useState('');
	const [newClass, setNewClass] = useState('');
	const imgRef = useRef(null);
	const stageRef = useRef(null);

	const d = ds.data;
	const detection = d && d.dataset_type === 'object_detection';
	const current = d && (d.versions || []).find(published);
	const classes = [...new Set([...((current && current.classes) || []), ...added, ...labelsOf(edit), ...(cur && cur.proposal ? labelsOf(cur.proposal) : [])])];

	// Every label seen in this session stays a class to pick.
	const remember = (labels) => { if (labels.length) setAdded((a) => [...new Set([...a, ...labels])]); };
	const open = (s) => {
		if (s) remember([...labelsOf(s.annotations), ...(s.proposal ? labelsOf(s.proposal) : [])]);
		setCur(s); setSize(null); setSel(-1); setDrag(null); setDirty(false); setError(null);
		setEdit(clone(s && s.annotations));
		setQuery({ sample: s ? s.sample_id : '' });
	};

	// The first sample: the one the URL names, else the queue's first.
	useEffect(() => {
		if (cur !== undefined || !queue.data) return;
		if (want) {
			get(dsPath(id, 'samples', want)).then(open, (e) => { setCurErr(e); open(queue.data.samples[0] || null); });
		} else open(queue.data.samples[0] || null);
	}, [queue.data, want]);

	// next opens the queue's sample after the current one (from the start
	// when none is after it), asked of the server.
	const next = async (from) => {
		const after = from ? from.key : '';
		let page = await get(dsPath(id, 'samples'), { ...filter, after, limit: 1 });
		if (!page.samples.length && after) page = await get(dsPath(id, 'samples'), { ...filter, limit: 1 });
		const s = page.samples[0] || null;
		open(s);
		queue.reload();
	};

	const save = async () => {
		if (!cur || busy) return;
		setBusy(true); setError(null);
		try {
			if (dirty) {
				const empty = !edit.tags.length && !edit.boxes.length;
				const body = detection ? { boxes: edit.boxes } : { tags: edit.tags };
				await (empty ? del(dsPath(id, 'samples', cur.sample_id, 'annotations')) : put(dsPath(id, 'samples', cur.sample_id, 'annotations'), body));
				setSaved(cur.key);
			}
			await next(cur);
			ds.reload();
		} catch (e) { setError(e); } finally { setBusy(false); }
	};

	const decide = async (accept) => {
		setBusy(true); setError(null);
		try {
			const s = await post(dsPath(id, 'samples', cur.sample_id, 'proposal'), { accept });
			remember(labelsOf(s.annotations));
			setSaved(accept ? s.key : '');
			if (accept) await next(s); else { open(s); queue.reload(); }
			ds.reload();
		} catch (e) { setError(e); } finally { setBusy(false); }
	};

	const change = (e) => { setEdit(e); setDirty(true); };
	const round = (v) => Math.round(v * 100) / 100;
	const pickClass = (i) => {
		const c = classes[i];
		if (c === undefined) return;
		setActive(i);
		if (!detection) {
			const tags = edit.tags.includes(c) ? edit.tags.filter((t) => t !== c) : [...edit.tags, c];
			change({ ...edit, tags });
		} else if (sel >= 0) {
			change({ ...edit, boxes: edit.boxes.map((b, j) => (j === sel ? { ...b, label: c } : b)) });
		}
	};
	const removeBox = () => {
		if (sel < 0) return;
		change({ ...edit, boxes: edit.boxes.filter((_, j) => j !== sel) });
		setSel(-1);
	};

	// Boxes by keyboard: a new one of the active class, the selection
	// moved along the boxes, the selected box moved or resized.
	const newBox = () => {
		const c = classes[active];
		if (!c || !size) return;
		const b = { label: c, xmin: round(size.w / 4), ymin: round(size.h / 4), xmax: round((size.w * 3) / 4), ymax: round((size.h * 3) / 4) };
		const out = { ...edit, boxes: [...edit.boxes, b] };
		change(out);
		setSel(out.boxes.length - 1);
	};
	const cycle = (d) => {
		const n = edit.boxes.length;
		if (n) setSel(sel < 0 ? (d > 0 ? 0 : n - 1) : (sel + d + n) % n);
	};
	const nudge = (dx, dy, edge) => {
		if (sel < 0 || !size) return;
		const sx = dx * Math.max(1, Math.round(size.w / 100));
		const sy = dy * Math.max(1, Math.round(size.h / 100));
		change({ ...edit, boxes: edit.boxes.map((b, j) => {
			if (j !== sel) return b;
			if (edge) {
				return { ...b, xmax: round(Math.min(size.w, Math.max(b.xmin + 1, b.xmax + sx))), ymax: round(Math.min(size.h, Math.max(b.ymin + 1, b.ymax + sy))) };
			}
			const mx = Math.min(Math.max(sx, -b.xmin), size.w - b.xmax);
			const my = Math.min(Math.max(sy, -b.ymin), size.h - b.ymax);
			return { ...b, xmin: round(b.xmin + mx), xmax: round(b.xmax + mx), ymin: round(b.ymin + my), ymax: round(b.ymax + my) };
		}) });
	};
	const arrows = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

	// Keyboard shortcuts, anywhere on the page but in a text field.
	const keys = useRef(null);
	keys.current = (e) => {
		if (typing(e.target) || e.ctrlKey || e.metaKey || e.altKey || !cur) return;
		if (document.querySelector('dialog[open]')) return;
		const onControl = e.target && (e.target.tagName === 'BUTTON' || e.target.tagName === 'A');
		if (detection) {
			if (sel >= 0 && arrows[e.key]) { e.preventDefault(); nudge(...arrows[e.key], e.shiftKey); return; }
			if (e.key === 'n' || e.key === 'N') { e.preventDefault(); newBox(); return; }
			if (e.key === '[' || e.key === ']') { e.preventDefault(); cycle(e.key === ']' ? 1 : -1); return; }
		}
		if (/^[1-9]$/.test(e.key)) { e.preventDefault(); pickClass(Number(e.key) - 1); } else if (e.key === 'Delete' || e.key === 'Backspace') { e.preventDefault(); removeBox(); } else if ((e.key === 'Enter' && !onControl) || e.key === 'ArrowRight') { e.preventDefault(); save(); } else if (e.key === 'Escape') setSel(-1);
	};
	useEffect(() => {
		const fn = (e) => keys.current(e);
		document.addEventListener('keydown', fn);
		return () => document.removeEventListener('keydown', fn);
	}, []);

	// Drawing: a drag over the image (mouse, pen or finger) makes a box of
	// the active class, in the image's own pixels.
	const at = (e) => {
		const r = imgRef.current.getBoundingClientRect();
		const x = Math.min(Math.max(e.clientX - r.left, 0), r.width);
		const y = Math.min(Math.max(e.clientY - r.top, 0), r.height);
		return { x: (x / r.width) * size.w, y: (y / r.height) * size.h, px: r.width / size.w };
	};
	const down = (e) => {
		if (e.button !== 0 || !size) return;
		e.preventDefault();
		if (stageRef.current) stageRef.current.focus();
		setSel(-1);
		if (!detection) return;
		const p = at(e);
		let box = { x0: p.x, y0: p.y, x1: p.x, y1: p.y, px: p.px };
		setDrag(box);
		const move = (ev) => { const q = at(ev); box = { ...box, x1: q.x, y1: q.y }; setDrag(box); };
		const up = (ev) => {
			window.removeEventListener('pointermove', move);
			window.removeEventListener('pointerup', up);
			window.removeEventListener('pointercancel', up);
			if (ev.type === 'pointercancel') { setDrag(null); return; }
			const q = at(ev);
			box = { ...box, x1: q.x, y1: q.y };
			setDrag(null);
			const c = classes[active];
			// At least 4 screen pixels each way: a click is not a box.
			if (!c || Math.abs(box.x1 - box.x0) * box.px < 4 || Math.abs(box.y1 - box.y0) * box.px < 4) return;
			const b = { label: c, xmin: round(Math.min(box.x0, box.x1)), ymin: round(Math.min(box.y0, box.y1)), xmax: round(Math.max(box.x0, box.x1)), ymax: round(Math.max(box.y0, box.y1)) };
			if (b.xmin >= b.xmax || b.ymin >= b.ymax) return;
			const out = { ...edit, boxes: [...edit.boxes, b] };
			change(out);
			setSel(out.boxes.length - 1);
		};
		window.addEventListener('pointermove', move);
		window.addEventListener('pointerup', up);
		window.addEventListener('pointercancel', up);
	};

	const addClass = (e) => {
		e.preventDefault();
		const c = newClass.trim();
		if (!c) return;
		const all = classes.includes(c) ? classes : [...classes, c];
		if (!classes.includes(c)) setAdded([...added, c]);
		setActive(all.indexOf(c));
		setNewClass('');
	};

	let state = pageState(ds, queue);
	if (state === 'ready' && cur === undefined) state = 'loading';
	const q = (queue.data && queue.data.samples) || [];
	const draftBox = drag && size ? [{ label: classes[active] || '', xmin: Math.min(drag.x0, drag.x1), ymin: Math.min(drag.y0, drag.y1), xmax: Math.max(drag.x0, drag.x1), ymax: Math.max(drag.y0, drag.y1) }] : null;
	const pr = cur && cur.proposal;
	return html`<${Page} name="dataset-label" title=${`Label ${d ? d.dataset_name : ''}`} state=${state} error=${ds.error || queue.error}>
		<nav class="ds-crumbs" aria-label="breadcrumb"><a href=${href('datasets')}>Datasets</a> / <a href=${href('datasets', id)}>${d ? d.dataset_name : id}</a> / label</nav>
		<div class="toolbar" role="group" aria-label="queue">
			<a class=${'button' + (mode === 'unlabeled' ? ' primary' : '')} aria-current=${mode === 'unlabeled' ? 'true' : undefined} href=${href('datasets', id, 'label')}>Unlabelled</a>
			<a class=${'button' + (mode === 'proposed' ? ' primary' : '')} aria-current=${mode === 'proposed' ? 'true' : undefined} href=${href('datasets', id, 'label') + '?queue=proposed'}>With a proposal</a>
			<span class="grow"></span>
			${d && d.draft && html`<span class="muted" data-draft-labels=${d.draft.labels}>Draft: ${plural(d.draft.labels, 'label')}, ${plural(d.draft.proposals, 'proposal')}</span>`}
		</div>
		${curErr && html`<${ErrorBox} error=${curErr} />`}
		<div class="ds-label">
			<div class="ds-work">
				${cur === null && html`<p class="notice ds-done" role="status">The queue is empty: every sample has a label${mode === 'proposed' ? ' or no proposal' : ''}. Publish a new version below.</p>
					${saved && html`<p class="muted ds-saved" data-saved=${saved}>Saved ${saved}.</p>`}`}
				${cur && html`<div class="ds-current">
					<div class="toolbar"><strong class="grow ds-key">${cur.key}</strong>
						${cur.labeled && html`<${Badge} status="info" text=${'label from ' + cur.label_source} />`}
						${dirty && html`<${Badge} status="WAIT" text="not saved" />`}</div>
					<div ref=${stageRef} class=${'ds-stage ds-large' + (detection ? ' ds-draw' : '')} tabindex="0" data-sample-key=${cur.key}
						data-boxes=${edit.boxes.length} data-loaded=${size ? 'true' : 'false'}
						aria-label=${detection ? 'the image: drag to draw a box of the selected class, or press N' : 'the image'} onPointerDown=${down}>
						<img ref=${imgRef} src=${imageURL(id, cur.sample_id)} alt=${cur.key} draggable="false"
							onLoad=${(e) => setSize({ w: e.target.naturalWidth, h: e.target.naturalHeight })} />
						${size && html`<${Boxes} boxes=${edit.boxes} w=${size.w} h=${size.h} selected=${sel} onSelect=${setSel} />`}
						${size && pr && html`<${Boxes} boxes=${pr.boxes} w=${size.w} h=${size.h} kind="proposal" />`}
						${size && draftBox && html`<${Boxes} boxes=${draftBox} w=${size.w} h=${size.h} kind="draft" />`}
					</div>
					${!detection && html`<p class="ds-tags" aria-live="polite">Tags: ${edit.tags.length ? edit.tags.map((t) => html`<${Badge} status="ok" text=${t} /> `) : html`<span class="muted">none</span>`}</p>`}
					${detection && html`<p class="muted">${plural(edit.boxes.length, 'box', 'boxes')}${sel >= 0 ? ` — box ${sel + 1} selected (arrows move it, Shift+arrows resize it, Delete removes it)` : ''}</p>`}
					${pr && html`<div class="panel ds-proposal" data-proposal=${labelsOf(pr).join(',')}>
						<strong>Proposal</strong> from service <code>${pr.service_id}</code>, ${Math.round(pr.confidence * 100)}% sure:
						${labelsOf(pr).map((l) => html` <${Badge} status="info" text=${l} />`)}
						<div class="actions"><button class="primary ds-accept" disabled=${busy} onClick=${() => decide(true)}>Accept</button>
							<button class="ds-reject" disabled=${busy} onClick=${() => decide(false)}>Reject</button></div>
					</div>`}
					<${ErrorBox} error=${error} />
					<div class="toolbar">
						<button class="primary ds-save" disabled=${busy} onClick=${save}>${dirty ? 'Save and next' : 'Next'} <kbd>Enter</kbd></button>
						${saved && html`<span class="muted ds-saved" data-saved=${saved} role="status">Saved ${saved}.</span>`}
					</div>
				</div>`}
			</div>
			<aside class="ds-side">
				<h2>Classes</h2>
				<ol class="ds-class-list" aria-label="classes (press the number)">
					${classes.map((c, i) => html`<li><button class=${'ds-class-btn' + (i === active && detection ? ' active' : '') + (!detection && edit.tags.includes(c) ? ' on' : '')}
						data-class-index=${i} aria-pressed=${(detection ? i === active : edit.tags.includes(c)) ? 'true' : 'false'}
						onMouseDown=${(e) => e.preventDefault()} onClick=${() => pickClass(i)}>${i < 9 && html`<kbd>${i + 1}</kbd> `}${c}</button></li>`)}
				</ol>
				<form class="ds-add-class" onSubmit=${addClass} aria-label="add a class">
					<${Field} label="New class" id="ds-new-class"><input id="ds-new-class" value=${newClass} maxlength="128" onInput=${(e) => setNewClass(e.target.value)} /></${Field}>
					<button type="submit">Add class</button>
				</form>
				<p class="muted ds-keys"><kbd>1</kbd>–<kbd>9</kbd> class · ${detection ? html`drag or <kbd>N</kbd>: box · <kbd>[</kbd> <kbd>]</kbd> select a box · arrows move it, <kbd>Shift</kbd>+arrows resize it · <kbd>Delete</kbd> removes it · ` : ''}<kbd>Enter</kbd>/<kbd>→</kbd> save and next · <kbd>Esc</kbd> deselect</p>
				<h2>Queue</h2>
				<p class="muted">${q.length}${queue.data && queue.data.next ? '+' : ''} ${mode === 'proposed' ? 'with a proposal' : 'unlabelled'}</p>
				<ul class="ds-queue">${q.map((s) => html`<li key=${s.sample_id}><button class="link" aria-current=${cur && cur.sample_id === s.sample_id ? 'true' : undefined} onClick=${() => open(s)}>${s.key}</button>${s.proposal ? ' •' : ''}</li>`)}</ul>
			</aside>
		</div>
		${d && html`<${Autolabel} id=${id} onDone=${() => { queue.reload(); ds.reload(); if (cur) get(dsPath(id, 'samples', cur.sample_id)).then((s) => setCur(s), () => {}); }} />`}
		${d && html`<${Publish} id=${id} onDone=${() => ds.reload()} />`}
	</${Page}>`;
}

// Autolabel sends the unlabelled samples to a running service; its
// answers become proposals.
function Autolabel({ id, onDone }) {
	const svcs = useLoad(() => get('/api/v1/services', { limit: 100 }).catch((e) => (e.status === 503 ? { items: [] } : Promise.reject(e))), []);
	const [svc, setSvc] = useState('');
	const [threshold, setThreshold] = useState('0.5');
	const [limit, setLimit] = useState('');
	const [busy, setBusy] = useState(false);
	const [res, setRes] = useState(null);
	const [error, setError] = useState(null);
	const running = ((svcs.data && svcs.data.items) || []).filter((s) => s.status === 'running');
	const run = async (e) => {
		e.preventDefault();
		setBusy(true); setError(null); setRes(null);
		try {
			setRes(await post(dsPath(id, 'autolabel'), { service_id: svc || (running[0] && running[0].service_id), threshold: Number(threshold), limit: Number(limit) || 0 }));
			onDone();
		} catch (err) { setError(err); } finally { setBusy(false); }
	};
	return html`<details class="panel ds-autolabel"><summary>Auto-label with a deployed service</summary>
		${svcs.error && html`<${ErrorBox} error=${svcs.error} />`}
		${svcs.data && !running.length && html`<p class="muted">No service is running. Deploy a model under Services first.</p>`}
		${running.length > 0 && html`<form onSubmit=${run} aria-label="auto-label">
			<div class="grid3">
				<${Field} label="Service" id="al-service"><select id="al-service" value=${svc} onChange=${(e) => setSvc(e.target.value)}>${running.map((s) => html`<option value=${s.service_id}>${s.service_name}</option>`)}</select></${Field}>
				<${Field} label="Threshold" id="al-threshold" help="answers below it are dropped"><input id="al-threshold" type="number" min="0" max="1" step="0.01" value=${threshold} onInput=${(e) => setThreshold(e.target.value)} /></${Field}>
				<${Field} label="At most" id="al-limit" help="samples to send (empty: all)"><input id="al-limit" type="number" min="0" value=${limit} onInput=${(e) => setLimit(e.target.value)} /></${Field}>
			</div>
			<button class="primary" type="submit" disabled=${busy}>${busy ? 'Asking the service…' : 'Propose labels'}</button>
		</form>`}
		<${ErrorBox} error=${error} />
		${res && html`<p class="ds-autolabel-result" data-proposed=${res.proposed} role="status">Sent ${number(res.sent)}: ${number(res.proposed)} proposed, ${number(res.below_threshold)} below the threshold, ${number(res.failed)} failed${res.first_error ? ' (' + res.first_error + ')' : ''}.</p>`}
	</details>`;
}
