package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
)

// recorded is one request seen by the fake server.
type recorded struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

// fake is an httptest server that records requests and answers each with
// the status and body its respond function chooses.
type fake struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	respond func(r *http.Request) (int, any)
}

func newFake(t *testing.T, respond func(r *http.Request) (int, any)) *fake {
	t.Helper()
	f := &fake{respond: respond}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(body), r.Header.Clone()})
		f.mu.Unlock()
		status, out := f.respond(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		switch out := out.(type) {
		case nil:
		case string:
			_, _ = io.WriteString(w, out)
		default:
			_ = json.NewEncoder(w).Encode(out)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fake) client(t *testing.T, opts ...Option) *Client {
	t.Helper()
	c, err := New(&config.ClientConfig{Endpoint: f.URL + "/", AccessKey: "AKTEST", SecretKey: "SKTEST"}, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func TestMethods(t *testing.T) {
	ctx := context.Background()
	user := api.User{UserID: "u-1", Name: "bob", CreateTime: 1700000000000}
	key := api.AccessKey{AccessKey: "AK1", SecretKey: "SK1", User: "bob", Status: "active"}
	pol := api.Policy{PolicyID: "p-1", Name: "read", Document: json.RawMessage(`{"Version":"1.1"}`)}
	tok := api.Token{Token: "tok", TokenID: "t-1", User: "bob", ExpiresAt: 1700086400000}
	tests := []struct {
		name       string
		status     int
		answer     any
		call       func(c *Client) (any, error)
		wantMethod string
		wantPath   string
		wantQuery  string
		wantBody   string // JSON, compared structurally; "" means no body
		want       any
		noAuth     bool
	}{
		{"CreateToken", 201, tok, func(c *Client) (any, error) {
			return c.CreateToken(ctx, api.CreateTokenRequest{AccessKey: "AK", SecretKey: "SK", DurationSeconds: 3600})
		}, "POST", "/api/v1/auth/tokens", "", `{"access_key":"AK","secret_key":"SK","duration_seconds":3600}`, &tok, true},
		{"ListTokens", 200, api.List[api.Token]{Total: 1, Count: 1, Items: []api.Token{tok}}, func(c *Client) (any, error) {
			return c.ListTokens(ctx, ListOptions{Offset: 5, Limit: 10})
		}, "GET", "/api/v1/auth/tokens", "limit=10&offset=5", "", &api.List[api.Token]{Total: 1, Count: 1, Items: []api.Token{tok}}, false},
		{"RevokeToken", 204, nil, func(c *Client) (any, error) {
			return nil, c.RevokeToken(ctx, CurrentToken)
		}, "DELETE", "/api/v1/auth/tokens/current", "", "", nil, false},
		{"Whoami", 200, api.Whoami{Name: "bob", AuthMethod: "sigv4", Policies: []string{}}, func(c *Client) (any, error) {
			return c.Whoami(ctx)
		}, "GET", "/api/v1/whoami", "", "", &api.Whoami{Name: "bob", AuthMethod: "sigv4", Policies: []string{}}, false},
		{"CreateUser", 201, user, func(c *Client) (any, error) {
			return c.CreateUser(ctx, api.CreateUserRequest{Name: "bob", Admin: true})
		}, "POST", "/api/v1/users", "", `{"name":"bob","admin":true}`, &user, false},
		{"ListUsers", 200, api.List[api.User]{Total: 1, Count: 1, Items: []api.User{user}}, func(c *Client) (any, error) {
			return c.ListUsers(ctx, ListOptions{})
		}, "GET", "/api/v1/users", "", "", &api.List[api.User]{Total: 1, Count: 1, Items: []api.User{user}}, false},
		{"GetUser escapes", 200, user, func(c *Client) (any, error) {
			return c.GetUser(ctx, "a b/c")
		}, "GET", "/api/v1/users/a%20b%2Fc", "", "", &user, false},
		{"DeleteUser", 204, nil, func(c *Client) (any, error) {
			return nil, c.DeleteUser(ctx, "bob")
		}, "DELETE", "/api/v1/users/bob", "", "", nil, false},
		{"AttachPolicy", 204, nil, func(c *Client) (any, error) {
			return nil, c.AttachPolicy(ctx, "bob", "read")
		}, "POST", "/api/v1/users/bob/policies", "", `{"policy":"read"}`, nil, false},
		{"ListUserPolicies", 200, api.List[api.Policy]{Total: 1, Count: 1, Items: []api.Policy{pol}}, func(c *Client) (any, error) {
			return c.ListUserPolicies(ctx, "bob", ListOptions{Limit: 2})
		}, "GET", "/api/v1/users/bob/policies", "limit=2", "", &api.List[api.Policy]{Total: 1, Count: 1, Items: []api.Policy{pol}}, false},
		{"DetachPolicy", 204, nil, func(c *Client) (any, error) {
			return nil, c.DetachPolicy(ctx, "bob", "read?x")
		}, "DELETE", "/api/v1/users/bob/policies/read%3Fx", "", "", nil, false},
		{"CreateAccessKey", 201, key, func(c *Client) (any, error) {
			return c.CreateAccessKey(ctx, api.CreateAccessKeyRequest{User: "bob", Description: "ci"})
		}, "POST", "/api/v1/access-keys", "", `{"user":"bob","description":"ci"}`, &key, false},
		{"ListAccessKeys user", 200, api.List[api.AccessKey]{}, func(c *Client) (any, error) {
			return c.ListAccessKeys(ctx, "bob smith", ListOptions{})
		}, "GET", "/api/v1/access-keys", "user=bob+smith", "", &api.List[api.AccessKey]{Items: []api.AccessKey{}}, false},
		{"ListAccessKeys own", 200, api.List[api.AccessKey]{}, func(c *Client) (any, error) {
			return c.ListAccessKeys(ctx, "", ListOptions{})
		}, "GET", "/api/v1/access-keys", "", "", &api.List[api.AccessKey]{Items: []api.AccessKey{}}, false},
		{"GetAccessKey", 200, key, func(c *Client) (any, error) {
			return c.GetAccessKey(ctx, "AK1")
		}, "GET", "/api/v1/access-keys/AK1", "", "", &key, false},
		{"UpdateAccessKey", 200, key, func(c *Client) (any, error) {
			return c.UpdateAccessKey(ctx, "AK1", api.UpdateAccessKeyRequest{Status: "disabled"})
		}, "PATCH", "/api/v1/access-keys/AK1", "", `{"status":"disabled"}`, &key, false},
		{"DeleteAccessKey", 204, nil, func(c *Client) (any, error) {
			return nil, c.DeleteAccessKey(ctx, "AK1")
		}, "DELETE", "/api/v1/access-keys/AK1", "", "", nil, false},
		{"CreatePolicy", 201, pol, func(c *Client) (any, error) {
			return c.CreatePolicy(ctx, api.CreatePolicyRequest{Name: "read", Document: json.RawMessage(`{"Version": "1.1"}`)})
		}, "POST", "/api/v1/policies", "", `{"name":"read","document":{"Version":"1.1"}}`, &pol, false},
		{"ListPolicies", 200, api.List[api.Policy]{Total: 1, Count: 1, Items: []api.Policy{pol}}, func(c *Client) (any, error) {
			return c.ListPolicies(ctx, ListOptions{})
		}, "GET", "/api/v1/policies", "", "", &api.List[api.Policy]{Total: 1, Count: 1, Items: []api.Policy{pol}}, false},
		{"GetPolicy", 200, pol, func(c *Client) (any, error) {
			return c.GetPolicy(ctx, "read")
		}, "GET", "/api/v1/policies/read", "", "", &pol, false},
		{"DeletePolicy", 204, nil, func(c *Client) (any, error) {
			return nil, c.DeletePolicy(ctx, "read")
		}, "DELETE", "/api/v1/policies/read", "", "", nil, false},
		{"Health", 200, api.Health{Status: "ok", Version: "v1"}, func(c *Client) (any, error) {
			return c.Health(ctx)
		}, "GET", "/healthz", "", "", &api.Health{Status: "ok", Version: "v1"}, true},
		{"Health unavailable", 503, api.Health{Status: "unavailable", Error: "store down"}, func(c *Client) (any, error) {
			return c.Health(ctx)
		}, "GET", "/healthz", "", "", &api.Health{Status: "unavailable", Error: "store down"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(*http.Request) (int, any) { return tt.status, tt.answer })
			got, err := tt.call(f.client(t))
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tt.wantMethod || r.Path != tt.wantPath || r.Query != tt.wantQuery {
				t.Errorf("request %s %s?%s, want %s %s?%s", r.Method, r.Path, r.Query, tt.wantMethod, tt.wantPath, tt.wantQuery)
			}
			checkBody(t, r.Body, tt.wantBody)
			checkAuth(t, r, tt.noAuth)
		})
	}
}

func checkBody(t *testing.T, got, want string) {
	t.Helper()
	if want == "" {
		if got != "" {
			t.Errorf("body %q, want none", got)
		}
		return
	}
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body %s, want %s", got, want)
	}
}

// checkAuth checks that r is SigV4-signed for service atelier (or carries no
// credentials at all when noAuth).
func checkAuth(t *testing.T, r recorded, noAuth bool) {
	t.Helper()
	authz := r.Header.Get("Authorization")
	if noAuth {
		if authz != "" || r.Header.Get("X-Auth-Token") != "" {
			t.Errorf("unauthenticated route got credentials: %q", authz)
		}
		return
	}
	if !strings.HasPrefix(authz, "AWS4-HMAC-SHA256 ") || !strings.Contains(authz, "AKTEST/") ||
		!strings.Contains(authz, "/us-east-1/atelier/aws4_request") {
		t.Errorf("Authorization = %q, want a SigV4 signature by AKTEST for us-east-1/atelier", authz)
	}
	sum := sha256.Sum256([]byte(r.Body))
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != hex.EncodeToString(sum[:]) {
		t.Errorf("X-Amz-Content-Sha256 = %q, want the body's hash", got)
	}
}

func TestWithToken(t *testing.T) {
	f := newFake(t, func(*http.Request) (int, any) { return 200, api.Whoami{Name: "bob"} })
	rt := &countingTransport{}
	c := f.client(t, WithToken("tok-123"), WithUserAgent("atelier-cli/test"), WithHTTPClient(&http.Client{Transport: rt}))
	if _, err := c.Whoami(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rt.n != 1 {
		t.Errorf("custom HTTP client carried %d requests, want 1", rt.n)
	}
	r := f.requests()[0]
	if r.Header.Get("X-Auth-Token") != "tok-123" || r.Header.Get("Authorization") != "" {
		t.Errorf("headers %v, want X-Auth-Token only", r.Header)
	}
	if ua := r.Header.Get("User-Agent"); ua != "atelier-cli/test" {
		t.Errorf("User-Agent = %q", ua)
	}
}

// countingTransport counts the requests it carries to the default transport.
type countingTransport struct{ n int }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n++
	return http.DefaultTransport.RoundTrip(r)
}

func TestAPIError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		answer any
		header string
		want   APIError
	}{
		{"api error", 404, api.Error{ErrorCode: "ATL.IAM.0004", ErrorMsg: `user "x" not found`, Hint: "list users with `atelier user list`", RequestID: "r-1"}, "",
			APIError{404, "ATL.IAM.0004", `user "x" not found`, "list users with `atelier user list`", "r-1"}},
		{"request id from header", 403, api.Error{ErrorCode: "ATL.IAM.0009", ErrorMsg: "denied"}, "r-2",
			APIError{403, "ATL.IAM.0009", "denied", "", "r-2"}},
		{"not json", 502, "<html>bad gateway</html>", "",
			APIError{502, "", "the server answered 502 Bad Gateway", "check that the endpoint is an Atelier server", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(r *http.Request) (int, any) { return tt.status, tt.answer })
			f.Config.Handler = withHeader(f.Config.Handler, "X-Request-Id", tt.header)
			_, err := f.client(t).GetUser(context.Background(), "x")
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %T %v, want *APIError", err, err)
			}
			if *ae != tt.want {
				t.Errorf("APIError = %+v, want %+v", *ae, tt.want)
			}
			if err.Error() != tt.want.Msg {
				t.Errorf("Error() = %q, want the message", err.Error())
			}
			if StatusOf(err) != tt.status {
				t.Errorf("StatusOf = %d", StatusOf(err))
			}
		})
	}
	if k := (&APIError{Status: 404}).Kind(); k != errs.NotFound {
		t.Errorf("Kind(404) = %v", k)
	}
	if k := (&APIError{Status: 507}).Kind(); k != errs.NoSpace {
		t.Errorf("Kind(507) = %v", k)
	}
}

func withHeader(h http.Handler, key, val string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if val != "" {
			w.Header().Set(key, val)
		}
		h.ServeHTTP(w, r)
	})
}

func TestNetworkError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	c, err := New(&config.ClientConfig{Endpoint: "http://" + addr, AccessKey: "a", SecretKey: "s"},
		WithConfigPath("/home/u/.atelier/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Whoami(context.Background())
	msg := errs.UserMessage(err)
	if want := "cannot reach the Atelier server at http://" + addr + ": connection refused"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	if h := string(errs.HintOf(err)); h != "is `atelier server` running? check endpoint in /home/u/.atelier/config.yaml" {
		t.Errorf("hint %q", h)
	}
	if errs.KindOf(err) != errs.Unavailable || errs.CodeOf(err) != CodeUnreachable {
		t.Errorf("kind %v code %q", errs.KindOf(err), errs.CodeOf(err))
	}
}

func TestUnresolvableHost(t *testing.T) {
	c, err := New(&config.ClientConfig{Endpoint: "http://atelier.invalid:8080"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Health(context.Background())
	if errs.CodeOf(err) != CodeUnreachable || !strings.Contains(errs.UserMessage(err), "atelier.invalid") {
		t.Errorf("err = %v", err)
	}
	if !strings.Contains(string(errs.HintOf(err)), "the client config") {
		t.Errorf("hint %q", errs.HintOf(err))
	}
}

func TestCancelled(t *testing.T) {
	started, block := make(chan struct{}), make(chan struct{})
	f := newFake(t, func(*http.Request) (int, any) { close(started); <-block; return 200, nil })
	defer close(block)
	c := f.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Whoami(ctx); errc <- err }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestNoCredentials(t *testing.T) {
	f := newFake(t, func(*http.Request) (int, any) { return 200, api.Whoami{} })
	c, err := New(&config.ClientConfig{Endpoint: f.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Whoami(context.Background()); errs.CodeOf(err) != CodeNoCredentials {
		t.Errorf("err = %v, want code %s", err, CodeNoCredentials)
	}
	if len(f.requests()) != 0 {
		t.Error("a request was sent without credentials")
	}
	if _, err := c.Health(context.Background()); err != nil {
		t.Errorf("Health needs no credentials: %v", err)
	}
}

func TestBadEndpoint(t *testing.T) {
	for _, ep := range []string{"", "127.0.0.1:8080", "ftp://h", "http://"} {
		if _, err := New(&config.ClientConfig{Endpoint: ep}); errs.CodeOf(err) != CodeBadEndpoint {
			t.Errorf("New(%q) err = %v, want code %s", ep, err, CodeBadEndpoint)
		}
	}
}

func TestBadResponse(t *testing.T) {
	f := newFake(t, func(*http.Request) (int, any) { return 200, "{not json" })
	_, err := f.client(t).Whoami(context.Background())
	if errs.CodeOf(err) != CodeBadResponse || !strings.Contains(errs.UserMessage(err), "GET /api/v1/whoami") {
		t.Errorf("err = %v", err)
	}
}

func TestEndpointPrefix(t *testing.T) {
	f := newFake(t, func(*http.Request) (int, any) { return 200, api.Whoami{} })
	c, err := New(&config.ClientConfig{Endpoint: f.URL + "/atelier/", AccessKey: "a", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Whoami(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := f.requests()[0].Path; p != "/atelier/api/v1/whoami" {
		t.Errorf("path %q", p)
	}
	if c.Endpoint() != f.URL+"/atelier" {
		t.Errorf("Endpoint() = %q", c.Endpoint())
	}
}

// pagedUsers answers GET /api/v1/users from n users, capping pages at max.
func pagedUsers(n, max int) func(r *http.Request) (int, any) {
	return func(r *http.Request) (int, any) {
		off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		lim, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if lim <= 0 || lim > max {
			lim = max
		}
		items := []api.User{}
		for i := off; i < n && i < off+lim; i++ {
			items = append(items, api.User{Name: "u" + strconv.Itoa(i)})
		}
		return 200, api.List[api.User]{Total: n, Count: len(items), Items: items}
	}
}

func TestAll(t *testing.T) {
	tests := []struct {
		name      string
		n, max    int
		wantCalls int
	}{
		{"empty", 0, 3, 1},
		{"one page", 2, 3, 1},
		{"exact pages", 6, 3, 2},
		{"server caps the limit", 7, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, pagedUsers(tt.n, tt.max))
			c := f.client(t)
			got, err := All(context.Background(), c.ListUsers)
			if err != nil {
				t.Fatal(err)
			}
			if got.Total != tt.n || got.Count != tt.n || len(got.Items) != tt.n {
				t.Fatalf("total %d count %d items %d, want %d", got.Total, got.Count, len(got.Items), tt.n)
			}
			for i, u := range got.Items {
				if u.Name != "u"+strconv.Itoa(i) {
					t.Fatalf("item %d = %q", i, u.Name)
				}
			}
			reqs := f.requests()
			if len(reqs) != tt.wantCalls {
				t.Errorf("%d requests, want %d", len(reqs), tt.wantCalls)
			}
			if len(reqs) > 1 && reqs[1].Query != "limit=500&offset=3" {
				t.Errorf("second page query %q", reqs[1].Query)
			}
		})
	}
}

func TestAllStopsOnShortServer(t *testing.T) {
	// A server that claims more items than it returns must not loop forever.
	f := newFake(t, func(*http.Request) (int, any) {
		return 200, api.List[api.User]{Total: 10, Count: 0, Items: nil}
	})
	got, err := All(context.Background(), f.client(t).ListUsers)
	if err != nil || got.Count != 0 || got.Items == nil {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestAllError(t *testing.T) {
	f := newFake(t, func(*http.Request) (int, any) { return 403, api.Error{ErrorCode: "ATL.IAM.0009", ErrorMsg: "denied"} })
	if _, err := All(context.Background(), f.client(t).ListPolicies); StatusOf(err) != 403 {
		t.Errorf("err = %v", err)
	}
}
