package cli

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/api"
)

const created = int64(1700000000000)

// fixtures returns a user, an access key, a policy and a token as the API
// would answer them.
func fixtures() (api.User, api.AccessKey, api.Policy, api.Token) {
	return api.User{UserID: "u-bob", Name: "bob", CreateTime: created, Policies: []string{"read"}},
		api.AccessKey{AccessKey: "AKBOB", SecretKey: "SKBOB", User: "bob", Status: "active", Description: "ci", CreateTime: created},
		api.Policy{PolicyID: "p-1", Name: "read", Owner: "admin", Document: json.RawMessage(`{"Version":"1.1","Statement":[]}`), CreateTime: created, Users: []string{"bob"}},
		api.Token{Token: "tok-secret", TokenID: "t-1", User: "bob", AccessKey: "AKTEST", CreateTime: created, ExpiresAt: created + 86400000}
}

func TestCommands(t *testing.T) {
	bob, bobKey, readPol, bobToken := fixtures()
	tests := []struct {
		name       string
		args       []string
		stdin      string
		method     string
		path       string
		status     int
		answer     any
		wantQuery  string
		wantBody   string   // JSON, compared structurally; "" means none
		wantOut    []string // substrings of stdout
		wantErrOut []string // substrings of stderr
	}{
		{name: "whoami", args: []string{"whoami"}, method: "GET", path: "/api/v1/whoami", status: 200,
			answer:  api.Whoami{UserID: "u-bob", Name: "bob", AuthMethod: "sigv4", AccessKey: "AKTEST", Policies: []string{"read", "write"}},
			wantOut: []string{"Name:", "bob", "sigv4", "read, write"}},
		{name: "user create", args: []string{"user", "create", "bob", "--admin"}, method: "POST", path: "/api/v1/users", status: 201,
			answer: bob, wantBody: `{"name":"bob","admin":true}`, wantOut: []string{"Name:", "bob", "u-bob", timeMs(created)}},
		{name: "user list", args: []string{"user", "list"}, method: "GET", path: "/api/v1/users", status: 200,
			answer:    api.List[api.User]{Total: 1, Count: 1, Items: []api.User{bob}},
			wantQuery: "limit=500", wantOut: []string{"NAME", "USER ID", "ADMIN", "CREATED", "bob", "u-bob", "no"}},
		{name: "user get", args: []string{"user", "get", "bob"}, method: "GET", path: "/api/v1/users/bob", status: 200,
			answer: bob, wantOut: []string{"Policies:", "read"}},
		{name: "user get escapes", args: []string{"user", "get", "a/b c"}, method: "GET", path: "/api/v1/users/a%2Fb%20c", status: 200,
			answer: bob, wantOut: []string{"bob"}},
		{name: "user delete", args: []string{"user", "delete", "bob"}, method: "DELETE", path: "/api/v1/users/bob", status: 204,
			wantOut: []string{`deleted user "bob"`}},
		{name: "access-key create", args: []string{"access-key", "create", "--user", "bob", "--description", "ci"}, method: "POST", path: "/api/v1/access-keys", status: 201,
			answer: bobKey, wantBody: `{"user":"bob","description":"ci"}`,
			wantOut: []string{"Access key:", "AKBOB", "Secret key:", "SKBOB"}, wantErrOut: []string{"not shown again"}},
		{name: "access-key create for self", args: []string{"access-key", "create"}, method: "POST", path: "/api/v1/access-keys", status: 201,
			answer: bobKey, wantBody: `{}`, wantOut: []string{"SKBOB"}},
		{name: "access-key list", args: []string{"access-key", "list", "--user", "bob"}, method: "GET", path: "/api/v1/access-keys", status: 200,
			answer:    api.List[api.AccessKey]{Total: 1, Count: 1, Items: []api.AccessKey{bobKey}},
			wantQuery: "limit=500&user=bob", wantOut: []string{"ACCESS KEY", "STATUS", "AKBOB", "active", "ci"}},
		{name: "access-key get", args: []string{"access-key", "get", "AKBOB"}, method: "GET", path: "/api/v1/access-keys/AKBOB", status: 200,
			answer: api.AccessKey{AccessKey: "AKBOB", User: "bob", Status: "active"}, wantOut: []string{"AKBOB", "active"}},
		{name: "access-key delete", args: []string{"access-key", "delete", "AKBOB"}, method: "DELETE", path: "/api/v1/access-keys/AKBOB", status: 204,
			wantOut: []string{"deleted access key AKBOB"}},
		{name: "access-key disable", args: []string{"access-key", "disable", "AKBOB"}, method: "PATCH", path: "/api/v1/access-keys/AKBOB", status: 200,
			answer: api.AccessKey{AccessKey: "AKBOB", User: "bob", Status: "disabled"}, wantBody: `{"status":"disabled"}`,
			wantOut: []string{"disabled access key AKBOB of user bob"}},
		{name: "access-key enable", args: []string{"access-key", "enable", "AKBOB"}, method: "PATCH", path: "/api/v1/access-keys/AKBOB", status: 200,
			answer: api.AccessKey{AccessKey: "AKBOB", User: "bob", Status: "active"}, wantBody: `{"status":"active"}`,
			wantOut: []string{"enabled access key AKBOB"}},
		{name: "policy create from stdin", args: []string{"policy", "create", "read", "-f", "-", "--description", "read all"},
			stdin:  `{"Version": "1.1", "Statement": []}`,
			method: "POST", path: "/api/v1/policies", status: 201, answer: readPol,
			wantBody: `{"name":"read","description":"read all","document":{"Version":"1.1","Statement":[]}}`,
			wantOut:  []string{"Name:", "read", "Document:", `"Version": "1.1"`}},
		{name: "policy list", args: []string{"policy", "list"}, method: "GET", path: "/api/v1/policies", status: 200,
			answer:    api.List[api.Policy]{Total: 1, Count: 1, Items: []api.Policy{readPol}},
			wantQuery: "limit=500", wantOut: []string{"NAME", "POLICY ID", "OWNER", "read", "p-1", "admin"}},
		{name: "policy list of user", args: []string{"policy", "list", "--user", "bob"}, method: "GET", path: "/api/v1/users/bob/policies", status: 200,
			answer:    api.List[api.Policy]{Total: 1, Count: 1, Items: []api.Policy{readPol}},
			wantQuery: "limit=500", wantOut: []string{"read"}},
		{name: "policy get", args: []string{"policy", "get", "read"}, method: "GET", path: "/api/v1/policies/read", status: 200,
			answer: readPol, wantOut: []string{"Users:", "bob", `"Statement": []`}},
		{name: "policy attach", args: []string{"policy", "attach", "read", "--user", "bob"}, method: "POST", path: "/api/v1/users/bob/policies", status: 204,
			wantBody: `{"policy":"read"}`, wantOut: []string{`attached policy "read" to user "bob"`}},
		{name: "policy detach", args: []string{"policy", "detach", "read", "--user", "bob"}, method: "DELETE", path: "/api/v1/users/bob/policies/read", status: 204,
			wantOut: []string{`detached policy "read" from user "bob"`}},
		{name: "policy delete", args: []string{"policy", "delete", "read"}, method: "DELETE", path: "/api/v1/policies/read", status: 204,
			wantOut: []string{`deleted policy "read"`}},
		{name: "token create", args: []string{"token", "create", "--duration", "2h"}, method: "POST", path: "/api/v1/auth/tokens", status: 201,
			answer: bobToken, wantBody: `{"access_key":"AKTEST","secret_key":"SKTEST","duration_seconds":7200}`,
			wantOut: []string{"Token:", "tok-secret", "Expires:", timeMs(bobToken.ExpiresAt)}, wantErrOut: []string{"not shown again"}},
		{name: "token create default duration", args: []string{"token", "create"}, method: "POST", path: "/api/v1/auth/tokens", status: 201,
			answer: bobToken, wantBody: `{"access_key":"AKTEST","secret_key":"SKTEST","duration_seconds":86400}`},
		{name: "token list", args: []string{"token", "list"}, method: "GET", path: "/api/v1/auth/tokens", status: 200,
			answer:    api.List[api.Token]{Total: 1, Count: 1, Items: []api.Token{{TokenID: "t-1", User: "bob", ExpiresAt: created}}},
			wantQuery: "limit=500", wantOut: []string{"TOKEN ID", "EXPIRES", "REVOKED", "t-1", "bob"}},
		{name: "token revoke", args: []string{"token", "revoke", "t-1"}, method: "DELETE", path: "/api/v1/auth/tokens/t-1", status: 204,
			wantOut: []string{"revoked token t-1"}},
		{name: "token revoke current", args: []string{"token", "revoke", "current"}, method: "DELETE", path: "/api/v1/auth/tokens/current", status: 204,
			wantOut: []string{"revoked the current token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t).on(tt.method, tt.path, tt.status, tt.answer)
			r := runCLI(t, f.env(t), tt.stdin, tt.args...)
			if r.code != ExitOK {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1: %+v", len(reqs), reqs)
			}
			got := reqs[0]
			if got.Method != tt.method || got.Path != tt.path || got.Query != tt.wantQuery {
				t.Errorf("request %s %s?%s, want %s %s?%s", got.Method, got.Path, got.Query, tt.method, tt.path, tt.wantQuery)
			}
			checkJSONBody(t, got.Body, tt.wantBody)
			if tt.path != "/api/v1/auth/tokens" || tt.method != "POST" {
				if !strings.HasPrefix(got.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
					t.Errorf("request not SigV4-signed: %q", got.Header.Get("Authorization"))
				}
			}
			if ua := got.Header.Get("User-Agent"); !strings.HasPrefix(ua, "atelier-cli/") {
				t.Errorf("User-Agent %q", ua)
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tt.wantErrOut {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
		})
	}
}

func checkJSONBody(t *testing.T, got, want string) {
	t.Helper()
	if want == "" {
		if got != "" {
			t.Errorf("body %q, want none", got)
		}
		return
	}
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body %s, want %s", got, want)
	}
}

func TestTableAlignment(t *testing.T) {
	users := []api.User{{Name: "a", UserID: "u-1"}, {Name: "longer-name", UserID: "u-2", Admin: true}}
	f := newFakeAPI(t).on("GET", "/api/v1/users", 200, api.List[api.User]{Total: 2, Count: 2, Items: users})
	r := runCLI(t, f.env(t), "", "user", "list")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and 2 rows:\n%s", r.stdout)
	}
	col := strings.Index(lines[0], "USER ID")
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l[col:], "u-") {
			t.Errorf("column USER ID not aligned at %d:\n%s", col, r.stdout)
		}
	}
	if !strings.Contains(lines[1], "-") { // zero create time
		t.Errorf("zero time not shown as -: %q", lines[1])
	}
}

func TestJSONAndYAML(t *testing.T) {
	bob, bobKey, readPol, _ := fixtures()
	list := api.List[api.User]{Total: 1, Count: 1, Items: []api.User{bob}}
	tests := []struct {
		name string
		args []string
		path string
		ans  any
		want any // decoded stdout must equal this, re-encoded
	}{
		{"get json", []string{"user", "get", "bob", "-o", "json"}, "/api/v1/users/bob", bob, bob},
		{"get yaml", []string{"-o", "yaml", "user", "get", "bob"}, "/api/v1/users/bob", bob, bob},
		{"list json is the list object", []string{"user", "list", "--output", "json"}, "/api/v1/users", list, list},
		{"list yaml", []string{"user", "list", "-o=yaml"}, "/api/v1/users", list, list},
		{"policy document kept", []string{"policy", "get", "read", "-o", "json"}, "/api/v1/policies/read", readPol, readPol},
		{"secret in json", []string{"access-key", "get", "AKBOB", "-o", "yaml"}, "/api/v1/access-keys/AKBOB", bobKey, bobKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t).on("GET", tt.path, 200, tt.ans)
			r := runCLI(t, f.env(t), "", tt.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var got, want any
			if strings.Contains(strings.Join(tt.args, " "), "yaml") {
				if err := yaml.Unmarshal([]byte(r.stdout), &got); err != nil {
					t.Fatalf("stdout is not YAML: %v\n%s", err, r.stdout)
				}
				if strings.HasPrefix(strings.TrimSpace(r.stdout), "{") {
					t.Errorf("YAML output looks like JSON:\n%s", r.stdout)
				}
			} else if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			b, _ := json.Marshal(tt.want)
			_ = json.Unmarshal(b, &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("output %v, want %v", got, want)
			}
		})
	}
}

func TestDeleteQuietInJSON(t *testing.T) {
	f := newFakeAPI(t).on("DELETE", "/api/v1/users/bob", 204, nil)
	r := runCLI(t, f.env(t), "", "user", "delete", "bob", "-o", "json")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("exit %d stdout %q, want 0 and nothing", r.code, r.stdout)
	}
}

func TestExitCodes(t *testing.T) {
	notFound := api.Error{ErrorCode: "ATL.IAM.0004", ErrorMsg: `user "nope" not found`,
		Hint: "list users with `atelier user list`", RequestID: "r-1"}
	tests := []struct {
		name      string
		args      []string
		want      int
		wantLines []string // stderr, line by line (prefix match)
		wantOut   string   // substring of stdout
	}{
		{"help", []string{"--help"}, 0, nil, "Exit codes: 0 success"},
		{"bare root prints help", []string{}, 0, nil, "Available Commands"},
		{"bare group prints help", []string{"user"}, 0, nil, "create"},
		{"version", []string{"version"}, 0, nil, "Version:"},
		{"unknown command", []string{"frob"}, 2, []string{`atelier: unknown command "frob" for "atelier"`, "Run 'atelier --help' for usage."}, ""},
		{"suggestion", []string{"usr"}, 2, []string{`atelier: unknown command "usr" for "atelier"; did you mean "user"?`}, ""},
		{"unknown subcommand", []string{"user", "frob"}, 2, []string{`atelier: unknown command "frob" for "atelier user"`, "Run 'atelier user --help' for usage."}, ""},
		{"missing arg", []string{"user", "create"}, 2, []string{"atelier: missing argument NAME", "Run 'atelier user create --help' for usage."}, ""},
		{"extra arg", []string{"user", "get", "a", "b"}, 2, []string{`atelier: unexpected argument "b"`}, ""},
		{"empty arg", []string{"user", "get", ""}, 2, []string{"atelier: argument NAME is empty"}, ""},
		{"bad -o", []string{"user", "list", "-o", "xml"}, 2, []string{`atelier: invalid argument "xml" for "-o, --output" flag: must be one of table, json, yaml`, "Run 'atelier user list --help' for usage."}, ""},
		{"unknown flag", []string{"user", "list", "--frob"}, 2, []string{"atelier: unknown flag: --frob"}, ""},
		{"bad duration", []string{"token", "create", "--duration", "soon"}, 2, []string{`atelier: invalid argument "soon" for "--duration"`}, ""},
		{"zero duration", []string{"token", "create", "--duration", "0s"}, 2, []string{"atelier: --duration must be at least 1s"}, ""},
		{"negative limit", []string{"user", "list", "--limit", "-1"}, 2, []string{"atelier: --offset and --limit must not be negative"}, ""},
		{"policy without -f", []string{"policy", "create", "p"}, 2, []string{"atelier: required flag -f/--file not set"}, ""},
		{"attach without --user", []string{"policy", "attach", "p"}, 2, []string{"atelier: required flag --user not set"}, ""},
		{"API 404", []string{"user", "get", "nope"}, 1,
			[]string{"atelier: user \"nope\" not found (ATL.IAM.0004); hint: list users with `atelier user list`"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t).on("GET", "/api/v1/users/nope", 404, notFound)
			r := runCLI(t, f.env(t), "", tt.args...)
			if r.code != tt.want {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tt.want, r.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			switch tt.want {
			case ExitOK:
				if r.stderr != "" {
					t.Errorf("stderr %q, want none", r.stderr)
				}
			case ExitFailure, ExitUsage: // one line, plus the --help line for usage errors
				if len(lines) != tt.want || (tt.want == ExitUsage && !strings.HasPrefix(lines[1], "Run 'atelier")) {
					t.Errorf("stderr has %d lines, want %d:\n%s", len(lines), tt.want, r.stderr)
				}
			}
			for i, w := range tt.wantLines {
				if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
					t.Errorf("stderr line %d = %q, want prefix %q", i, lineAt(lines, i), w)
				}
			}
			if !strings.Contains(r.stdout, tt.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantOut, r.stdout)
			}
		})
	}
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

func TestUsageErrorSendsNoRequest(t *testing.T) {
	f := newFakeAPI(t)
	for _, args := range [][]string{{"user", "create"}, {"user", "list", "-o", "xml"}, {"token", "create", "--duration", "0s"}} {
		if r := runCLI(t, f.env(t), "", args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d", args, r.code)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestPolicyCreateInvalidJSON(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file, stdin string
		want              []string
	}{
		{"syntax error with position", writeFile(t, dir, "bad.json", "{\n  \"Version\": \"1.1\",\n  }\n", 0o600), "",
			[]string{"is not valid JSON: line 3, column 3", "(ATL.CLI.0102); hint: a policy is a JSON object"}},
		{"not an object", writeFile(t, dir, "list.json", `["a"]`, 0o600), "", []string{"it is not an object"}},
		{"empty stdin", "-", "", []string{"policy document standard input is not valid JSON: it is empty"}},
		{"truncated stdin", "-", `{"Version": `, []string{"standard input is not valid JSON: line 1, column"}},
		{"missing file", filepath.Join(dir, "absent.json"), "", []string{"cannot read policy document", "(ATL.CLI.0101)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			r := runCLI(t, f.env(t), tt.stdin, "policy", "create", "p", "-f", tt.file)
			if r.code != ExitFailure {
				t.Errorf("exit %d, want 1", r.code)
			}
			if strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests sent for an invalid document", n)
			}
		})
	}
}

func TestPolicyCreateFromFile(t *testing.T) {
	_, _, readPol, _ := fixtures()
	f := newFakeAPI(t).on("POST", "/api/v1/policies", 201, readPol)
	file := writeFile(t, t.TempDir(), "p.json", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`, 0o600)
	r := runCLI(t, f.env(t), "", "policy", "create", "read", "--file", file)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var body api.CreatePolicyRequest
	if err := json.Unmarshal([]byte(f.requests()[0].Body), &body); err != nil {
		t.Fatal(err)
	}
	if body.Name != "read" || !strings.Contains(string(body.Document), "arn:aws:s3:::b/*") {
		t.Errorf("body %+v", body)
	}
}

func TestPaging(t *testing.T) {
	t.Run("all pages by default", func(t *testing.T) {
		f := newFakeAPI(t).on("GET", "/api/v1/users", 200, userPages(7, 3))
		r := runCLI(t, f.env(t), "", "user", "list", "-o", "json")
		var l api.List[api.User]
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		if l.Total != 7 || l.Count != 7 || len(l.Items) != 7 || l.Items[6].Name != "user6" {
			t.Errorf("list %+v", l)
		}
		if n := len(f.requests()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
	t.Run("one page with --offset and --limit", func(t *testing.T) {
		f := newFakeAPI(t).on("GET", "/api/v1/users", 200, userPages(7, 3))
		r := runCLI(t, f.env(t), "", "user", "list", "--offset", "2", "--limit", "2")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		reqs := f.requests()
		if len(reqs) != 1 || reqs[0].Query != "limit=2&offset=2" {
			t.Fatalf("requests %+v", reqs)
		}
		if !strings.Contains(r.stdout, "user2") || !strings.Contains(r.stdout, "user3") || strings.Contains(r.stdout, "user4") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		if !strings.Contains(r.stderr, "showing items 3-4 of 7") {
			t.Errorf("stderr %q", r.stderr)
		}
	})
}

func TestConfigResolution(t *testing.T) {
	f := newFakeAPI(t).on("GET", "/api/v1/whoami", 200, api.Whoami{Name: "bob"})
	dead := deadEndpoint(t)
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", "endpoint: "+f.URL+"\naccess_key: AKFILE\nsecret_key: SKFILE\n", 0o600)
	stale := writeFile(t, dir, "stale.yaml", "endpoint: "+dead+"\naccess_key: AKFILE\nsecret_key: SKFILE\n", 0o600)
	home := t.TempDir()
	writeFile(t, mkdir(t, filepath.Join(home, ".atelier")), "config.yaml", "endpoint: "+f.URL+"\naccess_key: AKHOME\nsecret_key: SKHOME\n", 0o600)
	tests := []struct {
		name    string
		env     map[string]string
		want    int
		wantKey string   // access key of the signature
		wantErr []string // substrings of stderr
	}{
		{"home default", map[string]string{"HOME": home}, 0, "AKHOME", nil},
		{"ATELIER_CONFIG", map[string]string{"HOME": home, "ATELIER_CONFIG": good}, 0, "AKFILE", nil},
		{"env overrides endpoint and key", map[string]string{"ATELIER_CONFIG": stale, "ATELIER_ENDPOINT": f.URL, "ATELIER_ACCESS_KEY": "AKENV"}, 0, "AKENV", nil},
		{"env only", map[string]string{"HOME": t.TempDir(), "ATELIER_ENDPOINT": f.URL, "ATELIER_ACCESS_KEY": "AKENV", "ATELIER_SECRET_KEY": "S"}, 0, "AKENV", nil},
		{"no config", map[string]string{"HOME": t.TempDir()}, 1, "",
			[]string{"does not exist (ATL.CFG.0101); hint: run `atelier configure` or set ATELIER_CONFIG"}},
		{"unknown key", map[string]string{"ATELIER_CONFIG": writeFile(t, dir, "bad.yaml", "endpoint: http://h:1\nregion: x\n", 0o600)}, 1, "",
			[]string{`unknown key "region"`, "(ATL.CFG.0102)"}},
		{"unreachable names the config", map[string]string{"ATELIER_CONFIG": stale}, 1, "",
			[]string{"atelier: cannot reach the Atelier server at " + dead + ": connection refused (ATL.CLI.0001); hint: is `atelier server` running? check endpoint in " + stale}},
		{"unreachable names the variable", map[string]string{"ATELIER_CONFIG": good, "ATELIER_ENDPOINT": dead}, 1, "",
			[]string{"check endpoint in ATELIER_ENDPOINT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.requests())
			r := runCLI(t, tt.env, "", "whoami")
			if r.code != tt.want {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.want, r.stderr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if tt.want == 0 {
				reqs := f.requests()
				authz := reqs[len(reqs)-1].Header.Get("Authorization")
				if len(reqs) != before+1 || !strings.Contains(authz, "Credential="+tt.wantKey+"/") {
					t.Errorf("Authorization %q, want credential %s", authz, tt.wantKey)
				}
			} else if strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr not one line: %q", r.stderr)
			}
		})
	}
}

// deadEndpoint is an http URL where nothing listens.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestVersionJSON(t *testing.T) {
	r := runCLI(t, nil, "", "version", "-o", "json")
	var v versionInfo
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
	}
	if v.Version == "" || v.GoVersion == "" || v.Commit == "" {
		t.Errorf("version info %+v", v)
	}
}
