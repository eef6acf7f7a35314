package sigv4

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
	"github.com/atelier-dev/atelier/internal/testenv"
)

const curlPath = "/usr/bin/curl"

// curlServer is an httptest server whose handler verifies SigV4 for service
// "atelier" (any region), reads the body, and answers 200 with the body, or
// 403 with the S3 error code.
func curlServer(t *testing.T) *httptest.Server {
	t.Helper()
	v := &Verifier{AnyRegion: true, Service: "atelier", Lookup: staticLookup(map[string]string{"AKCURL": "curl-secret"})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := v.Verify(r)
		if err == nil {
			var body []byte
			body, err = io.ReadAll(r.Body)
			if err == nil {
				w.Write(body)
				return
			}
		}
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, s3code.Code(err)+": "+errs.UserMessage(err))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func curlAvailable(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(curlPath); err != nil {
		testenv.Need(t, "no %s", curlPath)
	}
	out, err := exec.Command(curlPath, "--help", "all").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--aws-sigv4") {
		testenv.Need(t, "curl without --aws-sigv4")
	}
}

func TestCurl(t *testing.T) {
	curlAvailable(t)
	srv := curlServer(t)
	tests := []struct {
		name     string
		user     string
		path     string
		args     []string
		wantCode string
		wantBody string
	}{
		{"GET", "AKCURL:curl-secret", "/api/v1/users", nil, "200", ""},
		{"GET with query", "AKCURL:curl-secret", "/api/v1/users?offset=0&limit=10&name=bob", nil, "200", ""},
		{"GET with unsorted query", "AKCURL:curl-secret", "/api/v1/users?z=1&a=2&m=", nil, "200", ""},
		{"GET query plus and escapes", "AKCURL:curl-secret", "/api/v1/users?q=a+b&r=%7e&s=%2F", nil, "200", ""},
		{"GET encoded path", "AKCURL:curl-secret", "/api/v1/obs/b/a%20b/c~d", nil, "200", ""},
		{"POST JSON", "AKCURL:curl-secret", "/api/v1/users", []string{"-H", "Content-Type: application/json", "-d", `{"name":"alice"}`}, "200", `{"name":"alice"}`},
		{"POST JSON with query", "AKCURL:curl-secret", "/api/v1/access-keys?dry_run=true", []string{"-d", `{"user":"alice"}`}, "200", `{"user":"alice"}`},
		{"wrong secret", "AKCURL:wrong", "/api/v1/users", nil, "403", "SignatureDoesNotMatch"},
		{"unknown key", "AKNOPE:curl-secret", "/api/v1/users", nil, "403", "InvalidAccessKeyId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-sS", "-o", "-", "-w", "\n%{http_code}",
				"--aws-sigv4", "aws:amz:us-east-1:atelier", "--user", tt.user}, tt.args...)
			args = append(args, srv.URL+tt.path)
			out, err := exec.Command(curlPath, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("curl: %v\n%s", err, out)
			}
			i := strings.LastIndexByte(string(out), '\n')
			body, code := string(out[:i]), string(out[i+1:])
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Errorf("curl %s: got %s %q, want %s %q", tt.path, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}
