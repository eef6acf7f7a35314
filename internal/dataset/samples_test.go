package dataset

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

func keys(ss []api.DatasetSample) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Key
	}
	return out
}

// TestSamplesOfAVersionByClass: a named version's samples carry its own
// labels (not the draft's), the class filter keeps a class's samples, and
// one sample is read by id or key.
func TestSamplesOfAVersionByClass(t *testing.T) {
	e := newEnv(t)
	e.flowers("fl/", 2)
	e.create("fl", "fl/")
	v1 := e.version("fl", api.CreateDatasetVersionRequest{})
	if _, err := e.svc.PutAnnotations(e.ctx, e.alice, "fl", "cat/000.png", &api.DatasetAnnotations{Tags: []string{"dog"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    api.DatasetSampleFilter
		want string
	}{
		{"current, all", api.DatasetSampleFilter{}, "cat/000.png cat/001.png dog/000.png dog/001.png"},
		{"current, cat (the draft relabelled one)", api.DatasetSampleFilter{Class: "cat"}, "cat/001.png"},
		{"current, dog", api.DatasetSampleFilter{Class: "dog"}, "cat/000.png dog/000.png dog/001.png"},
		{"v1, cat (its own labels)", api.DatasetSampleFilter{Version: "v1", Class: "cat"}, "cat/000.png cat/001.png"},
		{"v1 by id, dog, a page of one", api.DatasetSampleFilter{Version: v1.VersionID, Class: "dog", Limit: 1}, "dog/000.png"},
		{"v1, dog, the next page", api.DatasetSampleFilter{Version: "v1", Class: "dog", After: "dog/000.png"}, "dog/001.png"},
		{"no such class", api.DatasetSampleFilter{Class: "<img src=x>"}, ""},
		{"v1, unlabelled", api.DatasetSampleFilter{Version: "v1", Labeled: new(bool)}, ""},
	} {
		page, err := e.svc.Samples(e.ctx, e.alice, "fl", tc.f)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := keys(page.Samples); joinKeys(got) != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, joinKeys(got), tc.want)
		}
		if page.VersionID != v1.VersionID {
			t.Errorf("%s: version %s", tc.name, page.VersionID)
		}
	}
	if _, err := e.svc.Samples(e.ctx, e.alice, "fl", api.DatasetSampleFilter{Version: "v9"}); errs.CodeOf(err) != CodeVersionNotFound {
		t.Errorf("an unknown version: %v", err)
	}

	smp, err := e.svc.Sample(e.ctx, e.alice, "fl", "cat/000.png", "")
	if err != nil || smp.LabelSource != "draft" || joinKeys(smp.Annotations.Tags) != "dog" {
		t.Errorf("the current sample: %+v, %v", smp, err)
	}
	old, err := e.svc.Sample(e.ctx, e.alice, "fl", smp.SampleID, "v1")
	if err != nil || old.LabelSource != "version" || joinKeys(old.Annotations.Tags) != "cat" || old.Key != "cat/000.png" {
		t.Errorf("the sample in v1: %+v, %v", old, err)
	}
	if _, err := e.svc.Sample(e.ctx, e.alice, "fl", "cat/999.png", ""); errs.CodeOf(err) != CodeSampleNotFound {
		t.Errorf("an unknown sample: %v", err)
	}
	if _, err := e.svc.Sample(e.ctx, e.bob, "fl", smp.SampleID, ""); errs.CodeOf(err) != CodeNotFound {
		t.Errorf("bob reads alice's sample: %v", err)
	}
}

// TestSampleObjectIsReadAsTheCallerAsRecorded: a sample's object is read
// as the caller, as the version recorded it; another user gets not
// found, and a changed object is refused.
func TestSampleObjectIsReadAsTheCallerAsRecorded(t *testing.T) {
	e := newEnv(t)
	e.flowers("fl/", 1)
	e.create("fl", "fl/")
	e.version("fl", api.CreateDatasetVersionRequest{})
	body, obj, err := e.svc.SampleObject(e.ctx, e.alice, "fl", "dog/000.png", "v1")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(body)
	body.Close()
	if !bytes.Equal(got, pngOf(t, 8, 6, 1000)) || obj.Key != "dog/000.png" || obj.Size != int64(len(got)) || obj.ETag == "" {
		t.Errorf("object %+v, %d bytes", obj, len(got))
	}
	if _, _, err := e.svc.SampleObject(e.ctx, e.bob, "fl", "dog/000.png", ""); errs.CodeOf(err) != CodeNotFound {
		t.Errorf("bob reads alice's image: %v", err)
	}
	if _, _, err := e.svc.SampleObject(e.ctx, e.alice, "fl", "dog/../cat/000.png", ""); errs.CodeOf(err) != CodeSampleNotFound {
		t.Errorf("a key outside the version: %v", err)
	}
	e.put("fl/", map[string][]byte{"dog/000.png": []byte("<html><script>alert(1)</script>")})
	if _, _, err := e.svc.SampleObject(e.ctx, e.alice, "fl", "dog/000.png", ""); errs.CodeOf(err) != CodeChanged {
		t.Errorf("a changed object: %v", err)
	}
}

func TestListVersionsPagesNewestFirst(t *testing.T) {
	e := newEnv(t)
	e.flowers("fl/", 1)
	e.create("fl", "fl/")
	e.version("fl", api.CreateDatasetVersionRequest{})
	e.version("fl", api.CreateDatasetVersionRequest{})
	vs, total, err := e.svc.ListVersions(e.ctx, e.alice, "fl", api.ListOptions{Limit: 1})
	if err != nil || total != 2 || len(vs) != 1 || vs[0].VersionName != "v2" || vs[0].TotalSampleCount != 2 {
		t.Fatalf("page 1: %+v %d %v", vs, total, err)
	}
	vs, _, err = e.svc.ListVersions(e.ctx, e.alice, "fl", api.ListOptions{Offset: 1, Limit: 1})
	if err != nil || len(vs) != 1 || vs[0].VersionName != "v1" {
		t.Fatalf("page 2: %+v %v", vs, err)
	}
	if _, _, err := e.svc.ListVersions(e.ctx, e.bob, "fl", api.ListOptions{}); errs.CodeOf(err) != CodeNotFound {
		t.Errorf("bob lists alice's versions: %v", err)
	}
}

func joinKeys(ks []string) string { return strings.Join(ks, " ") }
