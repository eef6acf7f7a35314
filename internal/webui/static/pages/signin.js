// Sign in with an access key pair, or through a link from `atelier console`.
import { html, useState } from '../js/lib.js';
import { post } from '../js/api.js';
import { ErrorBox, Field } from '../js/ui.js';

const linkErrors = {
	'ATL.CON.0102': 'That sign-in link was opened from another site, so it was not used: paste it into the address bar (or run `atelier console` again).',
	'ATL.CON.0103': 'That sign-in link was already used, has expired (they last a minute) or was never issued.',
	'ATL.IAM.0104': 'The access key of that link is disabled.',
};

export default function SignIn({ onSignedIn, ended, route }) {
	const [ak, setAK] = useState('');
	const [sk, setSK] = useState('');
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState(null);
	// Only a well-formed code is shown: the query is anyone's to write.
	const raw = route && route.query.get('error');
	const linkErr = raw && (/^ATL\.[A-Z]{2,6}\.\d{4}$/.test(raw) ? raw : 'error');
	const submit = async (e) => {
		e.preventDefault();
		setBusy(true); setError(null);
		try { onSignedIn(await post('/api/v1/console/session', { access_key: ak.trim(), secret_key: sk }, { quiet401: true })); } catch (err) { setError(err); } finally { setBusy(false); }
	};
	return html`<main id="main" class="signin panel" data-page="signin" data-state="ready">
		<h1>Sign in to Atelier</h1>
		${ended && html`<div class="notice" role="status">Your session ended (${ended.message}). Sign in again.</div>`}
		${linkErr && html`<${ErrorBox} error=${{ code: linkErr, message: linkErrors[linkErr] || 'The sign-in link could not be used.', hint: 'run `atelier console` for a new link, or sign in with your access key below' }} />`}
		<form onSubmit=${submit} aria-label="sign in">
			<${Field} label="Access key" id="ak"><input id="ak" name="access_key" autocomplete="username" required value=${ak} onInput=${(e) => setAK(e.target.value)} /></${Field}>
			<${Field} label="Secret key" id="sk" help=${"From the config file that `atelier configure` wrote, or <data-dir>/admin.yaml on the server."}><input id="sk" name="secret_key" type="password" autocomplete="current-password" required value=${sk} onInput=${(e) => setSK(e.target.value)} /></${Field}>
			<${ErrorBox} error=${error} />
			<button class="primary" type="submit" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
		</form>
		<p class="muted">Or run <code>atelier console</code>: it prints a sign-in link that works once, for a minute.</p>
	</main>`;
}
