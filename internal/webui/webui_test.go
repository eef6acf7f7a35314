package webui

import (
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

// importRe finds module specifiers: `import … from '…'` and `export … from
// '…'` statements at the start of a line (over several lines), bare
// `import '…'`, and dynamic `import('…')` with a plain string.
var importRe = regexp.MustCompile(`(?ms)^(?:import|export)\s[^;]*?\bfrom\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)`)

// TestImportsResolve: every module the console imports is embedded (a
// typo would otherwise only show in a browser). Dynamic imports with a
// template (pages/${name}.js) are checked through main.js's sections.
func TestImportsResolve(t *testing.T) {
	h := New(Options{})
	for p, f := range h.files {
		if !strings.HasSuffix(p, ".js") && !strings.HasSuffix(p, ".mjs") {
			continue
		}
		for _, m := range importRe.FindAllStringSubmatch(string(f.body), -1) {
			spec := m[1] + m[2] + m[3]
			if !strings.HasPrefix(spec, ".") {
				t.Errorf("%s imports %q: only relative imports load without an import map", p, spec)
				continue
			}
			target := path.Join(path.Dir(p), spec)
			if _, ok := h.files[target]; !ok {
				t.Errorf("%s imports %q: %s is not embedded", p, spec, target)
			}
		}
	}
	main := string(h.files["js/main.js"].body)
	for _, m := range regexp.MustCompile(`module: '([a-z-]+)'`).FindAllStringSubmatch(main, -1) {
		if _, ok := h.files["pages/"+m[1]+".js"]; !ok {
			t.Errorf("main.js names section module %q: pages/%s.js is not embedded", m[1], m[1])
		}
	}
}

// TestNoMarkupFromStrings: our own code never turns strings into markup or
// code (the CSP forbids eval; innerHTML would defeat text rendering).
func TestNoMarkupFromStrings(t *testing.T) {
	bad := regexp.MustCompile(`innerHTML|outerHTML\s*=|dangerouslySetInnerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(`)
	for p, f := range New(Options{}).files {
		if strings.HasPrefix(p, "vendor/") || !strings.HasSuffix(p, ".js") {
			continue
		}
		if loc := bad.FindIndex(f.body); loc != nil {
			t.Errorf("%s: %q", p, f.body[loc[0]:loc[1]])
		}
	}
	index := string(New(Options{}).files["index.html"].body)
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(index, -1) {
		if !strings.Contains(tag, "src=") {
			t.Errorf("index.html has an inline script: %s", tag)
		}
	}
	if strings.Contains(index, "style=") || strings.Contains(index, "<style") {
		t.Error("index.html has inline style")
	}
}

func TestHeaders(t *testing.T) {
	h := New(Options{})
	for _, p := range []string{"/console/", "/console/app.css", "/console/missing.png"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		if w.Header().Get("Content-Security-Policy") != CSP || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %v", p, w.Header())
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("HEAD", "/console/js/main.js", nil))
	if w.Code != http.StatusOK || w.Body.Len() != 0 || w.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD: %d %d %v", w.Code, w.Body.Len(), w.Header())
	}
}

// TestCSPConnectsToTheS3Origin: the console's connect-src names the S3
// origin it was configured with — that one, whatever a request's Host
// says — and nothing that is not a plain origin.
func TestCSPConnectsToTheS3Origin(t *testing.T) {
	h := New(Options{S3Origin: "http://s3.example.com:9000"})
	r := httptest.NewRequest("GET", "/console/", nil)
	r.Host = "evil.example.com:9000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "connect-src 'self' http://s3.example.com:9000;") || strings.Contains(csp, "evil") {
		t.Errorf("CSP %q", csp)
	}
	for _, bad := range []string{"http://a.example.com; script-src *", "http://a.example.com/path", "*", "javascript:x",
		"http://a.example.com 'unsafe-inline'", "http://*.example.com", "ftp://a.example.com"} {
		if got := CSPWith(bad); got != CSP {
			t.Errorf("CSPWith(%q) = %q", bad, got)
		}
	}
}
