package preview

import (
	"bytes"
	"errors"
	"net/url"
	"regexp"
	"testing"
	"time"
)

var (
	testKey   = bytes.Repeat([]byte("k/\x00\xff"), 8) // 32 bytes, with "/" and odd bytes
	testStart = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
)

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestSigner() (*Signer, *fakeClock) {
	c := &fakeClock{testStart}
	return NewSigner(testKey, c.now), c
}

var urlSafe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func TestSignerRoundTrip(t *testing.T) {
	s, _ := newTestSigner()
	for _, p := range []Claims{
		{DatasetID: "ds-1", VersionID: "v3", Key: "train/cat/1.jpg", UserID: "u-42"},
		{},
		{DatasetID: "a/b", VersionID: "../..", Key: "dir/with space/ünïcode+%2F?.png", UserID: "x"},
		{DatasetID: "\x00", VersionID: "\xff\xfe", Key: "\x00\x01/\x02", UserID: "\n"},
		{Key: string(bytes.Repeat([]byte("long/"), 300))},
	} {
		tok := s.Token(p, 5*time.Minute)
		if !urlSafe.MatchString(tok) || url.PathEscape(tok) != tok || url.QueryEscape(tok) != tok {
			t.Errorf("token %q is not URL-safe", tok)
		}
		got, err := s.Verify(tok)
		if err != nil {
			t.Fatalf("Verify(Token(%+v)): %v", p, err)
		}
		want := p
		want.Expires = testStart.Add(5 * time.Minute)
		if got.DatasetID != want.DatasetID || got.VersionID != want.VersionID || got.Key != want.Key ||
			got.UserID != want.UserID || !got.Expires.Equal(want.Expires) {
			t.Errorf("round trip: got %+v, want %+v", got, want)
		}
	}
}

func TestSignerIgnoresClaimsExpires(t *testing.T) {
	s, _ := newTestSigner()
	tok := s.Token(Claims{Key: "k", Expires: testStart.Add(1000 * time.Hour)}, time.Minute)
	c, err := s.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Expires.Equal(testStart.Add(time.Minute)) {
		t.Errorf("Expires = %v, want now+ttl %v", c.Expires, testStart.Add(time.Minute))
	}
}

func TestSignerExpiry(t *testing.T) {
	s, clock := newTestSigner()
	tok := s.Token(Claims{Key: "k"}, 5*time.Minute)
	for _, tc := range []struct {
		after time.Duration
		want  error
	}{
		{0, nil},
		{4*time.Minute + 59*time.Second, nil},
		{5*time.Minute - time.Nanosecond, nil},
		{5 * time.Minute, ErrExpired},
		{time.Hour, ErrExpired},
		{-time.Hour, nil}, // clock behind the issuer: still valid
	} {
		clock.t = testStart.Add(tc.after)
		if _, err := s.Verify(tok); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("at +%v: err = %v, want %v", tc.after, err, tc.want)
		}
	}
	clock.t = testStart
	if _, err := s.Verify(s.Token(Claims{Key: "k"}, 0)); !errors.Is(err, ErrExpired) {
		t.Errorf("ttl 0: err = %v, want ErrExpired", err)
	}
	if _, err := s.Verify(s.Token(Claims{Key: "k"}, -time.Second)); !errors.Is(err, ErrExpired) {
		t.Errorf("negative ttl: err = %v, want ErrExpired", err)
	}
}

// TestSignerEveryByteChangeRejected changes each byte of a token to each
// other value (flip), and checks no result verifies.
func TestSignerEveryByteChangeRejected(t *testing.T) {
	s, clock := newTestSigner()
	// Three key lengths: the raw token length takes every value mod 3, so
	// base64's partial last group (and its unused bits) is covered.
	for _, p := range []Claims{
		{DatasetID: "ds", VersionID: "v1", Key: "a/b.jpg", UserID: "u"},
		{DatasetID: "ds", VersionID: "v1", Key: "a/b.jpeg", UserID: "u"},
		{DatasetID: "ds", VersionID: "v1", Key: "a/bc.jpeg", UserID: "u"},
	} {
		testEveryByteChange(t, s, clock, p)
	}
}

func testEveryByteChange(t *testing.T, s *Signer, clock *fakeClock, p Claims) {
	for _, expired := range []bool{false, true} {
		clock.t = testStart
		tok := s.Token(p, time.Minute)
		if expired {
			clock.t = testStart.Add(time.Hour)
		}
		b := []byte(tok)
		for i := range b {
			orig := b[i]
			for v := 0; v < 256; v++ {
				if byte(v) == orig {
					continue
				}
				b[i] = byte(v)
				if _, err := s.Verify(string(b)); !errors.Is(err, ErrInvalid) {
					t.Fatalf("expired=%v: byte %d changed %q->%q: err = %v, want ErrInvalid", expired, i, orig, byte(v), err)
				}
			}
			b[i] = orig
		}
		// Truncations and extensions too.
		for n := 0; n < len(tok); n++ {
			if _, err := s.Verify(tok[:n]); !errors.Is(err, ErrInvalid) {
				t.Fatalf("truncated to %d: err = %v", n, err)
			}
		}
		for _, suffix := range []string{"A", "AA", "AAAA", "=", "\n", "-"} {
			if _, err := s.Verify(tok + suffix); !errors.Is(err, ErrInvalid) {
				t.Fatalf("with %q appended: err = %v", suffix, err)
			}
		}
		if _, err := s.Verify(tok[:10] + "\n" + tok[10:]); !errors.Is(err, ErrInvalid) {
			t.Fatalf("newline inserted: err = %v", err)
		}
	}
}

func TestSignerWrongKey(t *testing.T) {
	s, clock := newTestSigner()
	tok := s.Token(Claims{Key: "k"}, time.Minute)
	other := bytes.Clone(testKey)
	other[len(other)-1] ^= 1
	// (HMAC zero-pads short keys, so key and key||0x00 are the same key;
	// a longer key here ends in a non-zero byte.)
	for _, k := range [][]byte{other, bytes.Repeat([]byte{0}, 32), append(bytes.Clone(testKey), 1), testKey[:31:31]} {
		if len(k) < MinKeyBytes {
			k = append(k, 'x')
		}
		if _, err := NewSigner(k, clock.now).Verify(tok); !errors.Is(err, ErrInvalid) {
			t.Errorf("key %x: err = %v, want ErrInvalid", k, err)
		}
	}
	if _, err := NewSigner(bytes.Clone(testKey), clock.now).Verify(tok); err != nil {
		t.Errorf("same key, new Signer: %v", err)
	}
}

func TestSignerKeyIsCopied(t *testing.T) {
	key := bytes.Clone(testKey)
	clock := &fakeClock{testStart}
	s := NewSigner(key, clock.now)
	tok := s.Token(Claims{Key: "k"}, time.Minute)
	key[0] ^= 0xff
	if _, err := s.Verify(tok); err != nil {
		t.Errorf("caller changing its key slice broke the Signer: %v", err)
	}
}

func TestSignerFieldBoundaries(t *testing.T) {
	s, _ := newTestSigner()
	pairs := [][2]Claims{
		{{DatasetID: "a", Key: "bc"}, {DatasetID: "ab", Key: "c"}},
		{{DatasetID: "a", VersionID: "b"}, {DatasetID: "ab"}},
		{{DatasetID: "ab"}, {VersionID: "ab"}},
		{{Key: "x", UserID: ""}, {Key: "", UserID: "x"}},
		{{DatasetID: "a\x01b"}, {DatasetID: "a", VersionID: "b"}},
	}
	for _, pr := range pairs {
		t1, t2 := s.Token(pr[0], time.Minute), s.Token(pr[1], time.Minute)
		if t1 == t2 {
			t.Errorf("%+v and %+v give the same token", pr[0], pr[1])
		}
		for i, tok := range []string{t1, t2} {
			c, err := s.Verify(tok)
			if err != nil {
				t.Fatal(err)
			}
			if c.DatasetID != pr[i].DatasetID || c.VersionID != pr[i].VersionID || c.Key != pr[i].Key || c.UserID != pr[i].UserID {
				t.Errorf("token for %+v verified as %+v", pr[i], c)
			}
		}
	}
}

func TestNewSigner(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("nil key", func() { NewSigner(nil, nil) })
	mustPanic("31-byte key", func() { NewSigner(make([]byte, 31), nil) })
	s := NewSigner(make([]byte, 32), nil) // nil clock: time.Now
	if _, err := s.Verify(s.Token(Claims{Key: "k"}, time.Minute)); err != nil {
		t.Errorf("time.Now clock: %v", err)
	}
	if _, err := s.Verify(s.Token(Claims{Key: "k"}, -time.Minute)); !errors.Is(err, ErrExpired) {
		t.Errorf("time.Now clock, expired: err = %v", err)
	}
}

func TestSignerRejectsJunk(t *testing.T) {
	s, _ := newTestSigner()
	long := string(bytes.Repeat([]byte("A"), maxTokenLen+4))
	for _, tok := range []string{"", "A", "AA", "AAAA", "!!!!", "a.b.c", "YWJj", long, "+/+/", "AAAA===="} {
		if _, err := s.Verify(tok); !errors.Is(err, ErrInvalid) {
			t.Errorf("Verify(%.20q): err = %v, want ErrInvalid", tok, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	s, clock := newTestSigner()
	valid := s.Token(Claims{DatasetID: "d", VersionID: "v", Key: "k", UserID: "u"}, time.Minute)
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add(NewSigner(bytes.Repeat([]byte{1}, 32), clock.now).Token(Claims{Key: "k"}, time.Minute))
	f.Add("")
	f.Add("AQAAAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := s.Verify(tok)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Only a token this Signer mints is accepted: the canonical token
		// for the claims it returned must be the input itself.
		if again := s.Token(c, c.Expires.Sub(clock.t)); again != tok {
			t.Fatalf("accepted %q, which the Signer would not mint (it mints %q for %+v)", tok, again, c)
		}
	})
}
