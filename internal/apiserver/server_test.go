package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/webui"
)

type env struct {
	t      *testing.T
	srv    *httptest.Server
	api    *Server
	iam    *auth.Service
	ak, sk string // admin
	ping   *fakePinger
	store  *sqlite.Store
}

type fakePinger struct{ err error }

func (f *fakePinger) Ping(context.Context) error { return f.err }

func newEnv(t *testing.T) *env { t.Helper(); return newEnvWith(t, nil) }

// newEnvWith is newEnv with more dependencies: more fills them in, given
// the metadata store and the IAM service.
func newEnvWith(t *testing.T, more func(d *Deps, st *sqlite.Store, iam *auth.Service)) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := auth.LoadOrCreateMasterKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	iam, err := auth.New(st, key, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ak, sk, err := iam.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ping := &fakePinger{}
	d := Deps{Auth: iam, Store: ping, Registry: prometheus.NewRegistry(), Region: "us-east-1", Version: "test", MaxBody: 64 << 10, Console: webui.New(webui.Options{})}
	if more != nil {
		more(&d, st, iam)
	}
	s := New(d)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, api: s, iam: iam, ak: ak, sk: sk, ping: ping, store: st}
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) err() api.Error {
	var e api.Error
	json.Unmarshal(r.body, &e)
	return e
}

// do sends a request signed with SigV4 by ak/sk (unsigned when ak is "").
func (e *env) do(method, path, body, ak, sk string, hdr ...string) resp {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if ak != "" {
		sigv4.SignRequest(req, sigv4.Credentials{AccessKey: ak, SecretKey: sk}, "us-east-1", "atelier", sigv4.HashPayload([]byte(body)), time.Now())
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

func (e *env) admin(method, path, body string) resp { return e.do(method, path, body, e.ak, e.sk) }

func (e *env) mustJSON(r resp, status int, v any) {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			e.t.Fatalf("decode %s: %v", r.body, err)
		}
	}
}

func (e *env) newUser(name string) (ak, sk string) {
	e.t.Helper()
	e.mustJSON(e.admin("POST", "/api/v1/users", `{"name":"`+name+`"}`), 201, nil)
	var k api.AccessKey
	e.mustJSON(e.admin("POST", "/api/v1/access-keys", `{"user":"`+name+`"}`), 201, &k)
	return k.AccessKey, k.SecretKey
}

func TestPublicEndpoints(t *testing.T) {
	e := newEnv(t)
	var h api.Health
	e.mustJSON(e.do("GET", "/healthz", "", "", ""), 200, &h)
	if h.Status != "ok" || h.Version != "test" {
		t.Errorf("health %+v", h)
	}
	e.ping.err = errors.New("database is locked")
	e.mustJSON(e.do("GET", "/healthz", "", "", ""), 503, &h)
	if h.Status != "unavailable" || !strings.Contains(h.Error, "database is locked") {
		t.Errorf("health %+v", h)
	}
	e.ping.err = nil
	r := e.do("GET", "/api/openapi.yaml", "", "", "")
	if r.status != 200 || !bytes.HasPrefix(r.body, []byte("openapi: 3")) {
		t.Errorf("openapi: %d %.40s", r.status, r.body)
	}
	e.admin("GET", "/api/v1/users", "")
	e.do("GET", "/api/v1/users/nobody", "", "", "")
	r = e.do("GET", "/metrics", "", "", "")
	for _, want := range []string{
		`atelier_http_requests_total{code="200",method="GET",route="/api/v1/users"} 1`,
		`atelier_http_requests_total{code="401",method="GET",route="/api/v1/users/{name}"} 1`,
		`atelier_http_request_duration_seconds_bucket{method="GET",route="/healthz"`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestOpenAPIMatchesRoutes keeps the contract and the served routes equal.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var spec struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := yaml.Unmarshal(OpenAPI(), &spec); err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	var documented []string
	for path, ops := range spec.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	served := New(Deps{}).Routes()
	sort.Strings(documented)
	sort.Strings(served)
	if strings.Join(documented, "\n") != strings.Join(served, "\n") {
		t.Errorf("openapi.yaml and the route table differ\ndocumented:\n%s\n\nserved:\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
}

func TestRequestConventions(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, method, path, body string
		status                   int
		code, msg, hint          string
	}{
		{"malformed json", "POST", "/api/v1/users", `{"name":`, 400, "ATL.API.0001", "malformed JSON", ""},
		{"not json", "POST", "/api/v1/users", `name=bob`, 400, "ATL.API.0001", "malformed JSON at byte", ""},
		{"unknown field", "POST", "/api/v1/users", `{"name":"x","nmae":"y"}`, 400, "ATL.API.0002", `unknown field "nmae"`, "accepted fields: name, admin"},
		{"wrong type", "POST", "/api/v1/users", `{"name":42}`, 400, "ATL.API.0003", `field "name" must be a string, not a number`, ""},
		{"wrong type bool", "POST", "/api/v1/users", `{"name":"x","admin":"yes"}`, 400, "ATL.API.0003", `field "admin" must be true or false`, ""},
		{"array body", "POST", "/api/v1/users", `["x"]`, 400, "ATL.API.0003", "must be a JSON object", ""},
		{"empty body", "POST", "/api/v1/users", ``, 400, "ATL.API.0004", "request body is empty", "accepted fields"},
		{"trailing data", "POST", "/api/v1/users", `{"name":"x"} {}`, 400, "ATL.API.0001", "after the JSON object", ""},
		{"too large", "POST", "/api/v1/users", `{"name":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "", "larger than", ""},
		{"empty name", "POST", "/api/v1/users", `{"name":""}`, 400, "ATL.IAM.0001", "must not be empty", "letters, digits"},
		{"name with space", "POST", "/api/v1/users", `{"name":"a b"}`, 400, "ATL.IAM.0001", "white space", ""},
		{"name of 200 chars", "POST", "/api/v1/users", `{"name":"` + strings.Repeat("n", 200) + `"}`, 400, "ATL.IAM.0001", "200 characters long", ""},
		{"no route", "GET", "/api/v1/nothing", ``, 404, "ATL.API.0006", "no API route", "openapi.yaml"},
		{"method not allowed", "PUT", "/api/v1/users", ``, 405, "ATL.API.0007", "PUT is not allowed", "GET, POST"},
		{"bad limit", "GET", "/api/v1/users?limit=abc", ``, 400, "ATL.API.0008", "limit", ""},
		{"limit too big", "GET", "/api/v1/users?limit=5000", ``, 400, "ATL.API.0008", "0 to 1000", ""},
		{"negative offset", "GET", "/api/v1/users?offset=-1", ``, 400, "ATL.API.0008", "offset", ""},
		{"bad key status", "PATCH", "/api/v1/access-keys/" + e.ak, `{"status":"paused"}`, 400, "ATL.IAM.0010", `"paused"`, ""},
		{"bad policy effect", "POST", "/api/v1/policies", `{"name":"p","document":{"Statement":[{"Effect":"Permit","Action":"*","Resource":"*"}]}}`, 400, "", "Permit", ""},
		{"policy bad wildcard", "POST", "/api/v1/policies", `{"name":"p","document":{"Statement":[{"Effect":"Allow","Action":"s3*:Get","Resource":"*"}]}}`, 400, "", "s3*:Get", ""},
		{"policy missing document", "POST", "/api/v1/policies", `{"name":"p"}`, 400, "ATL.API.0004", `"document" is required`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.admin(tt.method, tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			er := r.err()
			if tt.code != "" && er.ErrorCode != tt.code {
				t.Errorf("code %q, want %q", er.ErrorCode, tt.code)
			}
			if !strings.HasPrefix(er.ErrorCode, "ATL.") {
				t.Errorf("code %q is not ATL.*", er.ErrorCode)
			}
			if !strings.Contains(er.ErrorMsg, tt.msg) {
				t.Errorf("msg %q does not contain %q", er.ErrorMsg, tt.msg)
			}
			if !strings.Contains(er.Hint, tt.hint) {
				t.Errorf("hint %q does not contain %q", er.Hint, tt.hint)
			}
			if er.RequestID == "" || er.RequestID != r.header.Get("X-Request-Id") {
				t.Errorf("request id %q vs header %q", er.RequestID, r.header.Get("X-Request-Id"))
			}
		})
	}
	r := e.do("GET", "/healthz", "", "", "", "X-Request-Id", "my-trace-1")
	if r.header.Get("X-Request-Id") != "my-trace-1" {
		t.Errorf("caller's request id not kept: %q", r.header.Get("X-Request-Id"))
	}
	r = e.do("GET", "/healthz", "", "", "", "X-Request-Id", "bad id with spaces")
	if r.header.Get("X-Request-Id") == "" || strings.Contains(r.header.Get("X-Request-Id"), " ") {
		t.Errorf("bad request id echoed: %q", r.header.Get("X-Request-Id"))
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	ak, sk := e.newUser("alice")

	r := e.do("GET", "/api/v1/whoami", "", "", "")
	if r.status != 401 || r.err().ErrorCode != "ATL.AUTH.0101" || r.header.Get("WWW-Authenticate") == "" {
		t.Errorf("no credentials: %d %s", r.status, r.body)
	}
	var who api.Whoami
	e.mustJSON(e.do("GET", "/api/v1/whoami", "", ak, sk), 200, &who)
	if who.Name != "alice" || who.AuthMethod != "sigv4" || who.Admin {
		t.Errorf("whoami %+v", who)
	}
	r = e.do("GET", "/api/v1/whoami", "", ak, sk+"x")
	if r.status != 401 || !strings.Contains(r.err().ErrorMsg, "signature") {
		t.Errorf("wrong secret: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/api/v1/whoami", "", "ATLNOSUCHKEY00000000", sk)
	if r.status != 401 {
		t.Errorf("unknown key: %d %s", r.status, r.body)
	}
	// Signed body: POST with JSON.
	var k api.AccessKey
	e.mustJSON(e.do("POST", "/api/v1/access-keys", `{"description":"laptop"}`, ak, sk), 201, &k)
	if k.User != "alice" || k.SecretKey == "" || k.Description != "laptop" {
		t.Errorf("own key %+v", k)
	}
	// The secret is never returned again.
	r = e.do("GET", "/api/v1/access-keys/"+k.AccessKey, "", ak, sk)
	if r.status != 200 || strings.Contains(string(r.body), k.SecretKey) || strings.Contains(string(r.body), "secret_key") {
		t.Errorf("get key leaks the secret: %s", r.body)
	}

	// Tokens: create, use, revoke.
	var tok api.Token
	e.mustJSON(e.do("POST", "/api/v1/auth/tokens", `{"access_key":"`+ak+`","secret_key":"`+sk+`"}`, "", ""), 201, &tok)
	if tok.Token == "" || tok.User != "alice" || tok.ExpiresAt-tok.CreateTime != 24*3600*1000 {
		t.Errorf("token %+v", tok)
	}
	e.mustJSON(e.do("GET", "/api/v1/whoami", "", "", "", "X-Auth-Token", tok.Token), 200, &who)
	if who.Name != "alice" || who.AuthMethod != "token" {
		t.Errorf("whoami by token %+v", who)
	}
	r = e.do("POST", "/api/v1/auth/tokens", `{"access_key":"`+ak+`","secret_key":"nope"}`, "", "")
	if r.status != 401 || r.err().ErrorCode != "ATL.AUTH.0106" {
		t.Errorf("bad pair: %d %s", r.status, r.body)
	}
	r = e.do("DELETE", "/api/v1/auth/tokens/current", "", "", "", "X-Auth-Token", tok.Token)
	if r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/api/v1/whoami", "", "", "", "X-Auth-Token", tok.Token)
	if r.status != 401 || r.err().ErrorCode != "ATL.AUTH.0104" {
		t.Errorf("revoked token: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/api/v1/whoami", "", "", "", "X-Auth-Token", "atl_garbage")
	if r.status != 401 || r.err().ErrorCode != "ATL.AUTH.0102" {
		t.Errorf("garbage token: %d %s", r.status, r.body)
	}

	// A disabled key: 401 with its own code; enabled again it works.
	e.mustJSON(e.admin("PATCH", "/api/v1/access-keys/"+ak, `{"status":"disabled"}`), 200, nil)
	r = e.do("GET", "/api/v1/whoami", "", ak, sk)
	if r.status != 401 || r.err().ErrorCode != "ATL.AUTH.0105" || !strings.Contains(r.err().ErrorMsg, "disabled") {
		t.Errorf("disabled key: %d %s", r.status, r.body)
	}
	e.mustJSON(e.admin("PATCH", "/api/v1/access-keys/"+ak, `{"status":"active"}`), 200, nil)
	e.mustJSON(e.do("GET", "/api/v1/whoami", "", ak, sk), 200, nil)
}

func TestOwnershipOverHTTP(t *testing.T) {
	e := newEnv(t)
	aak, ask := e.newUser("alice")
	bak, _ := e.newUser("bob")

	// Another user's resources answer 404, forbidden actions 403.
	for _, path := range []string{"/api/v1/access-keys/" + bak, "/api/v1/access-keys/" + e.ak, "/api/v1/users/bob", "/api/v1/users/admin/policies"} {
		if r := e.do("GET", path, "", aak, ask); r.status != 404 {
			t.Errorf("GET %s as alice: %d, want 404", path, r.status)
		}
	}
	if r := e.do("DELETE", "/api/v1/access-keys/"+bak, "", aak, ask); r.status != 404 {
		t.Errorf("delete bob's key as alice: %d", r.status)
	}
	if r := e.do("POST", "/api/v1/users", `{"name":"mallory"}`, aak, ask); r.status != 403 || r.err().ErrorCode != "ATL.IAM.0011" {
		t.Errorf("create user as alice: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/v1/policies", `{"name":"p","document":{"Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}}`, aak, ask); r.status != 403 {
		t.Errorf("create policy as alice: %d %s", r.status, r.body)
	}
	var l api.List[api.User]
	e.mustJSON(e.do("GET", "/api/v1/users", "", aak, ask), 200, &l)
	if l.Total != 1 || l.Count != 1 || l.Items[0].Name != "alice" {
		t.Errorf("alice lists %+v", l)
	}

	// A policy grant widens what alice sees.
	e.mustJSON(e.admin("POST", "/api/v1/policies", `{"name":"see-users","document":{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["atelier:user:Get","atelier:user:List"],"Resource":["atelier:::user/*"]}]}}`), 201, nil)
	r := e.admin("POST", "/api/v1/users/alice/policies", `{"policy":"see-users"}`)
	if r.status != 204 {
		t.Fatalf("attach: %d %s", r.status, r.body)
	}
	e.mustJSON(e.do("GET", "/api/v1/users", "", aak, ask), 200, &l)
	if l.Total != 3 {
		t.Errorf("alice with policy lists %d users", l.Total)
	}
	var u api.User
	e.mustJSON(e.do("GET", "/api/v1/users/alice", "", aak, ask), 200, &u)
	if len(u.Policies) != 1 || u.Policies[0] != "see-users" {
		t.Errorf("alice's policies %v", u.Policies)
	}
	if r := e.do("DELETE", "/api/v1/users/bob", "", aak, ask); r.status != 403 {
		t.Errorf("delete visible bob as alice: %d, want 403", r.status)
	}
	if r := e.admin("DELETE", "/api/v1/policies/see-users", ""); r.status != 409 {
		t.Errorf("delete attached policy: %d", r.status)
	}
	if r := e.admin("DELETE", "/api/v1/users/alice/policies/see-users", ""); r.status != 204 {
		t.Errorf("detach: %d %s", r.status, r.body)
	}
	if r := e.admin("DELETE", "/api/v1/policies/see-users", ""); r.status != 204 {
		t.Errorf("delete policy: %d %s", r.status, r.body)
	}
	var pl api.List[api.Policy]
	e.mustJSON(e.admin("GET", "/api/v1/policies", ""), 200, &pl)
	if pl.Total != 0 || pl.Items == nil {
		t.Errorf("policies after delete %+v", pl)
	}
}

func TestTemporaryCredentialsOverHTTP(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.newUser("gina")
	var u api.User
	e.mustJSON(e.admin("GET", "/api/v1/users/gina", ""), 200, &u)
	tc, err := e.iam.IssueTemporary(ctx, u.UserID, []byte(`{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["atelier:accesskey:List"],"Resource":["*"]}]}`), time.Hour, "test")
	if err != nil {
		t.Fatal(err)
	}
	send := func(method, path, body, token string) resp {
		req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
		sigv4.SignRequest(req, sigv4.Credentials{AccessKey: tc.AccessKey, SecretKey: tc.SecretKey, SessionToken: token}, "us-east-1", "atelier", sigv4.HashPayload([]byte(body)), time.Now())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return resp{status: res.StatusCode, body: b}
	}
	var who api.Whoami
	e.mustJSON(send("GET", "/api/v1/whoami", "", tc.SessionToken), 200, &who)
	if !who.Temporary || who.Name != "gina" || who.ExpiresAt == 0 {
		t.Errorf("whoami %+v", who)
	}
	if r := send("GET", "/api/v1/access-keys", "", tc.SessionToken); r.status != 200 {
		t.Errorf("allowed by the session policy: %d %s", r.status, r.body)
	}
	// Owning her own keys does not help: the session policy narrows it.
	if r := send("POST", "/api/v1/access-keys", `{}`, tc.SessionToken); r.status != 403 {
		t.Errorf("create key with narrowed credentials: %d %s", r.status, r.body)
	}
	if r := send("GET", "/api/v1/whoami", "", ""); r.status != 401 || !strings.Contains(r.err().ErrorMsg, "session token") {
		t.Errorf("without session token: %d %s", r.status, r.body)
	}
	if r := send("GET", "/api/v1/whoami", "", "atls_wrong"); r.status != 401 {
		t.Errorf("wrong session token: %d %s", r.status, r.body)
	}
}
