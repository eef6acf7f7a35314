package dataset

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"sync"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/errs"
)

// shots is an image_txt tree: n images, the first labelled "cat" by its
// .txt, the others without a label.
func (e *env) shots(n int) {
	e.t.Helper()
	files := map[string][]byte{"s000.txt": []byte("cat\n")}
	for i := range n {
		files[fmt.Sprintf("s%03d.png", i)] = pngOf(e.t, 8, 6, 3000+i)
	}
	e.put("shots/", files)
	if _, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: "shots", DatasetType: "image_classification",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/shots/"}}, DataFormat: "image_txt"}); err != nil {
		e.t.Fatal(err)
	}
}

func TestLabelingDraftBecomesTheNextVersion(t *testing.T) {
	e := newEnv(t)
	e.shots(4)
	if _, err := e.svc.Samples(e.ctx, e.alice, "shots", api.DatasetSampleFilter{}); errs.CodeOf(err) != CodeNotPublished {
		t.Fatalf("samples before any version: %v", err)
	}
	v1 := e.version("shots", api.CreateDatasetVersionRequest{})
	if v1.Status != api.DatasetVersionPublished || v1.TotalSampleCount != 4 || v1.AnnotatedSampleCount != 1 {
		t.Fatalf("v1 %+v", v1)
	}
	no := false
	queue, err := e.svc.Samples(e.ctx, e.alice, "shots", api.DatasetSampleFilter{Labeled: &no})
	if err != nil || len(queue.Samples) != 3 || queue.Samples[0].Key != "s001.png" || queue.Samples[0].Labeled {
		t.Fatalf("queue %+v, %v", queue, err)
	}
	id := queue.Samples[0].SampleID
	for name, a := range map[string]api.DatasetAnnotations{
		"box on classification": {Boxes: []api.DatasetBox{{Label: "cat", XMax: 1, YMax: 1}}},
		"slash":                 {Tags: []string{"a/b"}},
		"empty":                 {Tags: []string{""}},
		"control":               {Tags: []string{"a\x00"}},
	} {
		if _, err := e.svc.PutAnnotations(e.ctx, e.alice, "shots", id, &a); errs.CodeOf(err) != CodeInvalidRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
	smp, err := e.svc.PutAnnotations(e.ctx, e.alice, "shots", id, &api.DatasetAnnotations{Tags: []string{"dog"}})
	if err != nil || !smp.Labeled || smp.LabelSource != "draft" || smp.LabeledBy != "alice" {
		t.Fatalf("PutAnnotations = %+v, %v", smp, err)
	}
	// By key too; and the version's own label can be overridden.
	if _, err := e.svc.PutAnnotations(e.ctx, e.alice, "shots", "s000.png", &api.DatasetAnnotations{Tags: []string{"cat", "fluffy"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.PutAnnotations(e.ctx, e.alice, "shots", "nope.png", &api.DatasetAnnotations{Tags: []string{"x"}}); errs.CodeOf(err) != CodeSampleNotFound {
		t.Errorf("unknown sample: %v", err)
	}
	// Bob can neither see nor label alice's samples.
	if _, err := e.svc.Samples(e.ctx, e.bob, "shots", api.DatasetSampleFilter{}); !errs.Is(err, errs.NotFound) {
		t.Errorf("bob lists samples: %v", err)
	}
	if _, err := e.svc.PutAnnotations(e.ctx, e.bob, "shots", id, &api.DatasetAnnotations{Tags: []string{"x"}}); !errs.Is(err, errs.NotFound) {
		t.Errorf("bob labels: %v", err)
	}
	// Paging.
	page, err := e.svc.Samples(e.ctx, e.alice, "shots", api.DatasetSampleFilter{Limit: 2})
	if err != nil || len(page.Samples) != 2 || page.Next != "s001.png" {
		t.Fatalf("page 1 %+v, %v", page, err)
	}
	page, err = e.svc.Samples(e.ctx, e.alice, "shots", api.DatasetSampleFilter{After: page.Next, Limit: 2})
	if err != nil || len(page.Samples) != 2 || page.Samples[0].Key != "s002.png" || page.Next != "" {
		t.Fatalf("page 2 %+v, %v", page, err)
	}
	if d, err := e.svc.Get(e.ctx, e.alice, "shots"); err != nil || d.Draft == nil || d.Draft.Labels != 2 || d.Draft.Status != "draft" {
		t.Errorf("dataset get shows the draft: %+v, %v", d, err)
	}
	v2 := e.version("shots", api.CreateDatasetVersionRequest{})
	if v2.AnnotatedSampleCount != 2 || v2.DraftLabels != 2 || v2.PerClass["dog"] != 1 || v2.PerClass["fluffy"] != 1 ||
		strings.Join(v2.Classes, ",") != "cat,dog,fluffy" {
		t.Errorf("v2 %+v", v2)
	}
	diff, err := e.svc.Diff(e.ctx, e.alice, "shots", "v1", "v2")
	if err != nil || diff.Relabeled != 2 {
		t.Errorf("diff %+v, %v", diff, err)
	}
	// Clearing the draft label goes back to the version's.
	smp, err = e.svc.ClearAnnotations(e.ctx, e.alice, "shots", "s000.png")
	if err != nil || smp.LabelSource != "version" || strings.Join(smp.Annotations.Tags, ",") != "cat,fluffy" {
		t.Errorf("after clear: %+v, %v", smp, err)
	}
}

// fakePredictor answers as a classification service: "dog" for every even
// call sure, the others unsure; it records who called.
type fakePredictor struct {
	mu      sync.Mutex
	calls   int
	callers []string
	files   []string
}

func (f *fakePredictor) Predict(_ context.Context, p *auth.Principal, svc, ctype string, body []byte) (int, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.callers = append(f.callers, p.User.Name+"@"+svc)
	_, params, _ := mime.ParseMediaType(ctype)
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	part, err := mr.NextPart()
	if err != nil || part.FormName() != "images" {
		return 400, []byte(`{"error":"no images field"}`), nil
	}
	data, _ := io.ReadAll(part)
	f.files = append(f.files, part.FileName())
	if !bytes.HasPrefix(data, []byte("\x89PNG")) {
		return 400, []byte(`{"error":"not a png"}`), nil
	}
	if strings.HasSuffix(part.FileName(), "1.png") || strings.HasSuffix(part.FileName(), "3.png") {
		return 200, []byte(`{"predicted_label":"dog","scores":[["dog","0.97"],["cat","0.03"]]}`), nil
	}
	return 200, []byte(`{"predicted_label":"cat","scores":[["cat",0.6],["dog",0.4]]}`), nil
}

func TestAutolabelProposesAndAPersonDecides(t *testing.T) {
	e := newEnv(t)
	fp := &fakePredictor{}
	e.svc.o.Predictor = fp
	e.shots(4)
	e.version("shots", api.CreateDatasetVersionRequest{})
	out, err := e.svc.Autolabel(e.ctx, e.alice, "shots", &api.AutolabelRequest{ServiceID: "svc-1", Threshold: 0.9})
	if err != nil || out.Sent != 3 || out.Proposed != 2 || out.BelowThresh != 1 || out.Failed != 0 {
		t.Fatalf("Autolabel = %+v, %v", out, err)
	}
	for _, c := range fp.callers {
		if c != "alice@svc-1" {
			t.Errorf("the service was called as %s", c)
		}
	}
	// A second pass sends only what has neither label nor proposal.
	if out, err := e.svc.Autolabel(e.ctx, e.alice, "shots", &api.AutolabelRequest{ServiceID: "svc-1", Threshold: 0.9}); err != nil || out.Sent != 1 {
		t.Errorf("second pass %+v, %v", out, err)
	}
	props, err := e.svc.Samples(e.ctx, e.alice, "shots", api.DatasetSampleFilter{Proposed: true})
	if err != nil || len(props.Samples) != 2 || props.Samples[0].Proposal == nil || props.Samples[0].Proposal.Confidence != 0.97 ||
		props.Samples[0].Labeled {
		t.Fatalf("proposed samples %+v, %v", props, err)
	}
	if smp, err := e.svc.DecideProposal(e.ctx, e.alice, "shots", "s001.png", true); err != nil || smp.LabelSource != "draft" ||
		smp.Annotations.Tags[0] != "dog" || smp.Proposal != nil {
		t.Errorf("accept: %+v, %v", smp, err)
	}
	if smp, err := e.svc.DecideProposal(e.ctx, e.alice, "shots", "s003.png", false); err != nil || smp.Labeled || smp.Proposal != nil {
		t.Errorf("reject: %+v, %v", smp, err)
	}
	if _, err := e.svc.DecideProposal(e.ctx, e.alice, "shots", "s003.png", true); errs.CodeOf(err) != CodeNoProposal {
		t.Errorf("decide twice: %v", err)
	}
	v2 := e.version("shots", api.CreateDatasetVersionRequest{})
	if v2.PerClass["dog"] != 1 || v2.AnnotatedSampleCount != 2 {
		t.Errorf("v2 after one accepted proposal: %+v", v2)
	}
	// Bob cannot autolabel alice's dataset.
	if _, err := e.svc.Autolabel(e.ctx, e.bob, "shots", &api.AutolabelRequest{ServiceID: "svc-1"}); !errs.Is(err, errs.NotFound) {
		t.Errorf("bob autolabels: %v", err)
	}
}

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		typ          format.Type
		want         string
		conf         float64
		bad          bool
	}{
		{"modelarts", `{"predicted_label":"cat","scores":[["cat","0.9"],["dog","0.1"]]}`, format.ImageClassification, "cat", 0.9, false},
		{"scores only", `{"scores":[["dog",0.2],["cat",0.8]]}`, format.ImageClassification, "cat", 0.8, false},
		{"label confidence", `{"label":"cow","confidence":0.5}`, format.ImageClassification, "cow", 0.5, false},
		{"bare label", `{"label":"cow"}`, format.ImageClassification, "cow", 1, false},
		{"no label", `{"x":1}`, format.ImageClassification, "", 0, true},
		{"not json", `<html>`, format.ImageClassification, "", 0, true},
		{"bad label", `{"label":"a/b"}`, format.ImageClassification, "", 0, true},
		{"detection", `{"detection_classes":["cat","dog"],"detection_boxes":[[1,2,30,40],[5,5,6,6]],"detection_scores":[0.95,0.5]}`,
			format.ObjectDetection, "cat[2,1,40,30]", 0.95, false},
		{"detection mismatch", `{"detection_classes":["cat"],"detection_boxes":[],"detection_scores":[]}`, format.ObjectDetection, "", 0, true},
	} {
		ann, conf, err := parseAnswer(tc.typ, []byte(tc.answer), 0.9)
		if (err != nil) != tc.bad {
			t.Errorf("%s: err %v", tc.name, err)
			continue
		}
		if tc.bad {
			continue
		}
		got := strings.Join(ann.Tags, ",")
		for _, b := range ann.Boxes {
			got += fmt.Sprintf("%s[%g,%g,%g,%g]", b.Label, b.XMin, b.YMin, b.XMax, b.YMax)
		}
		if got != tc.want || conf != tc.conf {
			t.Errorf("%s: %q %v, want %q %v", tc.name, got, conf, tc.want, tc.conf)
		}
	}
}

func FuzzParseAnswer(f *testing.F) {
	f.Add([]byte(`{"predicted_label":"cat","scores":[["cat","0.9"]]}`))
	f.Add([]byte(`{"detection_classes":["a"],"detection_boxes":[[1,2,3,4]],"detection_scores":["0.9"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, typ := range []format.Type{format.ImageClassification, format.ObjectDetection} {
			ann, _, err := parseAnswer(typ, b, 0.5)
			if err == nil && checkAnnotations(typ, &ann) != "" {
				t.Fatalf("parseAnswer accepted %+v", ann)
			}
		}
	})
}
