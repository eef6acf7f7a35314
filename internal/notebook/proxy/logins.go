package proxy

import (
	"errors"
	"net/url"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/loginlink"
)

// LoginTTL is how long a login link can be redeemed after it was minted.
const LoginTTL = loginlink.TTL

// Logins are the pending login links of notebooks: subject is the notebook
// id, owner and value the user id. Give the same one to the API (which
// mints) and to the Proxy (which redeems).
type Logins = loginlink.Links

// NewLogins returns an empty set of login links on the clock now (nil:
// time.Now).
func NewLogins(now func() time.Time) *Logins { return loginlink.New(now) }

// redeem uses code up, once, for notebookID and returns its user.
func redeem(l *Logins, notebookID, code string) (string, error) {
	const op errs.Op = "proxy.Login"
	hint := errs.Hint("ask for a new link with `atelier notebook open " + notebookID + "` or `atelier notebook url " + notebookID + "`")
	user, err := l.Redeem(notebookID, code)
	switch {
	case err == nil:
		return user, nil
	case errors.Is(err, loginlink.ErrSubject):
		return "", errs.E(op, errs.PermissionDenied, CodeLoginOther, "this login link is for another notebook", hint)
	default:
		return "", errs.E(op, errs.PermissionDenied, CodeBadLogin, err.Error(), hint)
	}
}

// LoginPath is the path and query of a login link: base URL of the
// notebook listener + LoginPath(id, code) is what the user opens.
func LoginPath(notebookID, code string) string {
	return notebookPath(notebookID) + "login?code=" + url.QueryEscape(code)
}

// notebookPath is a notebook's base path, "/notebooks/{id}/".
func notebookPath(notebookID string) string { return prefix + notebookID + "/" }
