package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/chromedp/chromedp"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
)

// TestS3CORSPresignedBrowser: a page on another origin uses presigned URLs
// (made with the Go SDK) from a real Chromium: a GET, a PUT (which the
// browser preflights with the URL's query), and an expired URL and a
// missing key whose error bodies the script can read because errors carry
// the CORS headers too.
func TestS3CORSPresignedBrowser(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><html><head><link rel="icon" href="data:,"></head><body><p>page</p></body></html>`))
	}))
	defer page.Close()
	ctx := context.Background()
	c := sdkClient(s)
	b := aws.String("cors-web")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("hello.txt"), Body: strings.NewReader("hello from S3")}); err != nil {
		t.Fatal(err)
	}
	_, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: b, CORSConfiguration: &s3types.CORSConfiguration{CORSRules: []s3types.CORSRule{{
		AllowedOrigins: []string{page.URL}, AllowedMethods: []string{"GET", "PUT", "HEAD"},
		AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: aws.Int32(60),
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	ps := s3.NewPresignClient(c)
	get, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("hello.txt")}, s3.WithPresignExpires(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	putURL, err := ps.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("from-browser.txt")}, s3.WithPresignExpires(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	missing, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("missing.txt")}, s3.WithPresignExpires(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", s.cfg.S3Endpoint+"/cors-web/hello.txt", nil)
	expired, err := sigv4.Presign(req, sigv4.Credentials{AccessKey: s.cfg.AccessKey, SecretKey: s.cfg.SecretKey}, "us-east-1", "s3",
		time.Now().Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	urls, _ := json.Marshal(map[string]string{"get": get.URL, "put": putURL.URL, "missing": missing.URL, "expired": expired.String()})

	tb := newTab(t)
	tb.run("open the page", chromedp.Navigate(page.URL), chromedp.WaitVisible(chromedp.CSS(`p`)))
	script := `(() => { const u = ` + string(urls) + `;
	(async () => {
		const out = {};
		const g = await fetch(u.get); out.get = [g.status, await g.text(), g.headers.get('ETag') || ''];
		const p = await fetch(u.put, { method: 'PUT', body: 'from the browser', headers: { 'Content-Type': 'text/plain' } }); out.put = [p.status, '', p.headers.get('ETag') || ''];
		const e = await fetch(u.expired); out.expired = [e.status, await e.text(), ''];
		const m = await fetch(u.missing); out.missing = [m.status, await m.text(), ''];
		return out;
	})().then((out) => { window.result = JSON.stringify(out); }, (err) => { window.result = JSON.stringify({ error: String(err) }); })
		.finally(() => document.body.insertAdjacentHTML('beforeend', '<div id="done">done</div>'));
	return 'started'; })()`
	if started, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](script)); err != nil || started != "started" {
		t.Fatalf("script: %q %v", started, err)
	}
	tb.run("the fetches", chromedp.WaitVisible(chromedp.CSS(`#done`)))
	res, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`window.result`))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string][]any
	if err := json.Unmarshal([]byte(res), &out); err != nil || out["get"] == nil {
		t.Fatalf("result %s: %v", res, err)
	}
	check := func(name string, status float64, body, header string) {
		t.Helper()
		r := out[name]
		if r[0] != status || !strings.Contains(r[1].(string), body) || (header != "" && r[2] == "") {
			t.Errorf("%s: %v, want %v with %q (exposed ETag: %v)", name, r, status, body, header != "")
		}
	}
	check("get", 200, "hello from S3", "ETag")
	check("put", 200, "", "ETag")
	check("expired", 403, "AccessDenied", "")
	check("missing", 404, "NoSuchKey", "")
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("from-browser.txt")})
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if aws.ToInt64(got.ContentLength) != int64(len("from the browser")) {
		t.Errorf("the browser's PUT stored %d bytes", aws.ToInt64(got.ContentLength))
	}
}
