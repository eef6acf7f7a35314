package loginlink

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"slices"
	"sync"
	"time"
)

// TTL is how long a link can be redeemed after it was minted.
const TTL = 60 * time.Second

// Bounds of the pending links: beyond them, minting drops the oldest
// pending link of the same owner first; when all owners together hold
// MaxPending, the oldest link of the owner who holds the most, so that
// others minting many links cannot void the one link a user just asked for.
const (
	MaxPending  = 1024
	MaxPerOwner = 8
)

// Errors of Redeem.
var (
	ErrNoCode  = errors.New("the login link has no code")
	ErrInvalid = errors.New("this login link is not valid: it was already used, has expired or was never issued")
	ErrSubject = errors.New("this login link was issued for something else")
)

// Links is a set of pending single-use links. Make one with New and share
// it between the code that mints (the API) and the code that redeems.
type Links struct {
	now func() time.Time

	mu      sync.Mutex
	pending []link // oldest first; at most MaxPending
}

type link struct {
	hash    [sha256.Size]byte
	subject string
	owner   string // bounds links per owner
	value   string // what Redeem returns
	expires time.Time
}

// New returns an empty set on the clock now (nil: time.Now).
func New(now func() time.Time) *Links {
	if now == nil {
		now = time.Now
	}
	return &Links{now: now}
}

// Mint makes a code for subject, owned by owner, that Redeem turns into
// value: 256 random bits, base64url, valid until expires (TTL) and for one
// use.
func (l *Links) Mint(subject, owner, value string) (code string, expires time.Time) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	code = base64.RawURLEncoding.EncodeToString(b[:])
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	expires = now.Add(TTL)
	l.prune(now)
	mine := 0
	for _, p := range l.pending {
		if p.owner == owner {
			mine++
		}
	}
	if mine >= MaxPerOwner {
		if i := slices.IndexFunc(l.pending, func(p link) bool { return p.owner == owner }); i >= 0 {
			l.pending = slices.Delete(l.pending, i, i+1)
		}
	}
	if len(l.pending) >= MaxPending {
		i := oldestOfBusiest(l.pending)
		l.pending = slices.Delete(l.pending, i, i+1)
	}
	l.pending = append(l.pending, link{hash: sha256.Sum256([]byte(code)), subject: subject, owner: owner, value: value, expires: expires})
	return code, expires
}

// oldestOfBusiest is the index of the oldest link of the owner with the
// most links in pending (oldest first; not empty); ties go to the owner
// whose oldest link is older.
func oldestOfBusiest(pending []link) int {
	count := map[string]int{}
	for _, p := range pending {
		count[p.owner]++
	}
	best := 0
	for i, p := range pending {
		if count[p.owner] > count[pending[best].owner] {
			best = i
		}
	}
	return best
}

// prune drops the expired links; l.mu is held.
func (l *Links) prune(now time.Time) {
	kept := l.pending[:0]
	for _, p := range l.pending {
		if now.Before(p.expires) {
			kept = append(kept, p)
		}
	}
	clear(l.pending[len(kept):])
	l.pending = kept
}

// Redeem uses code up, once, for subject and returns the value it was
// minted with. A code presented for another subject is used up too.
func (l *Links) Redeem(subject, code string) (string, error) {
	if code == "" {
		return "", ErrNoCode
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
		return "", ErrInvalid
	}
	p := l.pending[found]
	l.pending = slices.Delete(l.pending, found, found+1)
	if p.subject != subject {
		return "", ErrSubject
	}
	return p.value, nil
}

// Revoke drops the pending links of subject, so that none of them can be
// redeemed, and returns how many there were.
func (l *Links) Revoke(subject string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.pending)
	l.pending = slices.DeleteFunc(l.pending, func(p link) bool { return p.subject == subject })
	return n - len(l.pending)
}

// Pending is how many links wait to be redeemed.
func (l *Links) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}
