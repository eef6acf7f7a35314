// Create a training job (or clone one: ?clone=ID pre-fills the form). The
// API validates: "Check" runs ?dry_run=true, and every refusal is shown
// with its code, message and hint, next to the field it names.
import { ObsPicker } from './obs-picker.js';
import { html, useState, useEffect } from '../js/lib.js';
import { get, post, request } from '../js/api.js';
import { Page, useLoad, pageState, ErrorBox, Live } from '../js/ui.js';
import { href, navigate } from '../js/router.js';
import { bytes, plural } from '../js/format.js';
import { folderFiles, tarOf } from './job-common.js';

const RETRY = 'fault-tolerance/job-retry-num';
const UNITS = ['MINUTES', 'HOURS', 'DAYS', 'SECONDS'];

function emptyForm() {
	return {
		name: '', description: '', codeMode: 'upload', codeDir: '', bootMode: 'boot', bootFile: '', command: '',
		engine: '', flavor: '', params: [], inputs: [], outputs: [], retries: '0', maxRuntime: '', unit: 'HOURS',
	};
}

// fromJob is the form of a job to clone.
function fromJob(j) {
	const a = j.algorithm;
	const f = emptyForm();
	f.name = j.metadata.name + '-copy';
	f.description = j.metadata.description || '';
	f.codeMode = a.code_dir ? 'obs' : 'upload';
	f.codeDir = a.code_dir || '';
	f.bootMode = a.command ? 'command' : 'boot';
	f.bootFile = a.boot_file || '';
	f.command = a.command || '';
	f.engine = a.engine.engine_name || '';
	f.flavor = j.spec.resource.flavor_id || '';
	f.params = (a.parameters || []).map((p) => ({ name: p.name, value: p.value }));
	f.inputs = (a.inputs || []).map((c) => c.remote.dataset
		? { name: c.name, kind: 'dataset', url: '', dataset: c.remote.dataset.name || c.remote.dataset.id, version: c.remote.dataset.version || '' }
		: { name: c.name, kind: 'obs', url: c.remote.obs ? c.remote.obs.obs_url : '', dataset: '', version: '' });
	f.outputs = (a.outputs || []).map((c) => ({ name: c.name, url: c.remote.obs ? c.remote.obs.obs_url : '' }));
	const ann = j.metadata.annotations || {};
	f.retries = ann[RETRY] || '0';
	if (j.spec.auto_stop) { f.maxRuntime = String(j.spec.auto_stop.duration); f.unit = j.spec.auto_stop.time_unit; }
	return f;
}

// toJob is the API object of the form (code_dir left out for an upload).
function toJob(f, codeDir) {
	const job = {
		kind: 'job',
		metadata: { name: f.name.trim(), description: f.description.trim() || undefined },
		algorithm: {
			code_dir: codeDir || undefined,
			boot_file: f.bootMode === 'boot' ? f.bootFile.trim() || undefined : undefined,
			command: f.bootMode === 'command' ? f.command.trim() || undefined : undefined,
			engine: { engine_name: f.engine },
			parameters: f.params.filter((p) => p.name.trim()).map((p) => ({ name: p.name.trim(), value: p.value })),
			inputs: f.inputs.filter((c) => c.name.trim()).map((c) => ({
				name: c.name.trim(),
				remote: c.kind === 'dataset' ? { dataset: { name: c.dataset, version: c.version || undefined } } : { obs: { obs_url: c.url.trim() } },
			})),
			outputs: f.outputs.filter((c) => c.name.trim()).map((c) => ({ name: c.name.trim(), remote: { obs: { obs_url: c.url.trim() } } })),
		},
		spec: { resource: { flavor_id: f.flavor || undefined } },
	};
	const r = parseInt(f.retries, 10);
	if (r > 0) job.metadata.annotations = { [RETRY]: String(r) };
	if (f.maxRuntime.trim()) job.spec.auto_stop = { time_unit: f.unit, duration: Number(f.maxRuntime) };
	return job;
}

// fieldOf is the form field an API error names: the spec fields in its
// message ("field: problem"), else the field its code is about.
const FIELDS = [
	[/metadata\.name|already have a training job named/, 'name'],
	[/metadata\.annotations|retry/, 'retries'],
	[/algorithm\.code_dir|code_dir|code dir/i, 'code'],
	[/algorithm\.boot_file|boot_file|boot file/, 'boot'],
	[/algorithm\.command/, 'boot'],
	[/algorithm\.engine|engine/, 'engine'],
	[/spec\.resource|flavor/, 'flavor'],
	[/algorithm\.parameters/, 'params'],
	[/algorithm\.inputs|input/, 'inputs'],
	[/algorithm\.outputs|output/, 'outputs'],
	[/spec\.auto_stop|auto_stop/, 'runtime'],
];
const CODES = {
	'ATL.JOB.0051': 'boot', 'ATL.JOB.0052': 'inputs', 'ATL.JOB.0053': 'outputs', 'ATL.JOB.0054': 'code', 'ATL.JOB.0059': 'code',
	'ATL.JOB.0061': 'flavor', 'ATL.JOB.0063': 'name', 'ATL.JOB.0004': 'runtime',
};

function fieldErrors(err) {
	const out = {};
	if (!err || !err.message) return out;
	if (CODES[err.code]) { out[CODES[err.code]] = err.message; return out; }
	// "invalid job spec (N problems): FIELD: MSG; FIELD: MSG"
	const body = err.message.replace(/^[^:]*?:\s*/, '');
	for (const part of body.split(/;\s+/)) {
		for (const [re, f] of FIELDS) {
			if (re.test(part)) { out[f] = out[f] ? out[f] + '; ' + part : part; break; }
		}
	}
	return out;
}

function FieldError({ errors, name }) {
	const e = errors[name];
	return e ? html`<span class="field-error" id=${'err-' + name} role="alert" data-field=${name}>${e}</span>` : null;
}

function Rows({ legend, rows, onChange, render, add, errors, field }) {
	return html`<fieldset class="job-rows" aria-invalid=${errors[field] ? 'true' : undefined}>
		<legend>${legend}</legend>
		${rows.map((r, i) => html`<div class="job-row" key=${i}>${render(r, i, (v) => onChange(rows.map((x, k) => (k === i ? { ...x, ...v } : x))))}
			<button type="button" data-testid=${'remove-' + field + '-' + i} onClick=${() => onChange(rows.filter((_, k) => k !== i))} aria-label=${'remove ' + legend.toLowerCase() + ' ' + (i + 1)}>Remove</button></div>`)}
		<button type="button" data-testid=${'add-' + field} onClick=${() => onChange([...rows, add()])}>Add ${legend.toLowerCase().replace(/s$/, '')}</button>
		<${FieldError} errors=${errors} name=${field} />
	</fieldset>`;
}

function DatasetPicker({ row, i, set }) {
	const ds = useLoad(() => get('/api/v1/datasets', { limit: 100 }).catch((e) => (e.status === 503 ? { items: [] } : Promise.reject(e))), []);
	const pick = ((ds.data && ds.data.items) || []).find((d) => d.dataset_name === row.dataset || d.dataset_id === row.dataset);
	const one = useLoad(() => (pick ? get('/api/v1/datasets/' + encodeURIComponent(pick.dataset_id)) : Promise.resolve(null)), [pick && pick.dataset_id]);
	const versions = (one.data && one.data.versions) || [];
	return html`
		<label class="field" for=${'in-ds-' + i}>Dataset
			<select id=${'in-ds-' + i} value=${row.dataset} onChange=${(e) => set({ dataset: e.target.value, version: '' })}>
				<option value="">choose…</option>
				${((ds.data && ds.data.items) || []).map((d) => html`<option value=${d.dataset_name}>${d.dataset_name}</option>`)}
			</select></label>
		<label class="field" for=${'in-ver-' + i}>Version
			<select id=${'in-ver-' + i} value=${row.version} onChange=${(e) => set({ version: e.target.value })}>
				<option value="">latest</option>
				${versions.map((v) => html`<option value=${v.version_name}>${v.version_name}${v.status && v.status !== 'normal' ? ' (' + v.status + ')' : ''}</option>`)}
			</select></label>`;
}

export default function JobNew({ route }) {
	const clone = route.query.get('clone') || '';
	const engines = useLoad(() => get('/api/v1/training-job-engines'), []);
	const flavors = useLoad(() => get('/api/v1/training-job-flavors'), []);
	const source = useLoad(() => (clone ? get('/api/v1/training-jobs/' + encodeURIComponent(clone)) : Promise.resolve(null)), [clone]);
	const [f, setF] = useState(emptyForm);
	const [files, setFiles] = useState({ name: '', files: [] });
	const [error, setError] = useState(null);
	const [errors, setErrors] = useState({});
	const [busy, setBusy] = useState('');
	const [checked, setChecked] = useState('');
	// The page is ready once the clone's form is filled, not when the job
	// arrives: what is typed before the fill would be replaced by it.
	const [filledFrom, setFilledFrom] = useState(null);
	useEffect(() => { if (source.data) { setF(fromJob(source.data)); setFilledFrom(source.data); } }, [source.data]);
	useEffect(() => {
		setF((x) => ({
			...x,
			engine: x.engine || (engines.data && engines.data.items[0] ? engines.data.items[0].engine_name : ''),
			flavor: x.flavor || (flavors.data && flavors.data.items[0] ? flavors.data.items[0].flavor_id : ''),
		}));
	}, [engines.data, flavors.data]);
	const set = (k) => (e) => { setF({ ...f, [k]: e.target.value }); setChecked(''); };
	const fail = (e) => { setError(e); setErrors(fieldErrors(e)); setChecked(''); };
	const precheck = () => {
		if (f.codeMode === 'upload' && files.files.length === 0) {
			const e = { code: 'form', message: 'choose the folder with your training code (or give an OBS code dir)', hint: '' };
			setError(e); setErrors({ code: e.message });
			return false;
		}
		return true;
	};
	const dryRun = async () => {
		const upload = f.codeMode === 'upload';
		return post('/api/v1/training-jobs', toJob(f, upload ? '' : f.codeDir.trim()), { params: { dry_run: 'true', code_upload: upload ? 'true' : undefined } });
	};
	const check = async () => {
		setError(null); setErrors({}); setChecked('');
		if (!precheck()) return;
		setBusy('Checking…');
		try { await dryRun(); setChecked('The job is valid: nothing was created.'); } catch (e) { fail(e); } finally { setBusy(''); }
	};
	const submit = async (ev) => {
		ev.preventDefault();
		setError(null); setErrors({}); setChecked('');
		if (!precheck()) return;
		try {
			let codeDir = f.codeDir.trim();
			if (f.codeMode === 'upload') {
				setBusy('Checking…');
				await dryRun();
				setBusy('Uploading ' + plural(files.files.length, 'file') + '…');
				const tar = await tarOf(files.files);
				const up = await request('POST', '/api/v1/training-jobs/code', tar, { params: { name: files.name }, headers: { 'Content-Type': 'application/x-tar' } });
				codeDir = up.code_dir;
			}
			setBusy('Creating…');
			const j = await post('/api/v1/training-jobs', toJob(f, codeDir));
			navigate(href('jobs', j.metadata.id));
		} catch (e) { fail(e); } finally { setBusy(''); }
	};
	const onFolder = (e) => {
		const ff = folderFiles(e.target.files);
		setFiles(ff);
		setChecked('');
		if (!f.bootFile && f.bootMode === 'boot') {
			const py = ff.files.map((x) => x.rel).filter((r) => r.endsWith('.py'));
			const guess = py.find((r) => /^(train|main|run)\.py$/.test(r)) || py[0];
			if (guess) setF((x) => ({ ...x, bootFile: guess }));
		}
	};
	const size = files.files.reduce((n, x) => n + x.file.size, 0);
	const pyFiles = files.files.map((x) => x.rel).filter((r) => r.endsWith('.py')).slice(0, 200);
	const inv = (k) => (errors[k] ? 'true' : undefined);
	const state = source.data && filledFrom !== source.data ? 'loading' : pageState(engines, flavors, source);
	return html`<${Page} name="job-new" title=${clone ? 'Clone a training job' : 'New training job'} state=${state} error=${engines.error || flavors.error || source.error}>
		<p><a href=${href('jobs')}>All training jobs</a></p>
		<form class="job-form panel" onSubmit=${submit} novalidate aria-describedby="job-form-error">
			<div id="job-form-error"><${ErrorBox} error=${error} /></div>
			<div class="grid2">
				<label class="field" for="job-name">Name
					<input id="job-name" value=${f.name} onInput=${set('name')} required aria-invalid=${inv('name')} autocomplete="off" />
					<${FieldError} errors=${errors} name="name" /></label>
				<label class="field" for="job-description">Description
					<input id="job-description" value=${f.description} onInput=${set('description')} /></label>
			</div>
			<fieldset aria-invalid=${inv('code')}><legend>Code</legend>
				<label class="inline" for="code-upload"><input type="radio" id="code-upload" name="code-mode" checked=${f.codeMode === 'upload'} onChange=${() => setF({ ...f, codeMode: 'upload' })} /> Upload a folder</label>
				<label class="inline" for="code-obs"><input type="radio" id="code-obs" name="code-mode" checked=${f.codeMode === 'obs'} onChange=${() => setF({ ...f, codeMode: 'obs' })} /> A code dir in OBS</label>
				${f.codeMode === 'upload'
					? html`<label class="field" for="job-code-files">Folder
						<input id="job-code-files" type="file" webkitdirectory="" directory="" multiple onChange=${onFolder} />
						<span class="help" data-testid="code-summary" data-files=${files.files.length}>${files.files.length ? files.name + ': ' + plural(files.files.length, 'file') + ', ' + bytes(size) + ' (.git and __pycache__ left out)' : 'Uploaded when the job is created, after the rest of the job was checked.'}</span></label>`
					: html`<label class="field" for="job-code-dir">OBS code dir
						<input id="job-code-dir" value=${f.codeDir} onInput=${set('codeDir')} placeholder="obs://bucket/code/" aria-invalid=${inv('code')} /></label>`}
				<${FieldError} errors=${errors} name="code" />
				<label class="inline" for="boot-boot"><input type="radio" id="boot-boot" name="boot-mode" checked=${f.bootMode === 'boot'} onChange=${() => setF({ ...f, bootMode: 'boot' })} /> Boot file</label>
				<label class="inline" for="boot-command"><input type="radio" id="boot-command" name="boot-mode" checked=${f.bootMode === 'command'} onChange=${() => setF({ ...f, bootMode: 'command' })} /> Command</label>
				${f.bootMode === 'boot'
					? html`<label class="field" for="job-boot-file">Boot file (relative to the code dir)
						<input id="job-boot-file" value=${f.bootFile} onInput=${set('bootFile')} list="job-py-files" placeholder="train.py" aria-invalid=${inv('boot')} />
						<datalist id="job-py-files">${pyFiles.map((p) => html`<option value=${p} />`)}</datalist></label>`
					: html`<label class="field" for="job-command">Command (run with /bin/sh -c in the code dir)
						<input id="job-command" value=${f.command} onInput=${set('command')} aria-invalid=${inv('boot')} /></label>`}
				<${FieldError} errors=${errors} name="boot" />
			</fieldset>
			<div class="grid2">
				<label class="field" for="job-engine">Engine
					<select id="job-engine" value=${f.engine} onChange=${set('engine')} aria-invalid=${inv('engine')}>
						${((engines.data && engines.data.items) || []).map((e) => html`<option value=${e.engine_name}>${e.engine_name}${e.engine_version ? ' ' + e.engine_version : ''}</option>`)}
					</select><${FieldError} errors=${errors} name="engine" /></label>
				<label class="field" for="job-flavor">Flavor
					<select id="job-flavor" value=${f.flavor} onChange=${set('flavor')} aria-invalid=${inv('flavor')}>
						${((flavors.data && flavors.data.items) || []).map((x) => html`<option value=${x.flavor_id}>${x.flavor_id} · ${x.cpu} CPU, ${bytes(x.memory)}${x.gpu ? ', ' + x.gpu + ' GPU' : ''}</option>`)}
					</select><${FieldError} errors=${errors} name="flavor" /></label>
			</div>
			<${Rows} legend="Parameters" field="params" errors=${errors} rows=${f.params} onChange=${(params) => setF({ ...f, params })} add=${() => ({ name: '', value: '' })}
				render=${(r, i, upd) => html`
					<label class="field" for=${'param-name-' + i}>Name <input id=${'param-name-' + i} value=${r.name} onInput=${(e) => upd({ name: e.target.value })} placeholder="lr" /></label>
					<label class="field" for=${'param-value-' + i}>Value <input id=${'param-value-' + i} value=${r.value} onInput=${(e) => upd({ value: e.target.value })} placeholder="0.01" /></label>`} />
			<${Rows} legend="Inputs" field="inputs" errors=${errors} rows=${f.inputs} onChange=${(inputs) => setF({ ...f, inputs })} add=${() => ({ name: 'data_url', kind: 'obs', url: '', dataset: '', version: '' })}
				render=${(r, i, upd) => html`
					<label class="field" for=${'in-name-' + i}>Name <input id=${'in-name-' + i} value=${r.name} onInput=${(e) => upd({ name: e.target.value })} /></label>
					<label class="field" for=${'in-kind-' + i}>From
						<select id=${'in-kind-' + i} value=${r.kind} onChange=${(e) => upd({ kind: e.target.value })}><option value="obs">OBS path</option><option value="dataset">Dataset version</option></select></label>
					${r.kind === 'obs'
						? html`<label class="field" for=${'in-url-' + i}>OBS path <input id=${'in-url-' + i} value=${r.url} onInput=${(e) => upd({ url: e.target.value })} placeholder="obs://bucket/data/" /></label>
							<${ObsPicker} id=${'in-browse-' + i} value=${r.url} files=${true} onPick=${(url) => upd({ url })} />`
						: html`<${DatasetPicker} row=${r} i=${i} set=${upd} />`}`} />
			<${Rows} legend="Outputs" field="outputs" errors=${errors} rows=${f.outputs} onChange=${(outputs) => setF({ ...f, outputs })} add=${() => ({ name: 'train_url', url: '' })}
				render=${(r, i, upd) => html`
					<label class="field" for=${'out-name-' + i}>Name <input id=${'out-name-' + i} value=${r.name} onInput=${(e) => upd({ name: e.target.value })} /></label>
					<label class="field" for=${'out-url-' + i}>OBS path <input id=${'out-url-' + i} value=${r.url} onInput=${(e) => upd({ url: e.target.value })} placeholder="obs://bucket/output/" /></label>
					<${ObsPicker} id=${'out-browse-' + i} value=${r.url} onPick=${(url) => upd({ url })} />`} />
			<div class="grid3">
				<label class="field" for="job-retries">Retries on failure
					<input id="job-retries" type="number" min="0" max="10" value=${f.retries} onInput=${set('retries')} aria-invalid=${inv('retries')} />
					<${FieldError} errors=${errors} name="retries" /></label>
				<label class="field" for="job-max-runtime">Max running time
					<input id="job-max-runtime" type="number" min="1" value=${f.maxRuntime} onInput=${set('maxRuntime')} placeholder="none" aria-invalid=${inv('runtime')} />
					<${FieldError} errors=${errors} name="runtime" /></label>
				<label class="field" for="job-runtime-unit">Unit
					<select id="job-runtime-unit" value=${f.unit} onChange=${set('unit')}>${UNITS.map((u) => html`<option value=${u}>${u.toLowerCase()}</option>`)}</select></label>
			</div>
			<div class="actions">
				<button type="button" onClick=${check} disabled=${!!busy} data-testid="check">Check</button>
				<button type="submit" class="primary" disabled=${!!busy} data-testid="create">Create</button>
			</div>
			<${Live} text=${busy || checked} />
		</form>
	</${Page}>`;
}
