package apiserver

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// fakeDatasets serves the objects of its samples to the admin only, and
// records what the routes pass.
type fakeDatasets struct {
	Datasets // the methods these tests do not call
	objects  map[string][]byte
	filter   api.DatasetSampleFilter
	opts     api.ListOptions
	sample   string
	version  string
}

func (f *fakeDatasets) SampleObject(_ context.Context, p *auth.Principal, ref, sample, version string) (io.ReadCloser, *api.DatasetSampleObject, error) {
	f.sample, f.version = sample, version
	b, ok := f.objects[sample]
	if !ok || ref != "ds" || p.User.Name != "admin" {
		return nil, nil, errs.E("fake", errs.NotFound, errs.Code("ATL.DS.0001"), "dataset "+ref+" does not exist")
	}
	return io.NopCloser(bytes.NewReader(b)), &api.DatasetSampleObject{Key: sample, Size: int64(len(b)), ETag: "e-" + sample}, nil
}

func (f *fakeDatasets) Samples(_ context.Context, _ *auth.Principal, _ string, flt api.DatasetSampleFilter) (*api.DatasetSamples, error) {
	f.filter = flt
	return &api.DatasetSamples{Samples: []api.DatasetSample{}}, nil
}

func (f *fakeDatasets) Sample(_ context.Context, _ *auth.Principal, _, sample, version string) (*api.DatasetSample, error) {
	f.sample, f.version = sample, version
	return &api.DatasetSample{Key: sample}, nil
}

func (f *fakeDatasets) ListVersions(_ context.Context, _ *auth.Principal, _ string, opts api.ListOptions) ([]*api.DatasetVersion, int, error) {
	f.opts = opts
	return []*api.DatasetVersion{{VersionName: "v2"}}, 2, nil
}

func pngBytes(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDatasetSampleImage(t *testing.T) {
	e := newEnv(t)
	gif := []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")
	f := &fakeDatasets{objects: map[string][]byte{
		"cat/a.png":   pngBytes(t),
		"b.gif":       gif,
		"x.png":       []byte("<html><script>alert(1)</script></html>"),
		"svg.png":     []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`),
		"empty.jpg":   {},
		"notes/a.txt": []byte("hello"),
	}}
	d := e.api.deps
	d.Datasets = f
	d.Registry = prometheus.NewRegistry()
	e.srv = httptest.NewServer(New(d))
	t.Cleanup(e.srv.Close)

	for _, tc := range []struct {
		path, sample, ctype, disposition string
	}{
		{"/api/v1/datasets/ds/samples/cat%2Fa.png/image?version=v1", "cat/a.png", "image/png", ""},
		{"/api/v1/datasets/ds/samples/b.gif/image", "b.gif", "image/gif", ""},
		{"/api/v1/datasets/ds/samples/x.png/image", "x.png", "application/octet-stream", `attachment; filename=x.png`},
		{"/api/v1/datasets/ds/samples/svg.png/image", "svg.png", "application/octet-stream", `attachment; filename=svg.png`},
		{"/api/v1/datasets/ds/samples/empty.jpg/image", "empty.jpg", "application/octet-stream", `attachment; filename=empty.jpg`},
		{"/api/v1/datasets/ds/samples/notes%2Fa.txt/image", "notes/a.txt", "application/octet-stream", `attachment; filename=a.txt`},
	} {
		r := e.admin("GET", tc.path, "")
		if r.status != 200 || f.sample != tc.sample {
			t.Errorf("%s: %d %s (sample %q)", tc.path, r.status, r.body, f.sample)
			continue
		}
		h := r.header
		if h.Get("Content-Type") != tc.ctype || h.Get("Content-Disposition") != tc.disposition ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") == "" ||
			!bytes.Equal(r.body, f.objects[tc.sample]) || h.Get("ETag") != `"e-`+tc.sample+`"` {
			t.Errorf("%s: headers %v, %d bytes", tc.path, h, len(r.body))
		}
	}
	if f.sample != "notes/a.txt" || f.version != "" {
		t.Errorf("the route passed %q %q", f.sample, f.version)
	}
	if r := e.do("GET", "/api/v1/datasets/ds/samples/b.gif/image", "", e.ak, e.sk, "If-None-Match", `"e-b.gif"`); r.status != 304 || len(r.body) != 0 {
		t.Errorf("If-None-Match: %d %s", r.status, r.body)
	}
	// Another user's dataset (the fake refuses every other user) is a 404;
	// anonymous callers are refused before it is looked up.
	ak, sk := e.newUser("mallory")
	if r := e.do("GET", "/api/v1/datasets/ds/samples/b.gif/image", "", ak, sk); r.status != 404 || r.err().ErrorCode != "ATL.DS.0001" {
		t.Errorf("another user: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/v1/datasets/ds/samples/b.gif/image", "", "", ""); r.status != 401 {
		t.Errorf("anonymous: %d %s", r.status, r.body)
	}

	// The samples route passes its filters; versions are paged.
	e.mustJSON(e.admin("GET", "/api/v1/datasets/ds/samples?version=v1&class=%3Cimg%3E&labeled=false&proposed=true&after=k&limit=5", ""), 200, nil)
	if fl := f.filter; fl.Version != "v1" || fl.Class != "<img>" || fl.Labeled == nil || *fl.Labeled || !fl.Proposed || fl.After != "k" || fl.Limit != 5 {
		t.Errorf("filter %+v", fl)
	}
	if r := e.admin("GET", "/api/v1/datasets/ds/samples?labeled=maybe", ""); r.status != 400 {
		t.Errorf("labeled=maybe: %d", r.status)
	}
	var smp api.DatasetSample
	e.mustJSON(e.admin("GET", "/api/v1/datasets/ds/samples/cat%2Fa.png?version=v2", ""), 200, &smp)
	if smp.Key != "cat/a.png" || f.version != "v2" {
		t.Errorf("sample %+v, version %q", smp, f.version)
	}
	var l api.List[api.DatasetVersion]
	e.mustJSON(e.admin("GET", "/api/v1/datasets/ds/versions?offset=1&limit=1", ""), 200, &l)
	if l.Total != 2 || len(l.Items) != 1 || f.opts != (api.ListOptions{Offset: 1, Limit: 1}) {
		t.Errorf("versions %+v, %+v", l, f.opts)
	}
}

func TestImageType(t *testing.T) {
	for _, tc := range []struct {
		head []byte
		want string
	}{
		{[]byte("\x89PNG\r\n\x1a\n0000"), "image/png"},
		{[]byte("\xff\xd8\xff\xe0"), "image/jpeg"},
		{[]byte("GIF87a"), "image/gif"},
		{[]byte("RIFF\x00\x00\x00\x00WEBPVP8 "), "image/webp"},
		{[]byte("BM"), "image/bmp"},
		{[]byte("<svg xmlns='http://www.w3.org/2000/svg'/>"), ""},
		{[]byte("<!DOCTYPE html><img src=x onerror=alert(1)>"), ""},
		{[]byte("%PDF-1.4"), ""},
		{nil, ""},
	} {
		if got := imageType(tc.head); got != tc.want {
			t.Errorf("imageType(%q) = %q, want %q", tc.head, got, tc.want)
		}
	}
}

func FuzzImageType(f *testing.F) {
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte("<html>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if ct := imageType(b); ct != "" && !imageTypes[ct] {
			t.Fatalf("imageType(%q) = %q", b, ct)
		}
	})
}
