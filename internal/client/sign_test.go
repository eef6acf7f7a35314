package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/config"
)

// TestSignaturesVerify sends requests of every shape (bodies, escaped path
// segments, query strings, a session token) to a server that checks their
// SigV4 signatures with the verifier the API server uses.
func TestSignaturesVerify(t *testing.T) {
	var (
		mu     sync.Mutex
		tokens []string
	)
	v := sigv4.Verifier{Region: Region, Service: Service,
		Lookup: func(context.Context, string) (string, error) { return "SKTEST", nil }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := v.Verify(r)
		if err == nil {
			_, err = io.ReadAll(r.Body) // a body that does not match its hash fails here
		}
		if err != nil {
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(api.Error{ErrorCode: "SIG", ErrorMsg: err.Error()})
			return
		}
		mu.Lock()
		tokens = append(tokens, res.SecurityToken)
		mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	c, err := New(&config.ClientConfig{Endpoint: srv.URL, AccessKey: "AKTEST", SecretKey: "SKTEST"}, WithSessionToken("sess"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := map[string]func() error{
		"body": func() error {
			_, err := c.CreateUser(ctx, api.CreateUserRequest{Name: "bob"})
			return err
		},
		"escaped path": func() error { _, err := c.GetUser(ctx, "a b/c+d~é"); return err },
		"query": func() error {
			_, err := c.ListAccessKeys(ctx, "bob smith&x=1", ListOptions{Offset: 1, Limit: 2})
			return err
		},
		"patch": func() error {
			_, err := c.UpdateAccessKey(ctx, "AK", api.UpdateAccessKeyRequest{Status: "disabled"})
			return err
		},
		"delete": func() error { return c.DetachPolicy(ctx, "bob", "p:1") },
	}
	for name, call := range calls {
		if err := call(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tokens) != len(calls) {
		t.Errorf("%d requests verified, want %d", len(tokens), len(calls))
	}
	for _, tok := range tokens {
		if tok != "sess" {
			t.Errorf("session token %q, want sess", tok)
		}
	}
}
