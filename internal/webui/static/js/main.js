// The console's shell: session, navigation, and the page of the route.
// Pages are ES modules under /console/pages/, loaded when first visited;
// each exports default function Page({ route }).
import { html, render, useState, useEffect } from './lib.js';
import { get, del, setCSRF, onUnauthenticated } from './api.js';
import { useRoute, navigate, linkClick, BASE } from './router.js';
import { SessionContext } from './session.js';
import { ErrorBox, useModule } from './ui.js';
import SignIn from '../pages/signin.js';

export const sections = [
	{ path: '', label: 'Overview', module: 'overview' },
	{ path: 'obs', label: 'OBS', module: 'obs' },
	{ path: 'datasets', label: 'Datasets', module: 'datasets' },
	{ path: 'notebooks', label: 'Notebooks', module: 'notebooks' },
	{ path: 'jobs', label: 'Training jobs', module: 'jobs' },
	{ path: 'models', label: 'Models', module: 'models' },
	{ path: 'services', label: 'Services', module: 'services' },
	{ path: 'usage', label: 'Usage', module: 'usage' },
];

const loaded = new Map();

function Routed({ route }) {
	const section = sections.find((s) => s.path === (route.parts[0] || '')) || null;
	const { mod, error: failed } = useModule(loaded, section && section.module, () => import(`../pages/${section.module}.js`));
	const error = failed && { code: 'console', message: `The ${section.label} page could not be loaded: ${failed.message}`, hint: 'reload the page' };
	if (!section) {
		return html`<main id="main" class="page" data-page="notfound" data-state="ready"><h1>Not found</h1>
			<p>There is no console page at <code>${location.pathname}</code>.</p><p><a href=${BASE}>Go to the overview</a></p></main>`;
	}
	if (error) return html`<main id="main" class="page" data-page=${section.module} data-state="error"><${ErrorBox} error=${error} /></main>`;
	if (!mod) return html`<main id="main" class="page" data-page=${section.module} data-state="loading" aria-busy="true"><p class="muted">Loading…</p></main>`;
	const P = mod.default;
	return html`<${P} route=${route} />`;
}

function Shell({ session, onSignOut }) {
	const route = useRoute();
	const [open, setOpen] = useState(false);
	useEffect(() => setOpen(false), [route.path]);
	const here = route.parts[0] || '';
	return html`<div class="shell" onClick=${linkClick}>
		<a class="skip" href="#main">Skip to content</a>
		<nav class=${'nav' + (open ? ' open' : '')} aria-label="main">
			<a class="brand" href=${BASE}>Atelier</a>
			<button class="menu-toggle" aria-expanded=${open ? 'true' : 'false'} aria-controls="nav-items" onClick=${() => setOpen(!open)}>Menu</button>
			<div class="items" id="nav-items">
				${sections.map((s) => html`<a class="item" href=${BASE + s.path} aria-current=${here === s.path ? 'page' : undefined}>${s.label}</a>`)}
			</div>
			<div class="who">Signed in as <strong data-testid="whoami">${session.user}</strong>${session.admin ? ' (admin)' : ''}<br />
				<button onClick=${onSignOut}>Sign out</button></div>
		</nav>
		<div class="content"><${Routed} route=${route} /></div>
	</div>`;
}

function App() {
	const [session, setSession] = useState(undefined);
	const [ended, setEnded] = useState(null);
	const route = useRoute();
	useEffect(() => {
		onUnauthenticated((err) => { setCSRF(''); setSession(null); setEnded(err); });
		get('/api/v1/console/session', undefined, { quiet401: true })
			.then((s) => { setCSRF(s.csrf_token); setSession(s); })
			.catch(() => setSession(null));
	}, []);
	const signedIn = (s) => {
		setCSRF(s.csrf_token); setEnded(null); setSession(s);
		if (route.parts[0] === 'signin') navigate('', { replace: true });
	};
	const signOut = async () => {
		try { await del('/api/v1/console/session'); } catch { /* the session may be gone already */ }
		setCSRF(''); setSession(null); navigate('signin');
	};
	if (session === undefined) return html`<p class="boot" data-state="loading">Loading the console…</p>`;
	if (!session) return html`<${SignIn} onSignedIn=${signedIn} ended=${ended} route=${route} />`;
	if (route.parts[0] === 'signin') { navigate('', { replace: true }); return null; }
	return html`<${SessionContext.Provider} value=${session}><${Shell} session=${session} onSignOut=${signOut} /></${SessionContext.Provider}>`;
}

render(html`<${App} />`, document.getElementById('app'));
