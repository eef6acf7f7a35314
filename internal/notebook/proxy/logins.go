package proxy

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// LoginTTL is how long a login link can be redeemed after it was minted.
const LoginTTL = 60 * time.Second

// Bounds of the pending login links: beyond them, minting drops the
// oldest pending link (of the user first, then of anyone).
const (
	MaxPendingLogins = 1024
	MaxLoginsPerUser = 8
)

// Logins mints and redeems single-use login links. It keeps only the
// SHA-256 of each code, in memory: a restart of the server voids the
// pending links (they last a minute), not the sessions they opened. The
// zero value is not usable; make one with NewLogins and give the same one
// to the API (which mints) and to the Proxy (which redeems).
type Logins struct {
	now func() time.Time

	mu      sync.Mutex
	pending []login // oldest first; at most MaxPendingLogins
}

type login struct {
	hash     [sha256.Size]byte
	notebook string
	user     string
	expires  time.Time
}

// NewLogins returns an empty set of login links on the clock now (nil:
// time.Now).
func NewLogins(now func() time.Time) *Logins {
	if now == nil {
		now = time.Now
	}
	return &Logins{now: now}
}

// Mint makes a login link code for user on notebookID: 256 random bits,
// base64url, valid until expires (LoginTTL) and for one use.
func (l *Logins) Mint(notebookID, userID string) (code string, expires time.Time) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	code = base64.RawURLEncoding.EncodeToString(b[:])
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	expires = now.Add(LoginTTL)
	l.prune(now)
	mine := 0
	for _, p := range l.pending {
		if p.user == userID {
			mine++
		}
	}
	if mine >= MaxLoginsPerUser {
		for i, p := range l.pending {
			if p.user == userID {
				l.pending = slices.Delete(l.pending, i, i+1)
				break
			}
		}
	}
	if len(l.pending) >= MaxPendingLogins {
		l.pending = slices.Delete(l.pending, 0, 1)
	}
	l.pending = append(l.pending, login{hash: sha256.Sum256([]byte(code)), notebook: notebookID, user: userID, expires: expires})
	return code, expires
}

// prune drops the expired links; l.mu is held.
func (l *Logins) prune(now time.Time) {
	kept := l.pending[:0]
	for _, p := range l.pending {
		if now.Before(p.expires) {
			kept = append(kept, p)
		}
	}
	clear(l.pending[len(kept):])
	l.pending = kept
}

// redeem uses code up, once, for notebookID and returns its user. A code
// is compared with every pending one in constant time. A code presented
// for another notebook is used up too.
func (l *Logins) redeem(notebookID, code string) (string, error) {
	const op errs.Op = "proxy.Login"
	hint := errs.Hint("ask for a new link with `atelier notebook open " + notebookID + "` or `atelier notebook url " + notebookID + "`")
	if code == "" {
		return "", errs.E(op, errs.PermissionDenied, CodeBadLogin, "the login link has no code", hint)
	}
	h := sha256.Sum256([]byte(code))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune(l.now())
	found := -1
	for i := range l.pending {
		if subtle.ConstantTimeCompare(h[:], l.pending[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", errs.E(op, errs.PermissionDenied, CodeBadLogin, "this login link is not valid: it was already used, has expired or was never issued", hint)
	}
	p := l.pending[found]
	l.pending = slices.Delete(l.pending, found, found+1)
	if p.notebook != notebookID {
		return "", errs.E(op, errs.PermissionDenied, CodeLoginOther, "this login link is for another notebook", hint)
	}
	return p.user, nil
}

// pendingCount is how many links are pending (tests).
func (l *Logins) pendingCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// LoginPath is the path and query of a login link: base URL of the
// notebook listener + LoginPath(id, code) is what the user opens.
func LoginPath(notebookID, code string) string {
	return notebookPath(notebookID) + "login?code=" + url.QueryEscape(code)
}

// notebookPath is a notebook's base path, "/notebooks/{id}/".
func notebookPath(notebookID string) string { return prefix + notebookID + "/" }
