package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
)

// obsAPI calls the REST API signed with the access key in env (SigV4,
// service atelier) and decodes the JSON answer into out.
func obsAPI(t *testing.T, s *server, env []string, method, path string, body []byte, out any) int {
	t.Helper()
	var ak, sk string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ATELIER_ACCESS_KEY="); ok {
			ak = v
		}
		if v, ok := strings.CutPrefix(kv, "ATELIER_SECRET_KEY="); ok {
			sk = v
		}
	}
	req, err := http.NewRequest(method, s.cfg.Endpoint+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sigv4.SignRequest(req, sigv4.Credentials{AccessKey: ak, SecretKey: sk}, "us-east-1", "atelier", sigv4.HashPayload(body), time.Now())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	if res.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return res.StatusCode
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// evalString runs a JavaScript expression (a promise is awaited) in the tab.
func (tb *tab) evalString(what, js string) string {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// TestConsoleOBS drives the OBS pages as a user: create a bucket, upload a
// folder, browse prefixes, page through a long prefix, download, presign,
// delete with the confirmation, edit the lifecycle and policy, resume a
// multipart upload; small files go to the S3 endpoint as browser POST
// uploads, large ones in parts; a hostile key stays text; another user
// sees nothing.
func TestConsoleOBS(t *testing.T) {
	s := startServer(t, t.TempDir())
	if _, e, code := s.cli(nil, "user", "create", "alice"); code != 0 {
		t.Fatal(e)
	}
	out, e, code := s.cli(nil, "access-key", "create", "--user", "alice", "-o", "json")
	if code != 0 {
		t.Fatal(e)
	}
	alice := keyEnv(t, s, out)
	tb := newTab(t)
	tb.signInLink(s, alice)
	base := s.cfg.Endpoint + "/console/obs"

	// Buckets: create one.
	tb.run("open the buckets", chromedp.Navigate(base), pageReady("obs"))
	tb.run("create a bucket",
		chromedp.SetValue(chromedp.CSS(`#obs-new-bucket`), "photos"),
		chromedp.Click(chromedp.CSS(`form.obs-create button[type=submit]`)),
		pageReady("obs-bucket"))

	// A folder with nested files and a hostile name, through the folder
	// input (webkitdirectory): relative paths become keys.
	hostile := "<img src=x onerror=alert(1)>.txt"
	album := filepath.Join(t.TempDir(), "album")
	files := map[string]string{"a.txt": "alpha\n", "sub/b.txt": "bravo\n", "sub/deep/c.txt": "charlie\n", hostile: "not html\n"}
	writeFiles(t, album, files)
	tb.run("upload a folder", chromedp.SetUploadFiles(chromedp.CSS(`#obs-folder`), []string{album}),
		chromedp.WaitVisible(chromedp.CSS(`section.obs-upload[data-upload-state="done"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a.obs-folder[data-prefix="album/"]`)))
	if n := tb.evalString("uploaded", `String(document.querySelectorAll('[data-upload-key^="album/"][data-state="done"]').length)`); n != "4" {
		t.Errorf("%s files of the folder uploaded", n)
	}
	// Small files go straight to the S3 endpoint as browser POST uploads.
	if n := tb.evalString("posted", `String(document.querySelectorAll('[data-upload-key^="album/"][data-via="post"]').length)`); n != "4" {
		t.Errorf("%s files of the folder went through a POST upload:\n%s", n,
			tb.evalString("vias", `[...document.querySelectorAll('[data-upload-key]')].map(e => e.dataset.uploadKey + '=' + e.dataset.via).join(' ')`))
	}
	var hostileMeta api.OBSObject
	if obsAPI(t, s, alice, "GET", "/api/v1/obs/buckets/photos/objects/meta?key="+url.QueryEscape("album/"+hostile), nil, &hostileMeta); hostileMeta.Size != int64(len(files[hostile])) || hostileMeta.ContentType != "text/plain" {
		t.Errorf("the POSTed hostile key: %+v", hostileMeta)
	}
	tb.screenshot("obs-upload")
	tb.run("browse the prefixes",
		chromedp.Click(chromedp.CSS(`a.obs-folder[data-prefix="album/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-key="album/a.txt"]`)),
		chromedp.Click(chromedp.CSS(`a.obs-folder[data-prefix="album/sub/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-key="album/sub/b.txt"]`)),
		chromedp.WaitVisible(chromedp.CSS(`a.obs-folder[data-prefix="album/sub/deep/"]`)))
	// Plain files (the multi-file input) go under the current prefix.
	loose := t.TempDir()
	writeFiles(t, loose, map[string]string{"note.txt": "n", "todo.txt": "t"})
	tb.run("upload files", chromedp.SetUploadFiles(chromedp.CSS(`#obs-files`), []string{filepath.Join(loose, "note.txt"), filepath.Join(loose, "todo.txt")}),
		chromedp.WaitVisible(chromedp.CSS(`section.obs-upload[data-upload-state="done"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-key="album/sub/note.txt"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-key="album/sub/todo.txt"]`)))
	tb.run("up to album/", chromedp.Click(chromedp.CSS(`.obs-crumbs a[data-prefix="album/"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-key="album/a.txt"]`)))

	// The hostile key stays text.
	if got := tb.evalString("hostile key", `(() => { const el = [...document.querySelectorAll('.obs-key')].find(e => e.dataset.key === 'album/`+hostile+`');
		return el ? el.textContent + '|' + document.querySelectorAll('main img').length : 'missing' })()`); got != hostile+"|0" {
		t.Errorf("hostile key rendered as %q", got)
	}
	tb.screenshot("obs-objects")

	// A prefix with more objects than a page (50), made by the CLI.
	many := t.TempDir()
	m := map[string]string{}
	for i := range 120 {
		m[fmt.Sprintf("f%03d.txt", i)] = "x"
	}
	writeFiles(t, many, m)
	if _, e, code := s.cli(alice, "obs", "cp", "-r", many+"/", "obs://photos/many/"); code != 0 {
		t.Fatalf("obs cp: %s", e)
	}
	count := func() string {
		return tb.evalString("count rows", `String(document.querySelectorAll('[data-key^="many/"]').length)`)
	}
	tb.run("open the long prefix", chromedp.Navigate(base+"/photos?prefix=many%2F"), pageReady("obs-bucket"),
		chromedp.WaitVisible(chromedp.CSS(`[data-key="many/f000.txt"]`)))
	if n := count(); n != "50" {
		t.Errorf("page 1 has %s rows", n)
	}
	tb.run("page 2", chromedp.Click(chromedp.CSS(`[data-action="next-page"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-key="many/f050.txt"]`)))
	tb.run("page 3", chromedp.Click(chromedp.CSS(`[data-action="next-page"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-key="many/f100.txt"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-action="next-page"][disabled]`)))
	if n := count(); n != "20" {
		t.Errorf("page 3 has %s rows", n)
	}
	tb.run("previous page", chromedp.Click(chromedp.CSS(`.pager button:first-child`)), chromedp.WaitVisible(chromedp.CSS(`[data-key="many/f050.txt"]`)))

	// Download: the headers never let the console's origin render it.
	tb.run("back to album/", chromedp.Navigate(base+"/photos?prefix=album%2F"), pageReady("obs-bucket"), chromedp.WaitVisible(chromedp.CSS(`[data-key="album/a.txt"]`)))
	dl := tb.evalString("download", `(async () => { const href = document.querySelector('a[data-action="download"][aria-label="download album/`+hostile+`"]').getAttribute('href');
		const r = await fetch(href); return [r.status, r.headers.get('content-type'), r.headers.get('content-disposition'), r.headers.get('x-content-type-options'), await r.text()].join('|') })()`)
	if dl != `200|application/octet-stream|attachment; filename="`+hostile+`"|nosniff|not html`+"\n" {
		t.Errorf("download: %q", dl)
	}

	// A presigned link, fetched without credentials by Go's client.
	tb.run("presign", chromedp.Click(chromedp.CSS(`button[aria-label="presigned link to album/a.txt"]`)), chromedp.WaitVisible(chromedp.CSS(`#obs-presigned-url`)))
	link := tb.evalString("presigned url", `document.querySelector('#obs-presigned-url').value`)
	if !strings.HasPrefix(link, s.cfg.S3Endpoint+"/photos/album/a.txt?") {
		t.Errorf("presigned link %q (S3 endpoint %s)", link, s.cfg.S3Endpoint)
	}
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != "alpha\n" {
		t.Errorf("presigned GET: %d %q", res.StatusCode, body)
	}

	// Delete with the confirmation dialog.
	tb.run("delete an object", chromedp.Click(chromedp.CSS(`button[aria-label="delete album/a.txt"]`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog[open]`)),
		chromedp.Click(chromedp.CSS(`dialog[open] button.danger`)),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-key="album/a.txt"]`)))
	if st := obsAPI(t, s, alice, "GET", "/api/v1/obs/buckets/photos/objects/meta?key=album%2Fa.txt", nil, nil); st != 404 {
		t.Errorf("deleted object: %d", st)
	}

	// Lifecycle: an invalid configuration is refused with its code, then a
	// valid one is saved; then a policy.
	tb.run("open the settings", chromedp.Navigate(base+"/photos/settings"), pageReady("obs-settings"),
		chromedp.SetValue(chromedp.CSS(`#obs-lifecycle`), `{"rules":[{"status":"Enabled","prefix":"tmp/"}]}`),
		chromedp.Click(chromedp.CSS(`[data-editor="lifecycle"] [data-action="save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-editor="lifecycle"][data-result="error"] .error-box`)))
	msg, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`[data-editor="lifecycle"] .error-box`)))
	if !strings.Contains(msg, "ATL.OBS.0036") || !strings.Contains(msg, "no action") {
		t.Errorf("invalid lifecycle: %q", msg)
	}
	tb.run("a tag filter with an upload rule",
		chromedp.SetValue(chromedp.CSS(`#obs-lifecycle`), `{"rules":[{"status":"Enabled","filter":{"tags":[{"key":"env","value":"dev"}]},"abort_incomplete_days":2}]}`),
		chromedp.Click(chromedp.CSS(`[data-editor="lifecycle"] [data-action="validate"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-editor="lifecycle"][data-result="error"] .error-box`)))
	msg, _ = chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`[data-editor="lifecycle"] .error-box`)))
	if !strings.Contains(msg, "AbortIncompleteMultipartUpload cannot be specified with Tags") {
		t.Errorf("tags with abort: %q", msg)
	}
	tb.run("save a lifecycle",
		chromedp.SetValue(chromedp.CSS(`#obs-lifecycle`), `{"rules":[{"id":"tmp","status":"Enabled","prefix":"tmp/","expiration_days":3},`+
			`{"id":"raw","status":"Enabled","filter":{"prefix":"raw/","tags":[{"key":"env","value":"dev"}],"size_greater_than":1024},"expiration_date":"2030-01-01"}]}`),
		chromedp.Click(chromedp.CSS(`[data-editor="lifecycle"] [data-action="validate"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-editor="lifecycle"][data-result="ok"]`)),
		chromedp.Click(chromedp.CSS(`[data-editor="lifecycle"] [data-action="save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-editor="lifecycle"] [data-action="remove"]`)))
	var lc api.OBSLifecycle
	if obsAPI(t, s, alice, "GET", "/api/v1/obs/buckets/photos/lifecycle", nil, &lc); len(lc.Rules) != 2 || lc.Rules[0].ExpirationDays != 3 ||
		lc.Rules[1].Filter == nil || len(lc.Rules[1].Filter.Tags) != 1 || lc.Rules[1].Filter.SizeGreaterThan != 1024 || lc.Rules[1].ExpirationDate != "2030-01-01T00:00:00Z" {
		t.Errorf("lifecycle %+v", lc)
	}
	// The editor shows what was stored, filter and date included.
	tb.run("the stored lifecycle", chromedp.Navigate(base+"/photos/settings"), pageReady("obs-settings"),
		chromedp.WaitVisible(chromedp.CSS(`[data-editor="lifecycle"] [data-action="remove"]`)))
	shown, _ := chromedp.Run(tb.ctx, chromedp.Value(chromedp.CSS(`#obs-lifecycle`)))
	for _, want := range []string{`"size_greater_than": 1024`, `"expiration_date": "2030-01-01T00:00:00Z"`, `"key": "env"`} {
		if !strings.Contains(shown, want) {
			t.Errorf("the editor lacks %s:\n%s", want, shown)
		}
	}
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["obs:GetObject"],"Resource":["obs:::photos/album/*"]}]}`
	tb.run("save a policy",
		chromedp.SetValue(chromedp.CSS(`#obs-policy`), strings.Replace(policy, `"Allow"`, `"Permit"`, 1)),
		chromedp.Click(chromedp.CSS(`[data-editor="policy"] [data-action="validate"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-editor="policy"][data-result="error"] .error-box`)))
	msg, _ = chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`[data-editor="policy"] .error-box`)))
	if !strings.Contains(msg, "ATL.OBS.0034") {
		t.Errorf("invalid policy: %q", msg)
	}
	tb.run("save a valid policy",
		chromedp.SetValue(chromedp.CSS(`#obs-policy`), policy),
		chromedp.Click(chromedp.CSS(`[data-editor="policy"] [data-action="save"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-editor="policy"] [data-action="remove"]`)))
	tb.evalString("scroll to the policy", `(window.scrollTo(0, 0), 'ok')`)
	tb.screenshot("obs-policy")
	// The policy applies on the S3 endpoint: album/ is public.
	if res, err := http.Get(s.cfg.S3Endpoint + "/photos/album/sub/b.txt"); err != nil || res.StatusCode != 200 {
		t.Errorf("anonymous GET under the policy: %v %v", res, err)
	} else {
		res.Body.Close()
	}

	// A resumed multipart upload: an upload began (part 1 sent) on a page
	// that went away; choosing the same file again lists the parts already
	// there and sends only the rest.
	bigDir := t.TempDir()
	big := append(bytes.Repeat([]byte("a"), 8<<20), []byte("the tail")...)
	bigPath := filepath.Join(bigDir, "big.bin")
	if err := os.WriteFile(bigPath, big, 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(bigPath)
	var up api.OBSUpload
	if obsAPI(t, s, alice, "POST", "/api/v1/obs/buckets/photos/uploads", []byte(`{"key":"big.bin"}`), &up) != 201 {
		t.Fatal("create upload")
	}
	var p1 api.OBSPart
	if obsAPI(t, s, alice, "PUT", "/api/v1/obs/buckets/photos/uploads/"+up.UploadID+"/parts/1?key=big.bin", big[:8<<20], &p1) != 200 {
		t.Fatal("part 1")
	}
	stored, _ := json.Marshal(map[string]any{"upload_id": up.UploadID, "part_size": 8 << 20})
	rk, _ := json.Marshal([]any{"photos", "big.bin", len(big), st.ModTime().UnixMilli()})
	tb.run("back to the bucket", chromedp.Navigate(base+"/photos"), pageReady("obs-bucket"))
	tb.evalString("remember the upload", fmt.Sprintf(`(localStorage.setItem(%q, %q), 'ok')`, "atelier.obs.upload:"+string(rk), stored))
	tb.run("resume the upload", chromedp.SetUploadFiles(chromedp.CSS(`#obs-files`), []string{bigPath}),
		chromedp.WaitVisible(chromedp.CSS(`section.obs-upload[data-upload-state="done"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-upload-key="big.bin"][data-state="done"][data-resumed="1"][data-via="multipart"]`)))
	var ob api.OBSObject
	if obsAPI(t, s, alice, "GET", "/api/v1/obs/buckets/photos/objects/meta?key=big.bin", nil, &ob); ob.Size != int64(len(big)) || ob.Parts != 2 {
		t.Errorf("resumed object %+v", ob)
	}
	if left := tb.evalString("forgotten", `String(Object.keys(localStorage).filter(k => k.startsWith('atelier.obs.upload:')).length)`); left != "0" {
		t.Errorf("%s uploads still remembered", left)
	}

	// The buckets page, with the bucket and its configuration.
	tb.run("buckets", chromedp.Navigate(base), pageReady("obs"), chromedp.WaitVisible(chromedp.CSS(`a[data-bucket="photos"]`)))
	tb.screenshot("obs-buckets")

	// Another user sees none of it, and is refused the bucket.
	if _, e, code := s.cli(nil, "user", "create", "bob"); code != 0 {
		t.Fatal(e)
	}
	out, e, code = s.cli(nil, "access-key", "create", "--user", "bob", "-o", "json")
	if code != 0 {
		t.Fatal(e)
	}
	tb2 := newTab(t)
	tb2.signInLink(s, keyEnv(t, s, out))
	tb2.run("bob's buckets", chromedp.Navigate(base), pageReady("obs"))
	if n := tb2.evalString("bob's rows", `String(document.querySelectorAll('a[data-bucket]').length)`); n != "0" {
		t.Errorf("bob sees %s buckets", n)
	}
	tb2.run("bob opens alice's bucket", chromedp.Navigate(base+"/photos"),
		chromedp.WaitVisible(chromedp.CSS(`main[data-page="obs-bucket"][data-state="error"] .error-box`)))
	msg, _ = chromedp.Run(tb2.ctx, chromedp.Text(chromedp.CSS(`.error-box`)))
	if !strings.Contains(msg, "ATL.OBS.0004") {
		t.Errorf("bob on alice's bucket: %q", msg)
	}
}

// TestConsoleOBSPostFallback: when the S3 endpoint the server advertises
// cannot be reached from the browser, a small file goes through the REST
// API instead, and the upload list says so without alarm.
func TestConsoleOBSPostFallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	dir := t.TempDir()
	cfg := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(cfg, []byte("s3_advertise_url: "+closed+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, "--config", cfg)
	if _, e, code := s.cli(nil, "obs", "mb", "obs://docs"); code != 0 {
		t.Fatal(e)
	}
	tb := newTab(t)
	// The browser logs the refused connection to the S3 endpoint.
	tb.allow(regexp.MustCompile(`^error: Failed to load resource: net::ERR_CONNECTION_REFUSED$`))
	tb.signInLink(s, nil)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"small.txt": "small\n"})
	tb.run("upload a small file", chromedp.Navigate(s.cfg.Endpoint+"/console/obs/docs"), pageReady("obs-bucket"),
		chromedp.SetUploadFiles(chromedp.CSS(`#obs-files`), []string{filepath.Join(src, "small.txt")}),
		chromedp.WaitVisible(chromedp.CSS(`section.obs-upload[data-upload-state="done"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-upload-key="small.txt"][data-state="done"][data-via="api"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-key="small.txt"]`)))
	note, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`[data-upload-key="small.txt"]`)))
	if !strings.Contains(note, "sent through the API") || strings.Contains(note, "rror") {
		t.Errorf("the upload list says %q", note)
	}
}
