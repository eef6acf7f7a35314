package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/atelier-dev/atelier/internal/api"
)

// hostileLabel must stay text wherever the console shows it.
const hostileLabel = `<img src=x onerror=alert(1)>`

// pngDir writes name → w×h opaque PNGs (a gradient and a square, so that
// screenshots show something) into a new directory.
func pngDir(t *testing.T, sizes map[string][2]int) string {
	t.Helper()
	dir := t.TempDir()
	seed := 0
	for name, wh := range sizes {
		seed += 40
		w, h := wh[0], wh[1]
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for x := range w {
			for y := range h {
				c := color.RGBA{uint8(60 + 150*x/w), uint8(90 + seed%120), uint8(200 - 120*y/h), 255}
				if x >= w/4 && x < 3*w/4 && y >= h/4 && y < 3*h/4 {
					c = color.RGBA{uint8(200 - seed%100), 60, 40, 255}
				}
				img.Set(x, y, c)
			}
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// imagesLoaded is true once every image under sel has loaded with pixels.
func imagesLoaded(sel string, n int) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[bool](fmt.Sprintf(`(() => { const im = [...document.querySelectorAll(%q)];
		return im.length === %d && im.every((i) => i.complete && i.naturalWidth > 0); })()`, sel, n))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := poll(ctx, t)
		return chromedp.Void{}, err
	}
}

// drag presses the left button at (x0,y0), moves to (x1,y1) and releases.
func drag(x0, y0, x1, y1 float64) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, y0, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, (x0+x1)/2, (y0+y1)/2, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x1, y1, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, y1, chromedp.ButtonLeft),
	)
}

// TestConsoleDatasets drives the datasets pages: create a dataset over an
// uploaded image folder, publish a version, see its counts and its grid
// (the images load), follow a validation finding to its object, accept
// and reject auto-labeling proposals, label with keys and draw a box with
// the mouse, publish the labels as a new version and compare it. A
// hostile label stays text, and another user sees none of it.
func TestConsoleDatasets(t *testing.T) {
	s := startServiceServer(t)
	model := s.importModel("widths", "1.0.0", map[string]string{"config.json": echoConfig, "customize_service.py": widthHandler})
	svc := s.deploy("--name", "widths", "--model", model)
	s.waitRunning(svc.ServiceID)

	s.must(nil, "obs", "mb", "obs://data")
	s.must(nil, "obs", "cp", "-r", imageFolder(t, 3, "daisy", "rose"), "obs://data/flowers/")
	s.must(nil, "obs", "cp", "-r", pngDir(t, map[string][2]int{"s0.png": {8, 8}, "s1.png": {12, 8}, "s2.png": {8, 8}, "s3.png": {16, 8}}), "obs://data/shots/")
	s.must(nil, "obs", "cp", "-r", pngDir(t, map[string][2]int{"b0.png": {16, 12}, "b1.png": {16, 12}}), "obs://data/boxes/")
	var shots, boxes api.Dataset
	mustJSON(t, s.must(nil, "dataset", "create", "--name", "shots", "--type", "image_classification", "--source", "obs://data/shots/", "--format", "image_txt", "-o", "json"), &shots)
	s.must(nil, "dataset", "version", "shots", "--follow")
	mustJSON(t, s.must(nil, "dataset", "create", "--name", "boxes", "--type", "object_detection", "--source", "obs://data/boxes/", "--format", "voc", "-o", "json"), &boxes)
	s.must(nil, "dataset", "version", "boxes", "--follow")

	tb := newTab(t)
	tb.signInLink(s.server, nil)
	base := s.cfg.Endpoint + "/console/datasets"

	// Create a dataset over the uploaded folder and publish its first version.
	tb.run("create a dataset", chromedp.Navigate(base), pageReady("datasets"),
		chromedp.Click(chromedp.CSS(`.ds-create summary`)),
		chromedp.SendKeys(chromedp.CSS(`#ds-name`), "flowers"),
		chromedp.SendKeys(chromedp.CSS(`#ds-source`), "obs://data/flowers/"),
		chromedp.Click(chromedp.CSS(`.ds-create button[type=submit]`)),
		pageReady("dataset"))
	tb.run("publish v1", chromedp.Click(chromedp.CSS(`.ds-publish button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-published[data-status="published"][data-version="v1"]`)))
	if n, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`.ds-published [data-count="daisy"]`))); n != "3" {
		t.Errorf("v1 counts daisy %q", n)
	}

	// The version: counts per class; its grid of one class, images loaded.
	tb.run("open v1", chromedp.Click(chromedp.CSS(`a.ds-version[data-version="v1"]`)), pageReady("dataset-version"),
		chromedp.WaitVisible(chromedp.CSS(`[data-count="rose"]`)))
	for sel, want := range map[string]string{`.card [data-total]`: "6", `[data-count="rose"]`: "3", `[data-count="daisy"]`: "3"} {
		if got, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(sel))); got != want {
			t.Errorf("version page %s: %q, want %q", sel, got, want)
		}
	}
	tb.screenshot("datasets-version")
	tb.run("open the daisy grid", chromedp.Click(chromedp.CSS(`a.ds-class[data-class="daisy"]`)), pageReady("dataset-grid"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-grid[data-count="3"]`)), imagesLoaded(`.ds-grid img`, 3))
	keys, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.ds-tile')].map((e) => e.dataset.sampleKey)`))
	if strings.Join(keys, ",") != "daisy/0.png,daisy/1.png,daisy/2.png" {
		t.Errorf("daisy grid: %v", keys)
	}
	tb.run("the grid of every class", chromedp.Click(chromedp.CSS(`.ds-classes button[aria-pressed="false"]:not([data-class])`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-grid[data-count="6"]`)), imagesLoaded(`.ds-grid img`, 6))

	// A validation finding of shots v1 (an image without a label file)
	// opens its object, image and all.
	tb.run("follow a finding", chromedp.Navigate(base+"/"+shots.DatasetID+"/versions/v1"), pageReady("dataset-version"),
		chromedp.Click(chromedp.CSS(`a.ds-finding-object[data-object="s1.png"]`)), pageReady("dataset-sample"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-sample[data-sample-key="s1.png"]`)), imagesLoaded(`.ds-sample img`, 1))
	tb.run("validate the source", chromedp.Navigate(base+"/"+shots.DatasetID+"/validate"), pageReady("dataset-validate"),
		chromedp.Click(chromedp.CSS(`main button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-validation[data-warnings="4"] a.ds-finding-object[data-object="s3.png"]`)))

	// Labeling shots: auto-label two samples, accept one proposal and
	// reject the other, then tag two with the keyboard.
	tb.run("open the labeling queue", chromedp.Navigate(base+"/"+shots.DatasetID+"/label"), pageReady("dataset-label"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-sample-key="s0.png"][data-loaded="true"]`)),
		chromedp.Click(chromedp.CSS(`.ds-autolabel summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#al-service`)),
		chromedp.SendKeys(chromedp.CSS(`#al-limit`), "2"),
		chromedp.Click(chromedp.CSS(`.ds-autolabel button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-autolabel-result[data-proposed="2"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-proposal[data-proposal="narrow"]`)))
	tb.run("accept a proposal", chromedp.Click(chromedp.CSS(`.ds-accept`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-sample-key="s1.png"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-proposal[data-proposal="wide"]`)))
	tb.run("reject a proposal", chromedp.Click(chromedp.CSS(`.ds-reject`)), chromedp.WaitNotPresent(chromedp.CSS(`.ds-proposal`)))
	tb.run("add a hostile class and tag with keys",
		chromedp.SendKeys(chromedp.CSS(`#ds-new-class`), hostileLabel),
		chromedp.Click(chromedp.CSS(`.ds-add-class button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-class-btn[data-class-index="2"]`)),
		chromedp.Click(chromedp.CSS(`.ds-stage img`)), // focus the image, as a person would
		chromedp.KeyEvent("3"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-class-btn[data-class-index="2"][aria-pressed="true"]`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-sample-key="s2.png"]`)),
		chromedp.KeyEvent("2"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-class-btn[data-class-index="1"][aria-pressed="true"]`)),
		chromedp.KeyEvent(kb.ArrowRight),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-sample-key="s3.png"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-saved="s2.png"]`)))
	var labelled api.DatasetSamples
	mustJSON(t, s.must(nil, "dataset", "samples", "shots", "--labeled", "-o", "json"), &labelled)
	got := map[string]string{}
	for _, smp := range labelled.Samples {
		got[smp.Key] = strings.Join(smp.Annotations.Tags, ",")
	}
	if len(got) != 3 || got["s0.png"] != "narrow" || got["s1.png"] != hostileLabel || got["s2.png"] != "wide" {
		t.Errorf("labels after the console: %v", got)
	}

	// Publish the labels as v2: its counts include them; the hostile
	// label is text.
	tb.run("publish v2 of shots", chromedp.Click(chromedp.CSS(`.ds-publish button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-published[data-status="published"][data-version="v2"]`)))
	for sel, want := range map[string]string{`.ds-published [data-annotated]`: "3 labelled", `.ds-published [data-count="narrow"]`: "1",
		`.ds-published [data-count="wide"]`: "1", `.ds-published [data-count="` + hostileLabel + `"]`: "1"} {
		if got, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(sel))); got != want {
			t.Errorf("v2 %s: %q, want %q", sel, got, want)
		}
	}
	if cls, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`.ds-published a.ds-class[data-class="`+hostileLabel+`"]`))); cls != hostileLabel {
		t.Errorf("the hostile class shows as %q", cls)
	}
	if n, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[int](`document.querySelectorAll('img[src="x"]').length`)); n != 0 {
		t.Errorf("the hostile label became %d <img> elements", n)
	}

	// The diff of v1 and v2.
	tb.run("compare v1 and v2", chromedp.Navigate(base+"/"+shots.DatasetID), pageReady("dataset"),
		chromedp.WaitVisible(chromedp.CSS(`a.ds-version[data-version="v2"]`)),
		chromedp.Click(chromedp.CSS(`a[href*="/diff?from=v1&to=v2"]`)), pageReady("dataset-diff"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-diff[data-from="v1"][data-to="v2"]`)))
	if n, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`[data-diff="relabelled"]`))); n != "3" {
		t.Errorf("diff relabelled %q", n)
	}
	if c, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`.ds-diff [data-class="`+hostileLabel+`"]`))); c != hostileLabel {
		t.Errorf("diff class %q", c)
	}

	// Detection: a box drawn with the mouse, a second one drawn and
	// deleted with the Delete key, Enter saves.
	tb.run("open the detection queue", chromedp.Navigate(base+"/"+boxes.DatasetID+"/label"), pageReady("dataset-label"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-sample-key="b0.png"][data-loaded="true"]`)),
		chromedp.SendKeys(chromedp.CSS(`#ds-new-class`), "car"),
		chromedp.Click(chromedp.CSS(`.ds-add-class button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-class-btn[data-class-index="0"]`)),
		chromedp.KeyEvent("1"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-class-btn[data-class-index="0"][aria-pressed="true"]`)))
	r, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector('.ds-stage img').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`))
	if err != nil || len(r) != 4 || r[2] < 100 {
		t.Fatalf("the image's place: %v %v", r, err)
	}
	x, y, w, h := r[0], r[1], r[2], r[3]
	tb.run("draw two boxes, delete one",
		drag(x+0.25*w, y+0.25*h, x+0.75*w, y+0.75*h),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-boxes="1"] .ds-box[data-label="car"]`)),
		drag(x+0.8*w, y+0.1*h, x+0.95*w, y+0.3*h),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-boxes="2"] .ds-box.selected`)),
		chromedp.KeyEvent(kb.Delete),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-boxes="1"]`)))
	tb.screenshot("datasets-label")
	tb.run("save the box", chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-sample-key="b1.png"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-saved="b0.png"]`)))
	mustJSON(t, s.must(nil, "dataset", "samples", "boxes", "--labeled", "-o", "json"), &labelled)
	if len(labelled.Samples) != 1 || len(labelled.Samples[0].Annotations.Boxes) != 1 {
		t.Fatalf("boxes after the console: %+v", labelled.Samples)
	}
	b := labelled.Samples[0].Annotations.Boxes[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 0.75 }
	if b.Label != "car" || !near(b.XMin, 4) || !near(b.YMin, 3) || !near(b.XMax, 12) || !near(b.YMax, 9) {
		t.Errorf("the drawn box in the image's pixels: %+v", b)
	}
	// The keyboard alone: N adds a box, an arrow moves it a pixel (1 % of
	// a 16x12 image, at least one), Shift+↓ moves its bottom edge, Enter
	// saves.
	tb.run("a box by keyboard", chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-sample-key="b1.png"][data-loaded="true"]`)),
		chromedp.Focus(chromedp.CSS(`.ds-stage`)),
		chromedp.KeyEvent("n"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-stage[data-boxes="1"] .ds-box.selected[data-label="car"]`)),
		chromedp.KeyEvent(kb.ArrowLeft),
		chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`[data-saved="b1.png"]`)))
	mustJSON(t, s.must(nil, "dataset", "samples", "boxes", "--labeled", "-o", "json"), &labelled)
	var kbox *api.DatasetBox
	for _, sm := range labelled.Samples {
		if sm.Key == "b1.png" && len(sm.Annotations.Boxes) == 1 {
			kbox = &sm.Annotations.Boxes[0]
		}
	}
	if kbox == nil || kbox.Label != "car" || kbox.XMin != 3 || kbox.YMin != 3 || kbox.XMax != 11 || kbox.YMax != 10 {
		t.Errorf("the keyboard box: %+v in %+v", kbox, labelled.Samples)
	}
	tb.run("publish v2 of boxes", chromedp.Click(chromedp.CSS(`.ds-publish button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.ds-published[data-status="published"][data-version="v2"]`)))
	if n, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`.ds-published [data-count="car"]`))); n != "2" {
		t.Errorf("boxes v2 car %q", n)
	}
	tb.run("the box in the grid", chromedp.Navigate(base+"/"+boxes.DatasetID+"/versions/v2/grid?class=car"), pageReady("dataset-grid"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-tile[data-sample-key="b0.png"] .ds-box[data-label="car"]`)), imagesLoaded(`.ds-grid img`, 2),
		chromedp.Click(chromedp.CSS(`.ds-classes button[aria-pressed="false"]:not([data-class])`)), pageReady("dataset-grid"),
		chromedp.WaitVisible(chromedp.CSS(`.ds-grid[data-count="2"]`)), imagesLoaded(`.ds-grid img`, 2))
	tb.screenshot("datasets-grid")

	tb.run("the list", chromedp.Navigate(base), pageReady("datasets"), chromedp.WaitVisible(chromedp.CSS(`a.ds-name`)))
	names, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('a.ds-name')].map((a) => a.textContent)`))
	if strings.Join(names, ",") != "flowers,boxes,shots" {
		t.Errorf("the list: %v", names)
	}
	tb.screenshot("datasets-list")

	// Another user sees none of it.
	var flowers api.Dataset
	mustJSON(t, s.must(nil, "dataset", "get", "flowers", "-o", "json"), &flowers)
	var page api.DatasetSamples
	mustJSON(t, s.must(nil, "dataset", "samples", "shots", "-o", "json"), &page)
	s.must(nil, "user", "create", "mallory")
	var key api.AccessKey
	mustJSON(t, s.must(nil, "access-key", "create", "--user", "mallory", "-o", "json"), &key)
	env := []string{"ATELIER_ACCESS_KEY=" + key.AccessKey, "ATELIER_SECRET_KEY=" + key.SecretKey}
	tb2 := newTab(t)
	tb2.signInLink(s.server, env)
	tb2.run("mallory's list", chromedp.Navigate(base), pageReady("datasets"))
	if txt, _ := chromedp.Run(tb2.ctx, chromedp.Text(chromedp.CSS(`main`))); strings.Contains(txt, "flowers") || !strings.Contains(txt, "No datasets yet") {
		t.Errorf("mallory's list:\n%s", txt)
	}
	tb2.run("mallory opens alice's dataset", chromedp.Navigate(base+"/"+flowers.DatasetID),
		chromedp.WaitVisible(chromedp.CSS(`main[data-page="dataset"][data-state="error"] .error-box`)))
	if txt, _ := chromedp.Run(tb2.ctx, chromedp.Text(chromedp.CSS(`.error-box`))); !strings.Contains(txt, "ATL.DS.0001") {
		t.Errorf("mallory's dataset page: %q", txt)
	}
	st, _ := chromedp.Run(tb2.ctx, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%q).then((r) => r.status)`,
		"/api/v1/datasets/"+shots.DatasetID+"/samples/"+page.Samples[0].SampleID+"/image"), chromedp.EvalAwaitPromise))
	if st != 404 {
		t.Errorf("mallory fetches an image of alice's: %d", st)
	}
}
