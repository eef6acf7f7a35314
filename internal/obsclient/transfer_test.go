package obsclient_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
)

const mib = 1 << 20

// recorder is a Reporter that remembers what it was told.
type recorder struct {
	mu       sync.Mutex
	files    int
	total    int64
	progress atomic.Int64
	warnings []string
	done     []obsclient.Summary
}

func (r *recorder) Begin(files int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files, r.total = files, bytes
}
func (r *recorder) Progress(n int64) { r.progress.Add(n) }
func (r *recorder) Warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, msg)
}
func (r *recorder) Done(s obsclient.Summary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = append(r.done, s)
}

func (r *recorder) warned(sub string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.warnings, func(w string) bool { return strings.Contains(w, sub) })
}

// setup is a store with bucket "bkt" and a client over it.
type setup struct {
	store *obsmem.Store
	rep   *recorder
	cpDir string
	opts  obsclient.Options
}

func newSetup(t *testing.T, opts obsclient.Options) *setup {
	t.Helper()
	s := &setup{store: obsmem.New(), rep: &recorder{}, cpDir: filepath.Join(t.TempDir(), "checkpoints")}
	if err := s.store.MakeBucket(context.Background(), "bkt"); err != nil {
		t.Fatal(err)
	}
	opts.CheckpointDir = s.cpDir
	opts.Reporter = s.rep
	s.opts = opts
	return s
}

// client is a fresh client, as a new run of the command would make.
func (s *setup) client() *obsclient.Client {
	s.rep = &recorder{}
	s.opts.Reporter = s.rep
	return obsclient.New(s.store, s.opts)
}

func randomBytes(n int, seed uint64) []byte {
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

func write(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func cp(t *testing.T, c *obsclient.Client, src, dst string, o obsclient.CopyOptions) (obsclient.Summary, error) {
	t.Helper()
	return c.Copy(context.Background(), loc(t, src), loc(t, dst), o)
}

func TestUploadManySmallFilesInParallel(t *testing.T) {
	s := newSetup(t, obsclient.Options{Jobs: 16})
	dir := t.TempDir()
	want := map[string][]byte{}
	var total int64
	for i := range 500 {
		rel := fmt.Sprintf("class%02d/img%03d.jpg", i%20, i)
		data := randomBytes(i*7%2048, uint64(i))
		write(t, filepath.Join(dir, rel), data)
		want["ds/"+rel] = data
		total += int64(len(data))
	}
	write(t, filepath.Join(dir, ".git", "HEAD"), []byte("ref: main"))
	write(t, filepath.Join(dir, "class00", "__pycache__", "x.pyc"), []byte("pyc"))

	var inFlight, peak atomic.Int32
	s.store.SetFault(func(c obsmem.Call) error {
		if c.Op == "Put" {
			n := inFlight.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(time.Millisecond)
			inFlight.Add(-1)
		}
		return nil
	})
	sum, err := cp(t, s.client(), dir, "obs://bkt/ds/", obsclient.CopyOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 500 || sum.Bytes != total || sum.Action != "uploaded" {
		t.Errorf("summary %+v", sum)
	}
	keys := s.store.Keys("bkt")
	if len(keys) != 500 {
		t.Fatalf("%d objects, want 500", len(keys))
	}
	for k, data := range want {
		got, ok := s.store.Object("bkt", k)
		if !ok || !bytes.Equal(got, data) {
			t.Fatalf("object %s differs", k)
		}
	}
	if p := peak.Load(); p < 2 || p > 16 {
		t.Errorf("peak parallel uploads %d, want 2..16", p)
	}
	if s.store.Count("CreateMultipart") != 0 {
		t.Errorf("small files went multipart")
	}
	if got := s.rep.progress.Load(); got != total {
		t.Errorf("progress %d, want %d", got, total)
	}
	if !s.rep.warned("not copying .git/, __pycache__/") {
		t.Errorf("warnings %q", s.rep.warnings)
	}
	if len(s.rep.done) != 1 {
		t.Errorf("Done called %d times", len(s.rep.done))
	}
}

func TestMultipartUpload(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib, PartJobs: 3})
	data := randomBytes(40*mib, 7)
	src := filepath.Join(t.TempDir(), "model.bin")
	write(t, src, data)
	var inFlight, peak atomic.Int32
	s.store.SetFault(func(c obsmem.Call) error {
		if c.Op == "UploadPart" {
			n := inFlight.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(5 * time.Millisecond)
			inFlight.Add(-1)
		}
		return nil
	})
	if _, err := cp(t, s.client(), src, "obs://bkt/models/", obsclient.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	got, ok := s.store.Object("bkt", "models/model.bin")
	if !ok || !bytes.Equal(got, data) {
		t.Fatal("object differs")
	}
	if n := s.store.Count("UploadPart"); n != 8 {
		t.Errorf("%d parts uploaded, want 8", n)
	}
	if n := s.store.Count("Put"); n != 0 {
		t.Errorf("%d single puts", n)
	}
	if p := peak.Load(); p < 2 || p > 3 {
		t.Errorf("peak parallel parts %d, want 2..3", p)
	}
	o, err := s.store.Stat(context.Background(), "bkt", "models/model.bin")
	if err != nil || !strings.HasSuffix(o.ETag, "-8") {
		t.Errorf("ETag %q, err %v", o.ETag, err)
	}
	if ents, _ := os.ReadDir(s.cpDir); len(ents) != 0 {
		t.Errorf("checkpoint left behind: %v", ents)
	}
	if s.rep.progress.Load() != int64(len(data)) {
		t.Errorf("progress %d", s.rep.progress.Load())
	}
}

// uploadedParts lists the part numbers UploadPart stored (calls with no
// error injected) from calls[from:].
func partsCalled(calls []obsmem.Call) []int {
	var out []int
	for _, c := range calls {
		if c.Op == "UploadPart" {
			out = append(out, c.Part)
		}
	}
	slices.Sort(out)
	return out
}

// interrupted copies src to obs://bkt/big.bin failing every UploadPart
// after the first k, and returns the parts stored.
func interrupted(t *testing.T, s *setup, src string, k int32) []int {
	t.Helper()
	var n atomic.Int32
	var mu sync.Mutex
	var stored []int
	s.store.SetFault(func(c obsmem.Call) error {
		if c.Op != "UploadPart" {
			return nil
		}
		if n.Add(1) > k {
			return errs.E("test", errs.IO, "connection reset by peer")
		}
		mu.Lock()
		stored = append(stored, c.Part)
		mu.Unlock()
		return nil
	})
	_, err := cp(t, s.client(), src, "obs://bkt/big.bin", obsclient.CopyOptions{})
	if err == nil || !strings.Contains(errs.UserMessage(err), "connection reset by peer") {
		t.Fatalf("first run: error %v", err)
	}
	s.store.SetFault(nil)
	if s.store.Uploads() != 1 {
		t.Fatalf("%d uploads in progress after the failure, want 1", s.store.Uploads())
	}
	slices.Sort(stored)
	return stored
}

func TestResumeUpload(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib, PartJobs: 4})
	data := randomBytes(40*mib, 9)
	src := filepath.Join(t.TempDir(), "big.bin")
	write(t, src, data)
	first := interrupted(t, s, src, 3)
	if len(first) != 3 {
		t.Fatalf("first run stored parts %v", first)
	}
	cps, _ := filepath.Glob(filepath.Join(s.cpDir, "*.json"))
	if len(cps) != 1 {
		t.Fatalf("checkpoints %v, want one", cps)
	}
	b, _ := os.ReadFile(cps[0])
	var cpData struct {
		UploadID string `json:"upload_id"`
		Parts    []struct {
			Number int `json:"number"`
		} `json:"parts"`
	}
	if err := json.Unmarshal(b, &cpData); err != nil || cpData.UploadID == "" || len(cpData.Parts) != 3 {
		t.Fatalf("checkpoint %s: %v", b, err)
	}

	before := len(s.store.Calls())
	if _, err := cp(t, s.client(), src, "obs://bkt/big.bin", obsclient.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	second := partsCalled(s.store.Calls()[before:])
	var all []int
	for i := 1; i <= 8; i++ {
		if !slices.Contains(first, i) {
			all = append(all, i)
		}
	}
	if !slices.Equal(second, all) {
		t.Errorf("second run uploaded parts %v, want only %v", second, all)
	}
	if n := s.store.Count("CreateMultipart"); n != 1 {
		t.Errorf("%d uploads created, want 1 (resumed)", n)
	}
	got, _ := s.store.Object("bkt", "big.bin")
	if !bytes.Equal(got, data) {
		t.Fatal("resumed object differs")
	}
	if !s.rep.warned("resuming the upload") || !s.rep.warned("3 of 8 parts") {
		t.Errorf("warnings %q", s.rep.warnings)
	}
	if _, err := os.Stat(cps[0]); !os.IsNotExist(err) {
		t.Errorf("checkpoint not deleted: %v", err)
	}
	if s.rep.progress.Load() != int64(len(data)) {
		t.Errorf("progress %d, want %d", s.rep.progress.Load(), len(data))
	}
}

func TestResumeUploadAdoptsPartsMissingFromCheckpoint(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib, PartJobs: 2})
	data := randomBytes(20*mib, 11)
	src := filepath.Join(t.TempDir(), "big.bin")
	write(t, src, data)
	first := interrupted(t, s, src, 2)
	// As if the process died before the checkpoint recorded any part.
	cps, _ := filepath.Glob(filepath.Join(s.cpDir, "*.json"))
	b, _ := os.ReadFile(cps[0])
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		t.Fatal(err)
	}
	raw["parts"] = []any{}
	b, _ = json.Marshal(raw)
	if err := os.WriteFile(cps[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := len(s.store.Calls())
	if _, err := cp(t, s.client(), src, "obs://bkt/big.bin", obsclient.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if second := partsCalled(s.store.Calls()[before:]); len(second)+len(first) != 4 {
		t.Errorf("first run stored %v, second uploaded %v", first, second)
	}
	got, _ := s.store.Object("bkt", "big.bin")
	if !bytes.Equal(got, data) {
		t.Fatal("object differs")
	}
}

func TestResumeStartsOverWhenUploadIsGone(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib})
	data := randomBytes(20*mib, 12)
	src := filepath.Join(t.TempDir(), "big.bin")
	write(t, src, data)
	interrupted(t, s, src, 2)
	ups, _ := s.store.ListUploads(context.Background(), "bkt", "")
	if err := s.store.AbortMultipart(context.Background(), "bkt", "big.bin", ups[0].UploadID); err != nil {
		t.Fatal(err)
	}
	before := len(s.store.Calls())
	if _, err := cp(t, s.client(), src, "obs://bkt/big.bin", obsclient.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if second := partsCalled(s.store.Calls()[before:]); len(second) != 4 {
		t.Errorf("second run uploaded %v, want all 4 parts", second)
	}
	if !s.rep.warned("no longer exists") {
		t.Errorf("warnings %q", s.rep.warnings)
	}
	got, _ := s.store.Object("bkt", "big.bin")
	if !bytes.Equal(got, data) {
		t.Fatal("object differs")
	}
}

func TestResumeStartsOverWhenFileChanged(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib})
	src := filepath.Join(t.TempDir(), "big.bin")
	write(t, src, randomBytes(20*mib, 13))
	interrupted(t, s, src, 2)
	data := randomBytes(20*mib, 14)
	write(t, src, data)
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(src, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := cp(t, s.client(), src, "obs://bkt/big.bin", obsclient.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if !s.rep.warned("changed since its interrupted upload") {
		t.Errorf("warnings %q", s.rep.warnings)
	}
	if n := s.store.Uploads(); n != 0 {
		t.Errorf("%d stale uploads left", n)
	}
	got, _ := s.store.Object("bkt", "big.bin")
	if !bytes.Equal(got, data) {
		t.Fatal("object differs")
	}
}

func TestDownload(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib, PartJobs: 3})
	mod := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	big := randomBytes(12*mib+5, 21)
	s.store.PutObject("bkt", "ds/cat/1.jpg", []byte("cat"), mod)
	s.store.PutObject("bkt", "ds/dog/2.jpg", []byte("dog"), mod)
	s.store.PutObject("bkt", "ds/big.bin", big, mod)
	s.store.PutObject("bkt", "ds/empty/", nil, mod)
	s.store.PutObject("bkt", "other.txt", []byte("no"), mod)
	out := filepath.Join(t.TempDir(), "out")

	sum, err := cp(t, s.client(), "obs://bkt/ds", out, obsclient.CopyOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 3 || sum.Action != "downloaded" {
		t.Errorf("summary %+v", sum)
	}
	for rel, want := range map[string][]byte{"cat/1.jpg": []byte("cat"), "dog/2.jpg": []byte("dog"), "big.bin": big} {
		p := filepath.Join(out, rel)
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v", rel, err)
		}
		if fi, _ := os.Stat(p); !fi.ModTime().Equal(mod) {
			t.Errorf("%s mtime %v, want %v", rel, fi.ModTime(), mod)
		}
	}
	if n := s.store.Count("Get"); n != 2+3 {
		t.Errorf("%d GETs, want 2 whole + 3 ranges", n)
	}
	if ents, _ := filepath.Glob(filepath.Join(out, ".*atelier*")); len(ents) != 0 {
		t.Errorf("temporary files left: %v", ents)
	}

	_, err = cp(t, s.client(), "obs://bkt/ds/", out, obsclient.CopyOptions{Recursive: true})
	if !errs.Is(err, errs.Exists) || !strings.Contains(errs.UserMessage(err), "3 local files already exist") {
		t.Fatalf("second download without -f: %v", err)
	}
	if _, err := cp(t, s.client(), "obs://bkt/ds/", out, obsclient.CopyOptions{Recursive: true, Force: true}); err != nil {
		t.Fatalf("with -f: %v", err)
	}

	one := t.TempDir()
	if _, err := cp(t, s.client(), "obs://bkt/ds/cat/1.jpg", one, obsclient.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(one, "1.jpg")); string(got) != "cat" {
		t.Errorf("single download into a directory: %q", got)
	}
}

func TestSync(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.txt"), []byte("alpha"))
	write(t, filepath.Join(dir, "sub", "b.txt"), []byte("bravo"))
	big := randomBytes(11*mib, 31)
	write(t, filepath.Join(dir, "big.bin"), big)
	ctx := context.Background()
	sync := func(o obsclient.SyncOptions) obsclient.Summary {
		t.Helper()
		sum, err := s.client().Sync(ctx, loc(t, dir), loc(t, "obs://bkt/ds"), o)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	if sum := sync(obsclient.SyncOptions{}); sum.Files != 3 || sum.Unchanged != 0 {
		t.Fatalf("first sync %+v", sum)
	}
	if sum := sync(obsclient.SyncOptions{}); sum.Files != 0 || sum.Unchanged != 3 {
		t.Fatalf("second sync %+v (the multipart object must match its local ETag)", sum)
	}
	write(t, filepath.Join(dir, "a.txt"), []byte("ALPHA"))
	if err := os.Remove(filepath.Join(dir, "sub", "b.txt")); err != nil {
		t.Fatal(err)
	}
	s.store.PutObject("bkt", "ds/.git/HEAD", []byte("x"), time.Now())
	sum := sync(obsclient.SyncOptions{Delete: true})
	if sum.Files != 1 || sum.Unchanged != 1 || sum.Deleted != 1 {
		t.Fatalf("third sync %+v", sum)
	}
	if got, _ := s.store.Object("bkt", "ds/a.txt"); string(got) != "ALPHA" {
		t.Errorf("a.txt = %q", got)
	}
	if keys := s.store.Keys("bkt"); !slices.Equal(keys, []string{"ds/.git/HEAD", "ds/a.txt", "ds/big.bin"}) {
		t.Errorf("keys %q", keys)
	}

	out := t.TempDir()
	if sum, err := s.client().Sync(ctx, loc(t, "obs://bkt/ds/"), loc(t, out), obsclient.SyncOptions{}); err != nil || sum.Files != 2 {
		t.Fatalf("download sync %+v %v", sum, err)
	}
	if sum, err := s.client().Sync(ctx, loc(t, "obs://bkt/ds/"), loc(t, out), obsclient.SyncOptions{}); err != nil || sum.Files != 0 || sum.Unchanged != 2 {
		t.Fatalf("second download sync %+v %v", sum, err)
	}
}

func TestServerCopyAndMove(t *testing.T) {
	s := newSetup(t, obsclient.Options{})
	now := time.Now()
	s.store.PutObject("bkt", "ds/a", []byte("a"), now)
	s.store.PutObject("bkt", "ds/b/c", []byte("c"), now)
	c := s.client()
	if sum, err := cp(t, c, "obs://bkt/ds/", "obs://bkt/bak", obsclient.CopyOptions{Recursive: true}); err != nil || sum.Files != 2 || sum.Action != "copied" {
		t.Fatalf("%+v %v", sum, err)
	}
	if n := s.store.Count("Copy"); n != 2 {
		t.Errorf("%d server-side copies", n)
	}
	if _, err := cp(t, c, "obs://bkt/bak/a", "obs://bkt/moved/", obsclient.CopyOptions{Move: true}); err != nil {
		t.Fatal(err)
	}
	if keys := s.store.Keys("bkt"); !slices.Equal(keys, []string{"bak/b/c", "ds/a", "ds/b/c", "moved/a"}) {
		t.Errorf("keys %q", keys)
	}

	dir := t.TempDir()
	write(t, filepath.Join(dir, "x", "1.txt"), []byte("1"))
	if sum, err := cp(t, c, dir, "obs://bkt/up/", obsclient.CopyOptions{Recursive: true, Move: true}); err != nil || sum.Action != "moved" {
		t.Fatalf("%+v %v", sum, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x", "1.txt")); !os.IsNotExist(err) {
		t.Errorf("moved file still there: %v", err)
	}
}

func TestCopyErrors(t *testing.T) {
	s := newSetup(t, obsclient.Options{})
	s.store.PutObject("bkt", "dataset/train/1.jpg", []byte("1"), time.Now())
	dir := t.TempDir()
	write(t, filepath.Join(dir, "data", "x.txt"), []byte("x"))
	tests := []struct {
		name, src, dst string
		opts           obsclient.CopyOptions
		kind           errs.Kind
		msg, hint      string
	}{
		{name: "missing local source", src: filepath.Join(dir, "nope"), dst: "obs://bkt/", kind: errs.NotFound,
			msg: "local source " + filepath.Join(dir, "nope") + " does not exist"},
		{name: "local near miss", src: filepath.Join(dir, "Data"), dst: "obs://bkt/", kind: errs.NotFound,
			hint: "did you mean " + filepath.Join(dir, "data") + "?"},
		{name: "local dir without -r", src: filepath.Join(dir, "data"), dst: "obs://bkt/", kind: errs.Invalid,
			msg: filepath.Join(dir, "data") + " is a directory; use -r to copy its contents"},
		{name: "prefix without -r", src: "obs://bkt/dataset", dst: dir, kind: errs.Invalid,
			msg: "obs://bkt/dataset/ is a directory; use -r to copy its contents"},
		{name: "prefix near miss", src: "obs://bkt/Dataset/", dst: dir, opts: obsclient.CopyOptions{Recursive: true}, kind: errs.NotFound,
			msg: "there are no objects under obs://bkt/Dataset/", hint: "keys are case-sensitive: did you mean obs://bkt/dataset/?"},
		{name: "deep near miss", src: "obs://bkt/dataset/Train/1.jpg", dst: dir, kind: errs.NotFound,
			msg: "obs://bkt/dataset/Train/1.jpg does not exist", hint: "did you mean obs://bkt/dataset/train/1.jpg?"},
		{name: "empty prefix without -r", src: "obs://bkt/nothing/", dst: dir, kind: errs.NotFound,
			msg: "there are no objects under obs://bkt/nothing/"},
		{name: "missing object", src: "obs://bkt/nothing.txt", dst: dir, kind: errs.NotFound, msg: "obs://bkt/nothing.txt does not exist"},
		{name: "missing bucket", src: "obs://nobkt/x", dst: dir, kind: errs.NotFound, msg: `bucket "nobkt" does not exist`,
			hint: "atelier obs mb obs://nobkt"},
		{name: "missing destination bucket", src: filepath.Join(dir, "data"), dst: "obs://nobkt/", opts: obsclient.CopyOptions{Recursive: true},
			kind: errs.NotFound, msg: `bucket "nobkt" does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cp(t, s.client(), tt.src, tt.dst, tt.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if errs.KindOf(err) != tt.kind || !strings.Contains(errs.UserMessage(err), tt.msg) || !strings.Contains(string(errs.HintOf(err)), tt.hint) {
				t.Errorf("error %q (%v; hint %q), want %v %q hint %q", errs.UserMessage(err), errs.KindOf(err), errs.HintOf(err), tt.kind, tt.msg, tt.hint)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	dir := t.TempDir()
	for i := range 100 {
		write(t, filepath.Join(dir, fmt.Sprintf("f%03d", i)), []byte{byte(i)})
	}
	t.Run("some fail, the rest is copied", func(t *testing.T) {
		s := newSetup(t, obsclient.Options{Jobs: 4})
		s.store.SetFault(func(c obsmem.Call) error {
			if c.Op == "Put" && (c.Key == "f007" || c.Key == "f042") {
				return errs.E("test", errs.IO, "disk full")
			}
			return nil
		})
		_, err := cp(t, s.client(), dir, "obs://bkt/", obsclient.CopyOptions{Recursive: true})
		if err == nil || !strings.HasPrefix(errs.UserMessage(err), "2 of 100 transfers failed; the first: cannot upload ") {
			t.Fatalf("error %v", err)
		}
		if n := len(s.store.Keys("bkt")); n != 98 {
			t.Errorf("%d objects, want 98", n)
		}
	})
	t.Run("bad credentials stop the run", func(t *testing.T) {
		s := newSetup(t, obsclient.Options{Jobs: 4})
		s.store.SetFault(func(c obsmem.Call) error {
			if c.Op == "Put" {
				return obsclient.S3Error("InvalidAccessKeyId", "The access key does not exist.", c.Bucket, c.Key)
			}
			return nil
		})
		_, err := cp(t, s.client(), dir, "obs://bkt/", obsclient.CopyOptions{Recursive: true})
		if !errs.Is(err, errs.Unauthenticated) || errs.CodeOf(err) != "InvalidAccessKeyId" {
			t.Fatalf("error %v", err)
		}
		if n := s.store.Count("Put"); n > 10 {
			t.Errorf("%d uploads tried after the credentials failed", n)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		s := newSetup(t, obsclient.Options{Jobs: 4})
		ctx, cancel := context.WithCancel(context.Background())
		s.store.SetFault(func(c obsmem.Call) error {
			if c.Op == "Put" {
				cancel()
			}
			return nil
		})
		_, err := s.client().Copy(ctx, loc(t, dir), loc(t, "obs://bkt/"), obsclient.CopyOptions{Recursive: true})
		if err != context.Canceled {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	})
}

func TestBucketsListRemove(t *testing.T) {
	s := newSetup(t, obsclient.Options{})
	ctx := context.Background()
	c := s.client()
	if err := c.MakeBucket(ctx, "Bad_Name"); !errs.Is(err, errs.Invalid) {
		t.Errorf("MakeBucket(Bad_Name): %v", err)
	}
	if err := c.MakeBucket(ctx, "bkt"); !errs.Is(err, errs.Exists) {
		t.Errorf("MakeBucket twice: %v", err)
	}
	now := time.Now()
	for _, k := range []string{"ds/a", "ds/b/c", "ds/b/d", "dsx", "top"} {
		s.store.PutObject("bkt", k, []byte(k), now)
	}
	keys := func(os []obsclient.Object) []string {
		var out []string
		for _, o := range os {
			out = append(out, o.Key)
		}
		return out
	}
	for _, tt := range []struct {
		url       string
		recursive bool
		want      []string
	}{
		{"obs://bkt", false, []string{"ds/", "dsx", "top"}},
		{"obs://bkt/ds", false, []string{"ds/a", "ds/b/"}},
		{"obs://bkt/ds/", true, []string{"ds/a", "ds/b/c", "ds/b/d"}},
		{"obs://bkt/top", false, []string{"top"}},
	} {
		got, err := c.List(ctx, loc(t, tt.url), tt.recursive)
		if err != nil || !slices.Equal(keys(got), tt.want) {
			t.Errorf("List(%s, %v) = %q, %v; want %q", tt.url, tt.recursive, keys(got), err, tt.want)
		}
	}
	if _, err := c.List(ctx, loc(t, "obs://bkt/DS/"), false); !errs.Is(err, errs.NotFound) || !strings.Contains(string(errs.HintOf(err)), "obs://bkt/ds/") {
		t.Errorf("near miss: %v (hint %q)", err, errs.HintOf(err))
	}

	if _, err := c.Remove(ctx, loc(t, "obs://bkt/ds"), false); err == nil || !strings.Contains(errs.UserMessage(err), "is a directory; use -r to delete its contents") {
		t.Errorf("rm prefix without -r: %v", err)
	}
	if _, err := c.Remove(ctx, loc(t, "obs://bkt/missing"), false); !errs.Is(err, errs.NotFound) {
		t.Errorf("rm missing: %v", err)
	}
	if n, err := c.Remove(ctx, loc(t, "obs://bkt/ds"), true); err != nil || n != 3 {
		t.Errorf("rm -r ds: %d, %v", n, err)
	}
	if got := s.store.Keys("bkt"); !slices.Equal(got, []string{"dsx", "top"}) {
		t.Errorf("after rm -r: %q", got)
	}
	if n, err := c.Remove(ctx, loc(t, "obs://bkt/top"), false); err != nil || n != 1 {
		t.Errorf("rm top: %d %v", n, err)
	}

	if _, err := s.store.CreateMultipart(ctx, "bkt", "pending", obsclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RemoveBucket(ctx, "bkt", false); !errs.Is(err, errs.Conflict) || !strings.Contains(string(errs.HintOf(err)), "--force") {
		t.Errorf("rb non-empty: %v", err)
	}
	if n, err := c.RemoveBucket(ctx, "bkt", true); err != nil || n != 1 {
		t.Errorf("rb --force: %d, %v", n, err)
	}
	if bs, _ := c.ListBuckets(ctx); len(bs) != 0 {
		t.Errorf("buckets left: %v", bs)
	}
}

func TestStatCatPresign(t *testing.T) {
	s := newSetup(t, obsclient.Options{})
	ctx := context.Background()
	s.store.PutObject("bkt", "dir/hello.txt", []byte("hello"), time.Now())
	c := s.client()
	o, err := c.Stat(ctx, loc(t, "obs://bkt/dir/hello.txt"))
	sum := md5.Sum([]byte("hello"))
	if err != nil || o.Size != 5 || o.ETag != fmt.Sprintf("%x", sum) {
		t.Errorf("stat %+v %v", o, err)
	}
	if _, err := c.Stat(ctx, loc(t, "obs://bkt/dir")); err == nil || !strings.Contains(errs.UserMessage(err), "is a directory, not an object") {
		t.Errorf("stat of a prefix: %v", err)
	}
	var b bytes.Buffer
	if _, err := c.Cat(ctx, loc(t, "obs://bkt/dir/hello.txt"), &b); err != nil || b.String() != "hello" {
		t.Errorf("cat %q %v", b.String(), err)
	}
	if u, err := c.Presign(ctx, loc(t, "obs://bkt/dir/hello.txt"), time.Hour); err != nil || !strings.Contains(u, "X-Amz-Expires=3600") {
		t.Errorf("presign %q %v", u, err)
	}
	if _, err := c.Presign(ctx, loc(t, "obs://bkt/dir/hello.txt"), 8*24*time.Hour); !errs.Is(err, errs.Invalid) {
		t.Errorf("presign 8 days: %v", err)
	}
	if _, err := c.Presign(ctx, loc(t, "obs://bkt/nope"), time.Hour); !errs.Is(err, errs.NotFound) {
		t.Errorf("presign missing: %v", err)
	}
}

func TestFailedUploadThatCannotResumeIsAborted(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib})
	s.opts.CheckpointDir = "" // nothing could resume it
	src := filepath.Join(t.TempDir(), "big.bin")
	write(t, src, randomBytes(20*mib, 21))
	for _, failing := range []string{"UploadPart", "CompleteMultipart"} {
		t.Run(failing, func(t *testing.T) {
			s.store.SetFault(func(c obsmem.Call) error {
				if c.Op == failing {
					return errs.E("test", errs.IO, "no space left on device")
				}
				return nil
			})
			defer s.store.SetFault(nil)
			if _, err := cp(t, s.client(), src, "obs://bkt/big.bin", obsclient.CopyOptions{}); err == nil {
				t.Fatal("the upload did not fail")
			}
			if n := s.store.Uploads(); n != 0 {
				t.Errorf("%d incomplete uploads left on the server, want 0", n)
			}
			if n := s.store.Count("AbortMultipart"); n == 0 {
				t.Error("the failed upload was not aborted")
			}
		})
	}
}

func TestAbortResumable(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib})
	src := filepath.Join(t.TempDir(), "big.bin")
	write(t, src, randomBytes(20*mib, 22))
	interrupted(t, s, src, 2) // one upload open, its checkpoint kept for a resume
	if cps, _ := filepath.Glob(filepath.Join(s.cpDir, "*.json")); len(cps) != 1 {
		t.Fatalf("checkpoints %v, want one", cps)
	}
	// A stale checkpoint whose upload is gone already is only deleted.
	stale := filepath.Join(s.cpDir, "stale.json")
	write(t, stale, []byte(`{"version":1,"source":"/x","dest":"obs://bkt/gone","upload_id":"nope"}`))
	n, err := s.client().AbortResumable(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("AbortResumable = %d, %v; want 1 upload aborted", n, err)
	}
	if u := s.store.Uploads(); u != 0 {
		t.Errorf("%d incomplete uploads left, want 0", u)
	}
	if cps, _ := filepath.Glob(filepath.Join(s.cpDir, "*.json")); len(cps) != 0 {
		t.Errorf("checkpoints left: %v", cps)
	}
	// Nothing to do the second time, and no CheckpointDir is no error.
	if n, err := s.client().AbortResumable(context.Background()); n != 0 || err != nil {
		t.Errorf("second AbortResumable = %d, %v", n, err)
	}
	if n, err := obsclient.New(s.store, obsclient.Options{}).AbortResumable(context.Background()); n != 0 || err != nil {
		t.Errorf("AbortResumable without a checkpoint dir = %d, %v", n, err)
	}
}

// TestDownloadRefusesAChangedObject: a transfer of a listed object reads it
// only while its ETag is the listed one — whole or in ranges — so bytes of
// a same-size replacement never land under the old ETag.
func TestDownloadRefusesAChangedObject(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib, PartJobs: 3})
	mod := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	for name, size := range map[string]int{"small.bin": 100, "big.bin": 12*mib + 5} {
		s.store.PutObject("bkt", name, randomBytes(size, 1), mod)
		listed, err := s.store.Stat(context.Background(), "bkt", name)
		if err != nil {
			t.Fatal(err)
		}
		s.store.PutObject("bkt", name, randomBytes(size, 2), mod) // same size, other bytes
		dst := filepath.Join(t.TempDir(), name)
		plan := obsclient.Plan{Transfers: []obsclient.Transfer{{Op: obsclient.Download, Src: obsclient.Location{Bucket: "bkt", Key: name},
			Dst: obsclient.Location{Path: dst}, Size: int64(size), ETag: listed.ETag}}}
		_, err = s.client().Execute(context.Background(), plan, "downloaded", false)
		if !errs.Is(err, errs.Conflict) || !strings.Contains(errs.UserMessage(err), "changed since it was listed") {
			t.Errorf("%s: %v", name, err)
		}
		if _, serr := os.Stat(dst); serr == nil {
			t.Errorf("%s: a file was written", name)
		}
	}
}

// TestDownloadOfAVersionNeedsAVersionedS3: a transfer that names a
// version is read as that version or not at all — never as the key's
// current object over an S3 that cannot read versions.
func TestDownloadOfAVersionNeedsAVersionedS3(t *testing.T) {
	s := newSetup(t, obsclient.Options{PartSize: 5 * mib, PartJobs: 3})
	s.store.PutObject("bkt", "a.bin", randomBytes(100, 1), time.Now())
	dst := filepath.Join(t.TempDir(), "a.bin")
	plan := obsclient.Plan{Transfers: []obsclient.Transfer{{Op: obsclient.Download, Src: obsclient.Location{Bucket: "bkt", Key: "a.bin"},
		Dst: obsclient.Location{Path: dst}, Size: 100, VersionID: "0192d3a4-5b6c-7d8e-9f00-112233445566"}}}
	_, err := s.client().Execute(context.Background(), plan, "downloaded", false)
	if !errs.Is(err, errs.Unsupported) || !strings.Contains(errs.UserMessage(err), "cannot read version") {
		t.Errorf("Execute = %v", err)
	}
	if _, serr := os.Stat(dst); serr == nil {
		t.Error("a file was written")
	}
}
