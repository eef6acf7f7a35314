package proxy

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestLoginsRedeem(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := NewLogins(c.Now)
	code, _ := l.Mint("nb1", "alice")
	if strings.Contains(fmt.Sprintf("%+v", l.pending), code) {
		t.Error("the code is kept in clear")
	}
	if u, err := l.redeem("nb1", code); err != nil || u != "alice" {
		t.Fatalf("redeem: %q %v", u, err)
	}
	if _, err := l.redeem("nb1", code); err == nil {
		t.Error("second use accepted")
	}
	code, _ = l.Mint("nb1", "alice")
	c.Add(LoginTTL - time.Nanosecond)
	if _, err := l.redeem("nb1", code); err != nil {
		t.Errorf("just before expiry: %v", err)
	}
	code, _ = l.Mint("nb1", "alice")
	c.Add(LoginTTL)
	if _, err := l.redeem("nb1", code); err == nil {
		t.Error("expired code accepted")
	}
	if n := l.pendingCount(); n != 0 {
		t.Errorf("%d pending after expiry", n)
	}
}

func TestLoginsBounds(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := NewLogins(c.Now)

	// Per user: the oldest of the user's links goes.
	var codes []string
	for range MaxLoginsPerUser + 1 {
		code, _ := l.Mint("nb1", "alice")
		codes = append(codes, code)
	}
	other, _ := l.Mint("nb2", "bob")
	if n := l.pendingCount(); n != MaxLoginsPerUser+1 {
		t.Errorf("%d pending, want %d", n, MaxLoginsPerUser+1)
	}
	if _, err := l.redeem("nb1", codes[0]); err == nil {
		t.Error("the oldest link of the user was kept")
	}
	if _, err := l.redeem("nb1", codes[len(codes)-1]); err != nil {
		t.Errorf("newest link: %v", err)
	}
	if _, err := l.redeem("nb2", other); err != nil {
		t.Errorf("another user's link: %v", err)
	}

	// Overall: the oldest link goes.
	first, _ := l.Mint("nb0", "u0")
	for i := 1; i < MaxPendingLogins+10; i++ {
		l.Mint("nb", fmt.Sprint("u", i))
	}
	if n := l.pendingCount(); n != MaxPendingLogins {
		t.Errorf("%d pending, want %d", n, MaxPendingLogins)
	}
	if _, err := l.redeem("nb0", first); err == nil {
		t.Error("the oldest link was kept")
	}

	// Expired ones are pruned by the next mint.
	c.Add(LoginTTL)
	l.Mint("nb1", "alice")
	if n := l.pendingCount(); n != 1 {
		t.Errorf("%d pending after a mint past the TTL", n)
	}
}

func TestLoginsUnique(t *testing.T) {
	l := NewLogins(nil)
	seen := map[string]bool{}
	for range 100 {
		code, _ := l.Mint("nb1", "alice")
		if seen[code] {
			t.Fatal("repeated code")
		}
		seen[code] = true
	}
}
