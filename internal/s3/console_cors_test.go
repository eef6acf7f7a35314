package s3

import (
	"net/http"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
)

// TestConsoleOriginCORS: the console's origin may POST upload forms to a
// bucket (preflight and answer), and nothing else; other origins get only
// what the bucket's CORS configuration grants. No credentials mode.
func TestConsoleOriginCORS(t *testing.T) {
	const console, other = "http://console.example:8080", "https://evil.example"
	e := newTestEnv(t, "", func(d *Deps) { d.ConsoleOrigins = []string{console} })
	e.do("PUT", "/uploads", "", nil, e.admin())
	e.do("PUT", "/uploads/x.txt", "", []byte("x"), e.admin())
	anon := sigv4.Credentials{}
	granted := func(h http.Header, origin string) bool {
		return h.Get("Access-Control-Allow-Origin") == origin && h.Get("Access-Control-Allow-Credentials") == ""
	}

	for _, c := range []struct {
		what, path, origin, method, headers string
		ok                                  bool
	}{
		{"console POST to the bucket", "/uploads", console, "POST", "", true},
		{"another origin's POST", "/uploads", other, "POST", "", false},
		{"console PUT of an object", "/uploads/x.txt", console, "PUT", "", false},
		{"console POST to an object (multipart)", "/uploads/x.txt?uploads", console, "POST", "", false},
		{"console POST with a signed header", "/uploads", console, "POST", "authorization, x-amz-date", false},
		{"console DELETE", "/uploads/x.txt", console, "DELETE", "", false},
		{"console GET", "/uploads/x.txt", console, "GET", "", false},
	} {
		hdr := []string{"Origin", c.origin, "Access-Control-Request-Method", c.method}
		if c.headers != "" {
			hdr = append(hdr, "Access-Control-Request-Headers", c.headers)
		}
		st, h, body := e.do("OPTIONS", c.path, "", nil, anon, hdr...)
		switch {
		case c.ok && (st != 200 || !granted(h, c.origin) || h.Get("Access-Control-Allow-Methods") != "POST"):
			t.Errorf("%s: %d %v %s", c.what, st, h, body)
		case !c.ok && (st == 200 || h.Get("Access-Control-Allow-Origin") != ""):
			t.Errorf("%s was granted: %d %v", c.what, st, h)
		}
	}

	now := time.Now()
	fields, err := sigv4.PresignPost(e.admin(), "us-east-1", now, time.Hour, sigv4.PostOptions{Bucket: "uploads", Key: "a.txt", MaxSize: 5, MinSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	st, h, body := e.post("/uploads", "", fields, "a.txt", "hello", "Origin", console)
	if st != 204 || !granted(h, console) || h.Get("Access-Control-Expose-Headers") == "" {
		t.Errorf("console POST: %d %v %s", st, h, body)
	}
	// A refused form is still readable by the console.
	st, h, _ = e.post("/uploads", "", with(fields, "key", "b.txt"), "b.txt", "hello", "Origin", console)
	if st != 403 || !granted(h, console) {
		t.Errorf("console POST of another key: %d %v", st, h)
	}
	if st, h, _ := e.post("/uploads", "", fields, "a.txt", "hello", "Origin", other); st != 204 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin's POST got CORS headers: %d %v", st, h)
	}
	// Other requests from the console origin get nothing from this rule.
	if st, h, _ := e.do("GET", "/uploads/x.txt", "", nil, e.admin(), "Origin", console); st != 200 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("console GET got CORS headers: %d %v", st, h)
	}
	if st, h, _ := e.do("PUT", "/uploads/y.txt", "", []byte("y"), e.admin(), "Origin", console); st != 200 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("console PUT got CORS headers: %d %v", st, h)
	}

	// The bucket's own CORS rules still apply to their origins.
	cors := `<CORSConfiguration><CORSRule><AllowedOrigin>https://app.example</AllowedOrigin><AllowedMethod>PUT</AllowedMethod></CORSRule></CORSConfiguration>`
	if st, _, body := e.do("PUT", "/uploads?cors", "", []byte(cors), e.admin()); st != 200 {
		t.Fatalf("put cors: %d %s", st, body)
	}
	if st, h, _ := e.do("OPTIONS", "/uploads/x.txt", "", nil, anon, "Origin", "https://app.example", "Access-Control-Request-Method", "PUT"); st != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("bucket CORS preflight: %d %v", st, h)
	}
	if st, h, _ := e.do("OPTIONS", "/uploads/x.txt", "", nil, anon, "Origin", console, "Access-Control-Request-Method", "PUT"); st == 200 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("console PUT preflight with a bucket CORS for another origin: %d %v", st, h)
	}
}
