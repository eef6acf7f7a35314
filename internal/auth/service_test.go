package auth

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

// clock is an injectable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	svc   *Service
	store meta.Store
	clock *clock
	admin *Principal
	key   []byte
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := LoadOrCreateMasterKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	svc, err := New(st, key, Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	ak, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin := principalFor(t, svc, st, ak)
	return &fixture{svc: svc, store: st, clock: c, admin: admin, key: key}
}

// principalFor authenticates as the key's user the way a request would.
func principalFor(t *testing.T, svc *Service, st meta.Store, ak string) *Principal {
	t.Helper()
	k, err := st.GetAccessKey(context.Background(), ak)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.GetUser(context.Background(), k.UserID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.principal(context.Background(), u, "test")
	if err != nil {
		t.Fatal(err)
	}
	p.AccessKey = ak
	return p
}

// user creates a user with a key and returns its principal and secret.
func (f *fixture) user(t *testing.T, name string) (*Principal, string, string) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.svc.CreateUser(ctx, f.admin, name, false); err != nil {
		t.Fatal(err)
	}
	k, err := f.svc.CreateAccessKey(ctx, f.admin, name, "")
	if err != nil {
		t.Fatal(err)
	}
	return principalFor(t, f.svc, f.store, k.AccessKey), k.AccessKey, k.SecretKey
}

func wantErr(t *testing.T, err error, kind errs.Kind, code errs.Code, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v %s", kind, code)
	}
	if errs.KindOf(err) != kind {
		t.Errorf("kind = %v, want %v (%v)", errs.KindOf(err), kind, err)
	}
	if code != "" && errs.CodeOf(err) != code {
		t.Errorf("code = %s, want %s (%v)", errs.CodeOf(err), code, err)
	}
	if !strings.Contains(errs.UserMessage(err), msg) {
		t.Errorf("message %q does not contain %q", errs.UserMessage(err), msg)
	}
}

func TestBootstrapStable(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ak1, sk1, err := f.svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ak2, sk2, err := f.svc.Bootstrap(ctx)
	if err != nil || ak1 != ak2 || sk1 != sk2 {
		t.Fatalf("second bootstrap changed the keys: %s/%s vs %s/%s (%v)", ak1, sk1, ak2, sk2, err)
	}
	// A new service over the same store and master key (a restart) returns the same pair.
	svc2, err := New(f.store, f.key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ak3, sk3, err := svc2.Bootstrap(ctx)
	if err != nil || ak3 != ak1 || sk3 != sk1 {
		t.Fatalf("restart changed the keys (%v)", err)
	}
	// Deleting the bootstrap key issues a new one rather than failing.
	if err := f.store.DeleteAccessKey(ctx, ak1); err != nil {
		t.Fatal(err)
	}
	ak4, _, err := f.svc.Bootstrap(ctx)
	if err != nil || ak4 == ak1 {
		t.Fatalf("after deleting the key: %s, %v", ak4, err)
	}
	// The secret is stored sealed, not in clear.
	k, _ := f.store.GetAccessKey(ctx, ak4)
	if strings.Contains(string(k.SecretEnc), sk1) || len(k.SecretEnc) < 40 {
		t.Errorf("secret not sealed: %q", k.SecretEnc)
	}
}

func TestMasterKeyFile(t *testing.T) {
	dir := t.TempDir()
	k1, err := LoadOrCreateMasterKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dir, MasterKeyFile))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	k2, err := LoadOrCreateMasterKey(dir)
	if err != nil || string(k1) != string(k2) {
		t.Fatalf("reload changed the key (%v)", err)
	}
	os.Chmod(filepath.Join(dir, MasterKeyFile), 0o644)
	_, err = LoadOrCreateMasterKey(dir)
	wantErr(t, err, errs.PermissionDenied, "ATL.AUTH.0120", "readable by other users")
	os.Chmod(filepath.Join(dir, MasterKeyFile), 0o600)
	os.WriteFile(filepath.Join(dir, MasterKeyFile), []byte("short\n"), 0o600)
	_, err = LoadOrCreateMasterKey(dir)
	wantErr(t, err, errs.Invalid, "ATL.AUTH.0121", "not a master key")
	// A store sealed under another master key cannot be read: clear error, no garbage.
	s1, _ := newSealer(k1)
	other := make([]byte, 32)
	s2, _ := newSealer(other)
	sealed, _ := s1.seal("AK", "secret")
	if _, err := s2.open("AK", sealed); err == nil || !strings.Contains(err.Error(), "master.key") {
		t.Errorf("open with the wrong key: %v", err)
	}
	if _, err := s1.open("OTHER", sealed); err == nil {
		t.Error("a sealed secret opened under another access key id")
	}
}

func TestUsersAndOwnership(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	alice, _, _ := f.user(t, "alice")
	bob, bobKey, _ := f.user(t, "bob")

	_, err := f.svc.CreateUser(ctx, f.admin, "alice", false)
	wantErr(t, err, errs.Exists, CodeUserExists, `user "alice" already exists`)
	_, err = f.svc.CreateUser(ctx, f.admin, "has space", false)
	wantErr(t, err, errs.Invalid, CodeBadName, "white space")

	// A user may not create users (403) but sees itself.
	_, err = f.svc.CreateUser(ctx, alice, "mallory", false)
	wantErr(t, err, errs.PermissionDenied, CodeDenied, "atelier:user:Create")
	if _, err := f.svc.GetUser(ctx, alice, "alice"); err != nil {
		t.Errorf("alice cannot see herself: %v", err)
	}
	// Another user's record is not revealed: 404, same as a missing one.
	_, err = f.svc.GetUser(ctx, alice, "bob")
	wantErr(t, err, errs.NotFound, CodeUserNotFound, `user "bob" not found`)
	users, total, err := f.svc.ListUsers(ctx, alice, api.ListOptions{})
	if err != nil || total != 1 || users[0].Name != "alice" {
		t.Errorf("alice lists %v (%d, %v)", users, total, err)
	}
	users, total, _ = f.svc.ListUsers(ctx, f.admin, api.ListOptions{})
	if total != 3 || len(users) != 3 {
		t.Errorf("admin lists %d users", total)
	}

	// Another user's access key: 404 for get, delete and disable.
	_, err = f.svc.GetAccessKey(ctx, alice, bobKey)
	wantErr(t, err, errs.NotFound, CodeKeyNotFound, bobKey)
	wantErr(t, f.svc.DeleteAccessKey(ctx, alice, bobKey), errs.NotFound, CodeKeyNotFound, "not found")
	_, err = f.svc.SetAccessKeyStatus(ctx, alice, bobKey, "disabled")
	wantErr(t, err, errs.NotFound, CodeKeyNotFound, "not found")
	_, err = f.svc.CreateAccessKey(ctx, alice, "bob", "")
	wantErr(t, err, errs.NotFound, CodeUserNotFound, `user "bob" not found`)
	_, _, err = f.svc.ListAccessKeys(ctx, alice, "bob", api.ListOptions{})
	wantErr(t, err, errs.NotFound, CodeUserNotFound, "not found")

	// Own keys: create several, list, disable.
	k2, err := f.svc.CreateAccessKey(ctx, bob, "", "second")
	if err != nil {
		t.Fatal(err)
	}
	ks, total, err := f.svc.ListAccessKeys(ctx, bob, "", api.ListOptions{})
	if err != nil || total != 2 || len(ks) != 2 {
		t.Fatalf("bob's keys: %d, %v", total, err)
	}
	if _, err := f.svc.SetAccessKeyStatus(ctx, bob, k2.AccessKey, "disabled"); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.SetAccessKeyStatus(ctx, bob, k2.AccessKey, "paused")
	wantErr(t, err, errs.Invalid, CodeBadStatus, `"paused"`)

	// Deleting: not yourself, not admin; admin deletes bob and his keys go.
	wantErr(t, f.svc.DeleteUser(ctx, f.admin, "admin"), errs.Conflict, CodeProtectedUser, "cannot be deleted")
	wantErr(t, f.svc.DeleteUser(ctx, alice, "bob"), errs.NotFound, CodeUserNotFound, "not found")
	if err := f.svc.DeleteUser(ctx, f.admin, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.GetAccessKey(ctx, bobKey); !errs.Is(err, errs.NotFound) {
		t.Errorf("bob's key survived his deletion: %v", err)
	}
	wantErr(t, f.svc.DeleteUser(ctx, f.admin, "bob"), errs.NotFound, CodeUserNotFound, "not found")
}

func TestTokens(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, ak, sk := f.user(t, "carol")

	_, err := f.svc.CreateToken(ctx, ak, "wrong", 0)
	wantErr(t, err, errs.Unauthenticated, CodeBadCredentials, "invalid access key or secret key")
	_, err = f.svc.CreateToken(ctx, "ATLNOSUCHKEY", sk, 0)
	wantErr(t, err, errs.Unauthenticated, CodeBadCredentials, "invalid access key or secret key")
	_, err = f.svc.CreateToken(ctx, ak, sk, time.Second)
	wantErr(t, err, errs.Invalid, CodeBadDuration, "outside")
	_, err = f.svc.CreateToken(ctx, "", "", 0)
	wantErr(t, err, errs.Invalid, CodeBadCredentials, "required")

	tok, err := f.svc.CreateToken(ctx, ak, sk, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tok.ExpiresAt != f.clock.now().Add(24*time.Hour).UnixMilli() || tok.User != "carol" {
		t.Errorf("token %+v", tok)
	}
	secret := tok.Token
	p, err := f.svc.AuthenticateToken(ctx, secret)
	if err != nil || p.User.Name != "carol" || p.TokenID != tok.TokenID {
		t.Fatalf("authenticate: %v %v", p, err)
	}
	_, err = f.svc.AuthenticateToken(ctx, secret+"x")
	wantErr(t, err, errs.Unauthenticated, CodeBadToken, "not a valid token")

	// Expiry with the injected clock.
	f.clock.add(24*time.Hour + time.Second)
	_, err = f.svc.AuthenticateToken(ctx, secret)
	wantErr(t, err, errs.Unauthenticated, CodeTokenExpired, "expired at")

	// Revocation: "current", by id; another user's token is 404.
	tok2, _ := f.svc.CreateToken(ctx, ak, sk, time.Hour)
	secret2 := tok2.Token
	p2, err := f.svc.AuthenticateToken(ctx, secret2)
	if err != nil {
		t.Fatal(err)
	}
	dave, _, _ := f.user(t, "dave")
	wantErr(t, f.svc.RevokeToken(ctx, dave, p2.TokenID), errs.NotFound, CodeTokenNotFound, "not found")
	wantErr(t, f.svc.RevokeToken(ctx, dave, "current"), errs.Invalid, CodeTokenNotFound, "not authenticated with a token")
	if err := f.svc.RevokeToken(ctx, p2, "current"); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.AuthenticateToken(ctx, secret2)
	wantErr(t, err, errs.Unauthenticated, CodeTokenRevoked, "revoked")

	// A disabled key cannot make tokens, and its tokens stop working.
	tok3, _ := f.svc.CreateToken(ctx, ak, sk, time.Hour)
	secret3 := tok3.Token
	if err := f.store.SetAccessKeyStatus(ctx, ak, meta.KeyDisabled); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.AuthenticateToken(ctx, secret3)
	wantErr(t, err, errs.Unauthenticated, CodeKeyDisabled, "disabled")
	_, err = f.svc.CreateToken(ctx, ak, sk, 0)
	wantErr(t, err, errs.Unauthenticated, CodeKeyDisabled, "disabled")

	// Garbage collection removes long-expired tokens only.
	ts, _, _ := f.store.ListTokens(ctx, p.User.ID, meta.ListOptions{})
	f.clock.add(48 * time.Hour)
	if err := f.svc.CollectGarbage(ctx, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	after, _, _ := f.store.ListTokens(ctx, p.User.ID, meta.ListOptions{})
	if len(after) >= len(ts) {
		t.Errorf("GC removed nothing: %d → %d", len(ts), len(after))
	}
}

func TestPolicies(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	erin, _, _ := f.user(t, "erin")
	doc := []byte(`{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["atelier:user:List","atelier:user:Get"],"Resource":["*"]}]}`)

	_, err := f.svc.CreatePolicy(ctx, erin, "p1", "", doc)
	wantErr(t, err, errs.PermissionDenied, CodeDenied, "atelier:policy:Create")
	_, err = f.svc.CreatePolicy(ctx, f.admin, "bad", "", []byte(`{"Statement":[{"Effect":"Permit","Action":"*","Resource":"*"}]}`))
	wantErr(t, err, errs.Invalid, "", "Permit")
	_, err = f.svc.CreatePolicy(ctx, f.admin, "bad", "", []byte(`{"Statement":[{"Effect":"Allow","Action":"o*s:GetObject","Resource":"*"}]}`))
	wantErr(t, err, errs.Invalid, "", "o*s:GetObject")

	if _, err := f.svc.CreatePolicy(ctx, f.admin, "readers", "list users", doc); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.CreatePolicy(ctx, f.admin, "readers", "", doc)
	wantErr(t, err, errs.Exists, CodePolicyExists, "already exists")

	// Not visible to erin before it is attached.
	_, err = f.svc.GetPolicy(ctx, erin, "readers")
	wantErr(t, err, errs.NotFound, CodePolicyNotFound, "not found")
	wantErr(t, f.svc.AttachPolicy(ctx, erin, "erin", "readers"), errs.NotFound, CodePolicyNotFound, "not found")

	if err := f.svc.AttachPolicy(ctx, f.admin, "erin", "readers"); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.AttachPolicy(ctx, f.admin, "erin", "readers"); err != nil {
		t.Fatalf("attach twice: %v", err)
	}
	erin = principalFor(t, f.svc, f.store, erin.AccessKey)
	if _, total, _ := f.svc.ListUsers(ctx, erin, api.ListOptions{}); total != 2 {
		t.Errorf("with the policy erin lists %d users, want 2", total)
	}
	if _, err := f.svc.GetUser(ctx, erin, "admin"); err != nil {
		t.Errorf("with the policy erin cannot get admin: %v", err)
	}
	// Seeing is not deleting: a visible resource answers 403, not 404.
	wantErr(t, f.svc.DeleteUser(ctx, erin, "admin"), errs.PermissionDenied, CodeDenied, "atelier:user:Delete")

	wantErr(t, f.svc.DeletePolicy(ctx, f.admin, "readers"), errs.Conflict, CodePolicyAttached, "attached")
	pol, err := f.svc.GetPolicy(ctx, f.admin, "readers")
	if err != nil || len(pol.Users) != 1 || pol.Users[0] != "erin" || pol.Owner != "admin" {
		t.Errorf("policy %+v %v", pol, err)
	}
	if err := f.svc.DetachPolicy(ctx, f.admin, "erin", "readers"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.svc.DetachPolicy(ctx, f.admin, "erin", "readers"), errs.NotFound, CodePolicyNotOnUser, "not attached")
	if err := f.svc.DeletePolicy(ctx, f.admin, "readers"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.svc.DeletePolicy(ctx, f.admin, "readers"), errs.NotFound, CodePolicyNotFound, "not found")
}

func TestTemporaryCredentials(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	frank, _, _ := f.user(t, "frank")
	session := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::in/*"}]}`)
	tc, err := f.svc.IssueTemporary(ctx, frank.User.ID, session, time.Hour, "job 1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tc.AccessKey, "ATT") || tc.SessionToken == "" || !tc.Expiration.Equal(f.clock.now().Add(time.Hour)) {
		t.Errorf("credentials %+v", tc)
	}
	k, err := f.store.GetAccessKey(ctx, tc.AccessKey)
	if err != nil || !k.Temporary || k.SessionTokenHash == tc.SessionToken || k.SessionPolicy == "" {
		t.Fatalf("stored %+v %v", k, err)
	}
	// Temporary keys are not listed with permanent ones and cannot mint tokens.
	if _, total, _ := f.svc.ListAccessKeys(ctx, frank, "", api.ListOptions{}); total != 1 {
		t.Errorf("frank lists %d keys, want 1", total)
	}
	_, err = f.svc.CreateToken(ctx, tc.AccessKey, tc.SecretKey, 0)
	wantErr(t, err, errs.Unauthenticated, CodeTempCannotTokens, "temporary")
	f.clock.add(2 * time.Hour)
	wantErr(t, f.svc.checkKeyUsable("test", k), errs.Unauthenticated, CodeTempExpired, "expired")
	_, err = f.svc.IssueTemporary(ctx, frank.User.ID, []byte(`{"Statement":[{"Effect":"Maybe"}]}`), time.Hour, "")
	wantErr(t, err, errs.Invalid, "", "Maybe")
	_, err = f.svc.IssueTemporary(ctx, frank.User.ID, nil, 0, "")
	wantErr(t, err, errs.Invalid, CodeBadDuration, "lifetime")
	if err := f.svc.RevokeTemporary(ctx, tc.AccessKey); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.RevokeTemporary(ctx, tc.AccessKey); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
	wantErr(t, f.svc.RevokeTemporary(ctx, frank.AccessKey), errs.Invalid, "", "permanent")
}

func TestKeyCache(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, ak, sk := f.user(t, "cached")
	sign := func() error {
		req, _ := http.NewRequest("GET", "http://atelier/api/v1/whoami", nil)
		sigv4.SignRequest(req, sigv4.Credentials{AccessKey: ak, SecretKey: sk}, "us-east-1", "atelier", sigv4.EmptyPayloadHash, f.clock.now())
		_, _, err := f.svc.AuthenticateSigV4(ctx, req, sigv4.Verifier{Region: "us-east-1", AnyRegion: true, Service: "atelier", Now: f.clock.now})
		return err
	}
	if err := sign(); err != nil {
		t.Fatal(err)
	}
	// A change through the service applies at once.
	if _, err := f.svc.SetAccessKeyStatus(ctx, p, ak, "disabled"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, sign(), errs.Unauthenticated, CodeKeyDisabled, "disabled")
	if _, err := f.svc.SetAccessKeyStatus(ctx, f.admin, ak, "active"); err != nil {
		t.Fatal(err)
	}
	if err := sign(); err != nil {
		t.Fatalf("enabled again: %v", err)
	}
	// A change made behind the service's back (another server sharing the
	// store) applies within the cache TTL.
	if err := f.store.SetAccessKeyStatus(ctx, ak, meta.KeyDisabled); err != nil {
		t.Fatal(err)
	}
	if err := sign(); err != nil {
		t.Fatalf("within the TTL the cached key still works: %v", err)
	}
	f.clock.add(DefaultCacheTTL + time.Millisecond)
	wantErr(t, sign(), errs.Unauthenticated, CodeKeyDisabled, "disabled")
	// Attaching a policy applies to the next request.
	f.store.SetAccessKeyStatus(ctx, ak, meta.KeyActive)
	f.clock.add(DefaultCacheTTL + time.Millisecond)
	req, _ := http.NewRequest("GET", "http://atelier/x", nil)
	sigv4.SignRequest(req, sigv4.Credentials{AccessKey: ak, SecretKey: sk}, "us-east-1", "atelier", sigv4.EmptyPayloadHash, f.clock.now())
	before, _, err := f.svc.AuthenticateSigV4(ctx, req, sigv4.Verifier{Region: "us-east-1", AnyRegion: true, Service: "atelier", Now: f.clock.now})
	if err != nil || len(before.PolicyNames) != 0 {
		t.Fatalf("before attach: %v %v", before, err)
	}
	if _, err := f.svc.CreatePolicy(ctx, f.admin, "p", "", []byte(`{"Statement":[{"Effect":"Allow","Action":"atelier:user:List","Resource":"*"}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.AttachPolicy(ctx, f.admin, "cached", "p"); err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest("GET", "http://atelier/x", nil)
	sigv4.SignRequest(req, sigv4.Credentials{AccessKey: ak, SecretKey: sk}, "us-east-1", "atelier", sigv4.EmptyPayloadHash, f.clock.now())
	after, _, err := f.svc.AuthenticateSigV4(ctx, req, sigv4.Verifier{Region: "us-east-1", AnyRegion: true, Service: "atelier", Now: f.clock.now})
	if err != nil || len(after.PolicyNames) != 1 {
		t.Fatalf("after attach: %v %v", after, err)
	}
	// Principals handed out are copies: changing one does not change the cache.
	after.SourceIP = "203.0.113.9"
	req, _ = http.NewRequest("GET", "http://atelier/x", nil)
	sigv4.SignRequest(req, sigv4.Credentials{AccessKey: ak, SecretKey: sk}, "us-east-1", "atelier", sigv4.EmptyPayloadHash, f.clock.now())
	again, _, _ := f.svc.AuthenticateSigV4(ctx, req, sigv4.Verifier{Region: "us-east-1", AnyRegion: true, Service: "atelier", Now: f.clock.now})
	if again.SourceIP != "" {
		t.Error("a principal from the cache shares state with an earlier one")
	}
}
