package loginlink

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRedeem(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := New(c.Now)
	code, _ := l.Mint("nb1", "alice", "alice")
	if strings.Contains(fmt.Sprintf("%+v", l.pending), code) || len(l.pending) != 1 {
		t.Error("the code is kept in clear")
	}
	if u, err := l.Redeem("nb1", code); err != nil || u != "alice" {
		t.Fatalf("redeem: %q %v", u, err)
	}
	if _, err := l.Redeem("nb1", code); err == nil {
		t.Error("second use accepted")
	}
	code, _ = l.Mint("nb1", "alice", "alice")
	c.Add(TTL - time.Nanosecond)
	if _, err := l.Redeem("nb1", code); err != nil {
		t.Errorf("just before expiry: %v", err)
	}
	code, _ = l.Mint("nb1", "alice", "alice")
	c.Add(TTL)
	if _, err := l.Redeem("nb1", code); err == nil {
		t.Error("expired code accepted")
	}
	if n := l.Pending(); n != 0 {
		t.Errorf("%d pending after expiry", n)
	}
}

func TestBounds(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := New(c.Now)

	// Per user: the oldest of the user's links goes.
	var codes []string
	for range MaxPerOwner + 1 {
		code, _ := l.Mint("nb1", "alice", "alice")
		codes = append(codes, code)
	}
	other, _ := l.Mint("nb2", "bob", "bob")
	if n := l.Pending(); n != MaxPerOwner+1 {
		t.Errorf("%d pending, want %d", n, MaxPerOwner+1)
	}
	if _, err := l.Redeem("nb1", codes[0]); err == nil {
		t.Error("the oldest link of the user was kept")
	}
	if _, err := l.Redeem("nb1", codes[len(codes)-1]); err != nil {
		t.Errorf("newest link: %v", err)
	}
	if _, err := l.Redeem("nb2", other); err != nil {
		t.Errorf("another user's link: %v", err)
	}

	// Overall, with one link per owner: the oldest link goes.
	first, _ := l.Mint("nb0", "u0", "u0")
	for i := 1; i < MaxPending+10; i++ {
		l.Mint("nb", fmt.Sprint("u", i), fmt.Sprint("u", i))
	}
	if n := l.Pending(); n != MaxPending {
		t.Errorf("%d pending, want %d", n, MaxPending)
	}
	if _, err := l.Redeem("nb0", first); err == nil {
		t.Error("the oldest link was kept")
	}

	// Others filling the set with many links each take their own links
	// out, not the one link carol asked for first.
	l = New(c.Now)
	carol, _ := l.Mint("nbc", "carol", "carol")
	for i := range MaxPending + 100 {
		owner := fmt.Sprint("m", i%(MaxPending/MaxPerOwner+5))
		l.Mint("nbm", owner, owner)
	}
	if n := l.Pending(); n != MaxPending {
		t.Errorf("%d pending, want %d", n, MaxPending)
	}
	if u, err := l.Redeem("nbc", carol); err != nil || u != "carol" {
		t.Errorf("carol's link was evicted by others' links: %q %v", u, err)
	}

	// Expired ones are pruned by the next mint.
	c.Add(TTL)
	l.Mint("nb1", "alice", "alice")
	if n := l.Pending(); n != 1 {
		t.Errorf("%d pending after a mint past the TTL", n)
	}
}

func TestUnique(t *testing.T) {
	l := New(nil)
	seen := map[string]bool{}
	for range 100 {
		code, _ := l.Mint("nb1", "alice", "alice")
		if seen[code] {
			t.Fatal("repeated code")
		}
		seen[code] = true
	}
}

func TestSubject(t *testing.T) {
	l := New(nil)
	code, _ := l.Mint("nb1", "alice", "alice")
	if _, err := l.Redeem("console", code); err != ErrSubject {
		t.Fatalf("another subject: %v", err)
	}
	if _, err := l.Redeem("nb1", code); err != ErrInvalid {
		t.Fatalf("a code presented for another subject stays usable: %v", err)
	}
	if _, err := l.Redeem("nb1", ""); err != ErrNoCode {
		t.Fatalf("empty code: %v", err)
	}
}

type clock struct{ t time.Time }

func (c *clock) Now() time.Time      { return c.t }
func (c *clock) Add(d time.Duration) { c.t = c.t.Add(d) }

// TestRevoke: revoking a subject's links makes them unredeemable and
// leaves other subjects' links alone.
func TestRevoke(t *testing.T) {
	l := New((&clock{t: time.Unix(1_700_000_000, 0)}).Now)
	a1, _ := l.Mint("nb1", "alice", "alice")
	a2, _ := l.Mint("nb1", "alice", "alice")
	b, _ := l.Mint("nb2", "alice", "alice")
	if n := l.Revoke("nb1"); n != 2 {
		t.Fatalf("revoked %d links, want 2", n)
	}
	for _, c := range []string{a1, a2} {
		if _, err := l.Redeem("nb1", c); err != ErrInvalid {
			t.Errorf("a revoked link: %v", err)
		}
	}
	if u, err := l.Redeem("nb2", b); err != nil || u != "alice" {
		t.Errorf("another subject's link: %q %v", u, err)
	}
	if n := l.Revoke("nb1"); n != 0 {
		t.Errorf("revoked %d links twice", n)
	}
}
