package proxy

import (
	"net/http"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of the notebook proxy (ATL.NB.0100–0149). The listener answers
// them as plain text: "CODE: message", then the hint on a second line.
const (
	CodeNoCredentials    errs.Code = "ATL.NB.0101" // 401: no session cookie and no X-Auth-Token
	CodeBadSession       errs.Code = "ATL.NB.0102" // 401: the session cookie is forged, tampered with, expired, for another notebook or signed out
	CodeBadToken         errs.Code = "ATL.NB.0103" // 401: the X-Auth-Token was refused (unless the authenticator gave a code of its own)
	CodeNotOwner         errs.Code = "ATL.NB.0104" // 403: the caller is not the notebook's owner
	CodeServiceWorker    errs.Code = "ATL.NB.0109" // 403: a service worker script is requested (none may be registered on the notebook listener)
	CodeCrossOrigin      errs.Code = "ATL.NB.0105" // 403: a state-changing request or websocket upgrade from another origin (Origin/Referer)
	CodeBadLogin         errs.Code = "ATL.NB.0106" // 403: the login link is unknown, already used or expired (or has no code)
	CodeLoginOther       errs.Code = "ATL.NB.0107" // 403: the login link is for another notebook
	CodeLoginMethod      errs.Code = "ATL.NB.0108" // 405: a login link is opened with GET
	CodeNoNotebook       errs.Code = "ATL.NB.0110" // 404: no notebook with that id
	CodeNotNotebook      errs.Code = "ATL.NB.0111" // 404: not a /notebooks/{id}/ path
	CodeWrongHost        errs.Code = "ATL.NB.0113" // 404: with per-notebook origins, the request's host is not the notebook's own
	CodeBadPath          errs.Code = "ATL.NB.0112" // 400: a path with dot segments, empty segments, encoded slashes or an escaped id
	CodeBadLogout        errs.Code = "ATL.NB.0114" // 405/400: a sign-out (/logout) with another method than GET or POST, or a scope other than this or all
	CodeNotRunning       errs.Code = "ATL.NB.0120" // 503: the notebook is not running (its status is given)
	CodeUnavailable      errs.Code = "ATL.NB.0121" // 503: the notebook or the credentials could not be looked up (the store does not answer)
	CodeUnreachable      errs.Code = "ATL.NB.0122" // 502: Jupyter's socket could not be reached or broke the exchange
	CodeWebsocketRefused errs.Code = "ATL.NB.0123" // Jupyter's status (502 if not an error): Jupyter refused the websocket handshake (unknown kernel, …)
)

// fail answers err as text/plain with the status of its kind.
func fail(w http.ResponseWriter, err error) {
	failStatus(w, errs.KindOf(err).HTTPStatus(), err)
}

// failStatus answers err with the given status.
func failStatus(w http.ResponseWriter, status int, err error) {
	var b strings.Builder
	if c := errs.CodeOf(err); c != "" {
		b.WriteString(string(c))
		b.WriteString(": ")
	}
	msg := errs.UserMessage(err)
	if msg == "" {
		msg = errs.KindOf(err).String()
	}
	b.WriteString(msg)
	b.WriteByte('\n')
	if h := errs.HintOf(err); h != "" {
		b.WriteString(string(h))
		b.WriteByte('\n')
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write([]byte(b.String()))
}
