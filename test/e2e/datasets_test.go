package e2e

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// pngFile is a w×h PNG whose first pixel encodes seed.
func pngFile(t *testing.T, w, h, seed int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{uint8(seed), uint8(seed >> 8), uint8(seed >> 16), 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// imageFolder writes train/<class>/N.png files for each class.
func imageFolder(t *testing.T, perClass int, classes ...string) string {
	t.Helper()
	dir := t.TempDir()
	for ci, c := range classes {
		for i := range perClass {
			p := filepath.Join(dir, c, fmt.Sprintf("%d.png", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, pngFile(t, 16, 12, ci*100_000+i), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// manifestScript reads its dataset input as ModelArts code does: the
// staged manifest, each source a local file, labels from the annotations.
const manifestScript = `import argparse, os
import moxing as mox
p = argparse.ArgumentParser()
p.add_argument('--data_url', required=True)
args, _ = p.parse_known_args()
print('staged', sorted(f for f in os.listdir(args.data_url) if f.endswith('.manifest')))
ds = mox.manifest.parse_manifest(os.path.join(args.data_url, 'flowers-v1.manifest'))
labels = {}
for s in ds.get_sample_list():
    assert os.path.isfile(s.get_source()), s.get_source()
    assert s.get_source().startswith(args.data_url), s.get_source()
    for a in s.get_annotations():
        labels[a.get_name()] = labels.get(a.get_name(), 0) + 1
obs = mox.manifest.parse_manifest(os.path.join(args.data_url, 'flowers-v1.obs.manifest'))
assert obs.get_sample_list()[0].get_source().startswith('obs://data/flowers/'), obs.get_sample_list()[0].get_source()
print('samples', ds.get_size(), 'labels', sorted(labels.items()))
`

// TestDatasetVersionTrainAndTamper: a dataset over an ImageFolder tree is
// detected, versioned (nothing copied) and trained from; the job sees the
// objects and a manifest with local paths. Changing one object afterwards
// degrades the version, and a job from it is refused, naming the object —
// at creation, and at staging for a job queued before the change, whose
// code never runs. Another user sees none of it.
func TestDatasetVersionTrainAndTamper(t *testing.T) {
	// One CPU: a job queued behind a running one starts only when it ends.
	py := systemPython(t)
	cfgFile := writeJobConfig(t, t.TempDir(), py, "capacity: {cpu: 1, memory: 2GiB}\novercommit: {cpu: 1.0}\n")
	s := &jobServer{server: startServer(t, t.TempDir(), "--config", cfgFile), py: py}
	s.must(nil, "obs", "mb", "obs://data")
	s.must(nil, "obs", "cp", "-r", imageFolder(t, 3, "daisy", "rose"), "obs://data/flowers/")

	var d api.Dataset
	mustJSON(t, s.must(nil, "dataset", "create", "--name", "flowers", "--type", "image_classification",
		"--source", "obs://data/flowers/", "-o", "json"), &d)
	if d.DataFormat != "imagefolder" || d.Detection == nil {
		t.Fatalf("dataset create: %+v", d)
	}
	var v api.DatasetVersion
	out, errOut, code := s.run(2*time.Minute, nil, "dataset", "version", "flowers", "--split", "train=0.67,seed=1", "--follow", "-o", "json")
	if code != 0 {
		t.Fatalf("dataset version: %d\n%s%s", code, out, errOut)
	}
	mustJSON(t, out, &v)
	if v.Status != api.DatasetVersionPublished || v.TotalSampleCount != 6 || strings.Join(v.Classes, ",") != "daisy,rose" {
		t.Fatalf("version %+v", v)
	}
	if got := s.must(nil, "dataset", "get", "flowers", "--version", "v1"); !strings.Contains(got, "published") || !strings.Contains(got, "daisy") {
		t.Errorf("dataset get --version:\n%s", got)
	}
	if got := s.must(nil, "dataset", "manifest", "flowers", "v1"); strings.Count(got, "\n") != 6 || !strings.Contains(got, `"source":"obs://data/flowers/daisy/0.png"`) {
		t.Errorf("dataset manifest:\n%s", got)
	}

	// Previews: one sample per class, thumbnails fetched without
	// credentials from the short-lived URLs, and saved by --download.
	var pv api.DatasetPreview
	thumbs := t.TempDir()
	mustJSON(t, s.must(nil, "dataset", "preview", "flowers", "--per-class", "1", "--download", thumbs, "-o", "json"), &pv)
	if len(pv.Samples) != 2 {
		t.Fatalf("preview: %+v", pv)
	}
	if code, body := curl(t, pv.Samples[0].PreviewURL); code != 200 || !strings.HasPrefix(body, "\xff\xd8") {
		t.Errorf("GET %s without credentials: %d", pv.Samples[0].PreviewURL, code)
	}
	if code, _ := curl(t, pv.Samples[0].PreviewURL+"x"); code != 403 {
		t.Errorf("an altered preview URL: %d", code)
	}
	if saved, _ := filepath.Glob(filepath.Join(thumbs, "*.jpg")); len(saved) != 2 {
		t.Errorf("--download saved %v", saved)
	}

	// Export as a manifest elsewhere, and validate the export as a dataset.
	if got := s.must(nil, "dataset", "export", "flowers", "--version", "v1", "--format", "manifest", "--to", "obs://data/export/"); !strings.Contains(got, "6 copied") {
		t.Errorf("dataset export:\n%s", got)
	}
	if got := s.must(nil, "dataset", "validate", "--source", "obs://data/export/", "--type", "image_classification"); !strings.Contains(got, "manifest (detected") || !strings.Contains(got, "0 errors") {
		t.Errorf("dataset validate of the export:\n%s", got)
	}

	src := codeDir(t, map[string]string{"train.py": manifestScript, "hold.py": "import time\nprint('holding', flush=True)\ntime.sleep(600)\n"})
	id := s.create(nil, "--name", "from-dataset", "--code-dir", src, "--boot-file", "train.py", "--input", "data_url=dataset:flowers@v1")
	j := s.wait(id, 2*time.Minute)
	s.expectPhase(j, api.PhaseCompleted, api.FailureCompleted)
	logs := s.logs(id)
	for _, want := range []string{"staged ['flowers-v1.manifest', 'flowers-v1.obs.manifest']", "samples 6 labels [('daisy', 3), ('rose', 3)]"} {
		if !strings.Contains(logs, want) {
			t.Errorf("job log lacks %q:\n%s", want, logs)
		}
	}
	if got := s.must(nil, "job", "get", id); !strings.Contains(got, "dataset:flowers@v1") {
		t.Errorf("job get does not show the dataset version:\n%s", got)
	}

	// A job queued behind a running one, then the data changes.
	hold := s.create(nil, "--name", "hold", "--flavor", "cpu.1", "--code-dir", src, "--boot-file", "hold.py")
	t.Cleanup(func() { s.run(time.Minute, nil, "job", "stop", hold) })
	until(t, 30*time.Second, "the holding job runs", func() api.Job { return s.get(hold) },
		func(j api.Job) bool { return j.Status.Phase == api.PhaseRunning })
	late := s.create(nil, "--name", "late", "--flavor", "cpu.1", "--code-dir", src, "--boot-file", "train.py", "--input", "data_url=dataset:flowers@v1")
	if j := s.get(late); j.Status.Phase != api.PhasePending {
		t.Fatalf("the late job is %s, want it queued", j.Status.Phase)
	}
	tampered := filepath.Join(t.TempDir(), "0.png")
	if err := os.WriteFile(tampered, pngFile(t, 16, 12, 999), 0o644); err != nil {
		t.Fatal(err)
	}
	s.must(nil, "obs", "cp", tampered, "obs://data/flowers/rose/0.png")
	got := s.must(nil, "dataset", "get", "flowers", "--version", "v1")
	if !strings.Contains(got, "degraded") || !strings.Contains(got, "obs://data/flowers/rose/0.png") {
		t.Errorf("dataset get after the change:\n%s", got)
	}
	errOut = s.fails(nil, "job", "create", "--name", "refused", "--code-dir", src, "--boot-file", "train.py", "--input", "data_url=dataset:flowers@v1")
	if !strings.Contains(errOut, "obs://data/flowers/rose/0.png (changed)") || !strings.Contains(errOut, "ATL.DS.0010") {
		t.Errorf("job create from a degraded version:\n%s", errOut)
	}

	// The queued job starts once the holder stops, and fails while staging,
	// naming the object, before its code runs.
	s.must(nil, "job", "stop", hold)
	j = s.wait(late, 2*time.Minute)
	if j.Status.Phase != api.PhaseFailed {
		t.Fatalf("the late job ended %s: %+v", j.Status.Phase, j.Status)
	}
	logs = s.logs(late)
	if !strings.Contains(logs+j.Status.TaskStatuses[0].Message, "obs://data/flowers/rose/0.png (changed)") || strings.Contains(logs, "samples") {
		t.Errorf("the late job: status %+v\nlogs:\n%s", j.Status.TaskStatuses, logs)
	}

	// Another user sees no dataset named flowers.
	s.must(nil, "user", "create", "mallory")
	var key api.AccessKey
	mustJSON(t, s.must(nil, "access-key", "create", "--user", "mallory", "-o", "json"), &key)
	env := []string{"ATELIER_ACCESS_KEY=" + key.AccessKey, "ATELIER_SECRET_KEY=" + key.SecretKey}
	for _, args := range [][]string{
		{"dataset", "get", "flowers"}, {"dataset", "get", d.DatasetID, "--version", "v1"}, {"dataset", "manifest", d.DatasetID, "v1"},
		{"dataset", "delete", d.DatasetID},
	} {
		if e := s.fails(env, args...); !strings.Contains(e, "ATL.DS.0001") {
			t.Errorf("mallory: atelier %s:\n%s", strings.Join(args, " "), e)
		}
	}
	if e := s.fails(env, "job", "create", "--name", "steal", "--code-dir", src, "--boot-file", "train.py",
		"--input", "data_url=dataset:"+d.DatasetID+"@v1"); !strings.Contains(e, "ATL.DS.0001") {
		t.Errorf("mallory's job from alice's dataset:\n%s", e)
	}
}

// widthHandler labels a PNG by its width, from the IHDR of the uploaded
// file: a real handler for auto-labeling.
const widthHandler = `import struct
from model_service.model_service import SingleNodeService


class WidthService(SingleNodeService):
    def _inference(self, data):
        f = list(data["images"].values())[0]
        head = f.read(24)
        width = struct.unpack(">I", head[16:20])[0]
        label = "wide" if width >= 12 else "narrow"
        return {"predicted_label": label, "scores": [[label, "0.95"], ["other", "0.05"]]}
`

// TestDatasetAutolabelWithDeployedHandler: unlabelled samples go to a
// deployed ModelArts handler; its answers become proposals; a person
// accepts one and the next version carries it.
func TestDatasetAutolabelWithDeployedHandler(t *testing.T) {
	s := startServiceServer(t)
	model := s.importModel("widths", "1.0.0", map[string]string{"config.json": echoConfig, "customize_service.py": widthHandler})
	v := s.deploy("--name", "widths", "--model", model)
	s.waitRunning(v.ServiceID)

	dir := t.TempDir()
	for i, w := range []int{8, 12, 8, 16} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d.png", i)), pngFile(t, w, 8, i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.must(nil, "obs", "mb", "obs://shots")
	s.must(nil, "obs", "cp", "-r", dir, "obs://shots/all/")
	s.must(nil, "dataset", "create", "--name", "shots", "--type", "image_classification", "--source", "obs://shots/all/", "--format", "image_txt")
	s.must(nil, "dataset", "version", "shots", "--follow")

	var res api.AutolabelResult
	mustJSON(t, s.must(nil, "dataset", "autolabel", "shots", "--service", "widths", "--threshold", "0.9", "-o", "json"), &res)
	if res.Sent != 4 || res.Proposed != 4 || res.Failed != 0 {
		t.Fatalf("autolabel: %+v", res)
	}
	var page api.DatasetSamples
	mustJSON(t, s.must(nil, "dataset", "samples", "shots", "--proposed", "-o", "json"), &page)
	want := map[string]string{"s0.png": "narrow", "s1.png": "wide", "s2.png": "narrow", "s3.png": "wide"}
	for _, smp := range page.Samples {
		if smp.Proposal == nil || len(smp.Proposal.Tags) != 1 || smp.Proposal.Tags[0] != want[smp.Key] || smp.Labeled {
			t.Errorf("sample %s: %+v", smp.Key, smp)
		}
	}
	if len(page.Samples) != 4 {
		t.Fatalf("%d proposed samples", len(page.Samples))
	}
	s.must(nil, "dataset", "label", "shots", "--sample", "s1.png", "--accept")
	s.must(nil, "dataset", "label", "shots", "--sample", "s0.png", "--reject")
	s.must(nil, "dataset", "label", "shots", "--sample", "s2.png", "--tag", "tiny")
	var v2 api.DatasetVersion
	mustJSON(t, s.must(nil, "dataset", "version", "shots", "--follow", "-o", "json"), &v2)
	if v2.AnnotatedSampleCount != 2 || v2.PerClass["wide"] != 1 || v2.PerClass["tiny"] != 1 {
		t.Errorf("v2: %+v", v2)
	}
}

// TestDatasetVersionSurvivesKill9: a server killed with SIGKILL while it
// makes a version resumes it after the restart and publishes it whole.
func TestDatasetVersionSurvivesKill9(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServer(t, dataDir)
	admin := []string{"ATELIER_CONFIG=" + filepath.Join(dataDir, "admin.yaml")}
	run := func(s *server, args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, admin, args...)
		if code != 0 {
			t.Fatalf("atelier %s: %d\n%s%s\nserver log:\n%s", strings.Join(args, " "), code, out, errOut, tail(s.log.String(), 3000))
		}
		return out
	}
	run(s, "obs", "mb", "obs://data")
	run(s, "obs", "cp", "-r", imageFolder(t, 1500, "a", "b"), "obs://data/big/")
	run(s, "dataset", "create", "--name", "big", "--type", "image_classification", "--source", "obs://data/big/")
	for try := 1; ; try++ {
		var v api.DatasetVersion
		mustJSON(t, run(s, "dataset", "version", "big", "-o", "json"), &v)
		if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-s.done
		s.done <- nil
		s = startServer(t, dataDir)
		got := until(t, 60*time.Second, "the version is made after the restart", func() api.DatasetVersion {
			var got api.DatasetVersion
			mustJSON(t, run(s, "dataset", "get", "big", "--version", v.VersionName, "--no-check", "-o", "json"), &got)
			return got
		}, func(v api.DatasetVersion) bool { return v.Status != api.DatasetVersionCreating })
		if got.Status != api.DatasetVersionPublished || got.TotalSampleCount != 3000 {
			t.Fatalf("after the restart: %s, %d samples, %d errors: %s", got.Status, got.TotalSampleCount, got.Errors, got.FailureMessage)
		}
		if lines := strings.Count(run(s, "dataset", "manifest", "big", v.VersionName), "\n"); lines != 3000 {
			t.Fatalf("the resumed version's manifest has %d lines", lines)
		}
		if got.Attempts == 2 && strings.Contains(s.log.String(), "resuming the creation of a dataset version") {
			return // killed while creating, resumed, published whole
		}
		if try == 3 {
			t.Fatalf("the version was always made before the kill landed (attempts %d)", got.Attempts)
		}
	}
}

// pinnedScript prints the MD5 of each staged sample of its dataset input,
// by its source in the version's manifest as published.
const pinnedScript = `import argparse, hashlib, json, os
p = argparse.ArgumentParser()
p.add_argument('--data_url', required=True)
args, _ = p.parse_known_args()
local = [json.loads(l) for l in open(os.path.join(args.data_url, 'flowers-v1.manifest'))]
remote = [json.loads(l) for l in open(os.path.join(args.data_url, 'flowers-v1.obs.manifest'))]
for l, r in zip(local, remote):
    print('md5', r['source'], hashlib.md5(open(l['source'], 'rb').read()).hexdigest(), flush=True)
`

// TestDatasetVersionPinsVersionedObjects: over a versioned bucket a
// dataset version pins each object's version id. Overwriting an image
// afterwards leaves the version published (dataset get shows it pinned),
// and a job from it reads the old bytes, not the current object.
func TestDatasetVersionPinsVersionedObjects(t *testing.T) {
	py := systemPython(t)
	cfgFile := writeJobConfig(t, t.TempDir(), py, "")
	s := &jobServer{server: startServer(t, t.TempDir(), "--config", cfgFile), py: py}
	s.must(nil, "obs", "mb", "obs://data")
	s.must(nil, "obs", "versioning", "enable", "obs://data")
	s.must(nil, "obs", "cp", "-r", imageFolder(t, 2, "daisy", "rose"), "obs://data/flowers/")
	s.must(nil, "dataset", "create", "--name", "flowers", "--type", "image_classification", "--source", "obs://data/flowers/")
	var v api.DatasetVersion
	out, errOut, code := s.run(2*time.Minute, nil, "dataset", "version", "flowers", "--follow", "-o", "json")
	if code != 0 {
		t.Fatalf("dataset version: %d\n%s%s", code, out, errOut)
	}
	mustJSON(t, out, &v)
	if v.Status != api.DatasetVersionPublished || v.PinnedObjects != 4 {
		t.Fatalf("version %+v", v)
	}
	if got := s.must(nil, "dataset", "manifest", "flowers", "v1"); strings.Count(got, `"source-version-id":`) != 4 {
		t.Errorf("dataset manifest pins no versions:\n%s", got)
	}
	orig := fmt.Sprintf("%x", md5.Sum(pngFile(t, 16, 12, 100_000)))
	changed := filepath.Join(t.TempDir(), "0.png")
	if err := os.WriteFile(changed, pngFile(t, 16, 12, 999), 0o644); err != nil {
		t.Fatal(err)
	}
	s.must(nil, "obs", "cp", changed, "obs://data/flowers/rose/0.png")
	s.must(nil, "obs", "rm", "obs://data/flowers/daisy/1.png")

	got := s.must(nil, "dataset", "get", "flowers", "--version", "v1")
	if !strings.Contains(got, "published") || strings.Contains(got, "degraded") || !strings.Contains(got, "4 objects by version id, kept from lifecycle expiry") {
		t.Errorf("dataset get after overwriting an image:\n%s", got)
	}
	src := codeDir(t, map[string]string{"train.py": pinnedScript})
	id := s.create(nil, "--name", "pinned", "--code-dir", src, "--boot-file", "train.py", "--input", "data_url=dataset:flowers@v1")
	j := s.wait(id, 2*time.Minute)
	s.expectPhase(j, api.PhaseCompleted, api.FailureCompleted)
	logs := s.logs(id)
	if !strings.Contains(logs, "md5 obs://data/flowers/rose/0.png "+orig) || strings.Count(logs, "md5 ") != 4 {
		t.Errorf("the job did not read the pinned version of rose/0.png (md5 %s):\n%s", orig, logs)
	}
}
