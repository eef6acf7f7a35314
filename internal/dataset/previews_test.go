package dataset

import (
	"bytes"
	"image/jpeg"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

func token(t *testing.T, previewURL string) string {
	t.Helper()
	tok, err := url.PathUnescape(strings.TrimPrefix(previewURL, PreviewPath))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestPreviewsAndThumbnails(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.svc.o.Now = func() time.Time { return now }
	e.svc.signer = newSigner(e.svc.o.Now)
	e.flowers("f/", 6)
	e.create("f", "f/")
	e.version("f", api.CreateDatasetVersionRequest{})
	pv, err := e.svc.Preview(e.ctx, e.alice, "f", "", 2, nil)
	if err != nil || len(pv.Samples) != 4 || pv.VersionName != "v1" {
		t.Fatalf("Preview = %+v, %v", pv, err)
	}
	cats := 0
	for _, smp := range pv.Samples {
		if smp.Annotations.Tags[0] == "cat" {
			cats++
		}
		if !strings.HasPrefix(smp.PreviewURL, PreviewPath) {
			t.Errorf("preview URL %q", smp.PreviewURL)
		}
	}
	if cats != 2 {
		t.Errorf("%d cats of 4 samples, want 2 per class", cats)
	}
	if pv, err := e.svc.Preview(e.ctx, e.alice, "f", "v1", 3, []string{"dog"}); err != nil || len(pv.Samples) != 3 || pv.Samples[0].Annotations.Tags[0] != "dog" {
		t.Errorf("Preview --class dog = %+v, %v", pv, err)
	}
	tok := token(t, pv.Samples[0].PreviewURL)
	jpg, err := e.svc.Thumbnail(e.ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(jpg))
	if err != nil || img.Bounds().Dx() != 8 || img.Bounds().Dy() != 6 {
		t.Fatalf("thumbnail: %v, %v", img.Bounds(), err)
	}
	// A forged or altered token, and an expired one, are refused.
	for _, bad := range []string{"", "x", tok[:len(tok)-1], tok + "A", strings.ToUpper(tok)} {
		if _, err := e.svc.Thumbnail(e.ctx, bad); errs.CodeOf(err) != CodePreviewToken {
			t.Errorf("token %q: %v", bad, err)
		}
	}
	now = now.Add(PreviewTTL + time.Second)
	if _, err := e.svc.Thumbnail(e.ctx, tok); errs.CodeOf(err) != CodePreviewToken || !strings.Contains(errs.UserMessage(err), "expired") {
		t.Errorf("expired token: %v", err)
	}
	now = now.Add(-PreviewTTL)
	// Bob sees no preview of alice's dataset.
	if _, err := e.svc.Preview(e.ctx, e.bob, "f", "", 2, nil); !errs.Is(err, errs.NotFound) {
		t.Errorf("bob's preview: %v", err)
	}
	// The owner pins samples; then turns previews off, which also ends
	// the URLs given before.
	d, err := e.svc.Update(e.ctx, e.alice, "f", &api.UpdateDatasetRequest{PreviewSamples: &[]string{"dog/003.png", "cat/001.png"}})
	if err != nil || len(d.PreviewSamples) != 2 {
		t.Fatalf("Update = %+v, %v", d, err)
	}
	pv, err = e.svc.Preview(e.ctx, e.alice, "f", "", 0, nil)
	if err != nil || len(pv.Samples) != 2 || pv.Samples[0].Key != "cat/001.png" || pv.Samples[1].Key != "dog/003.png" {
		t.Fatalf("pinned preview = %+v, %v", pv, err)
	}
	off := true
	if _, err := e.svc.Update(e.ctx, e.bob, "f", &api.UpdateDatasetRequest{PreviewsDisabled: &off}); !errs.Is(err, errs.NotFound) {
		t.Errorf("bob turns previews off: %v", err)
	}
	if _, err := e.svc.Update(e.ctx, e.alice, "f", &api.UpdateDatasetRequest{PreviewsDisabled: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Preview(e.ctx, e.alice, "f", "", 2, nil); errs.CodeOf(err) != CodePreviewsOff {
		t.Errorf("preview when off: %v", err)
	}
	if _, err := e.svc.Thumbnail(e.ctx, tok); errs.CodeOf(err) != CodePreviewsOff {
		t.Errorf("an older URL when off: %v", err)
	}
	on := false
	if _, err := e.svc.Update(e.ctx, e.alice, "f", &api.UpdateDatasetRequest{PreviewsDisabled: &on}); err != nil {
		t.Fatal(err)
	}
	// A changed object gives no thumbnail of other bytes than the version's.
	e.put("f/", map[string][]byte{pv.Samples[0].Key: pngOf(t, 8, 6, 4242)})
	if _, err := e.svc.Thumbnail(e.ctx, token(t, pv.Samples[0].PreviewURL)); errs.CodeOf(err) != CodeChanged {
		t.Errorf("thumbnail of a changed object: %v", err)
	}
}

func TestDetectionThumbnailDrawsBoxes(t *testing.T) {
	e := newEnv(t)
	e.put("voc/", map[string][]byte{"a.png": pngOf(t, 8, 6, 1), "a.xml": vocXML("cat", [4]int{1, 1, 6, 5})})
	if _, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: "b", DatasetType: "object_detection",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/voc/"}}}); err != nil {
		t.Fatal(err)
	}
	e.version("b", api.CreateDatasetVersionRequest{})
	pv, err := e.svc.Preview(e.ctx, e.alice, "b", "", 1, nil)
	if err != nil || len(pv.Samples) != 1 || len(pv.Samples[0].Annotations.Boxes) != 1 {
		t.Fatalf("Preview = %+v, %v", pv, err)
	}
	jpg, err := e.svc.Thumbnail(e.ctx, token(t, pv.Samples[0].PreviewURL))
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(jpg))
	if err != nil {
		t.Fatal(err)
	}
	// The box's outline is coloured; the image was a blank (transparent
	// → white, but for one pixel) 8×6.
	r, g, b, _ := img.At(3, 1).RGBA()
	if r > 0xF000 && g > 0xF000 && b > 0xF000 {
		t.Errorf("no box drawn at (3,1): %x %x %x", r, g, b)
	}
}
