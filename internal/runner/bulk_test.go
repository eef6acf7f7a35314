package runner

import (
	"archive/tar"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
)

// memInputs is the server's side of the inputs calls over an in-memory
// OBS, with faults to inject. It answers as job.Runners does: the objects
// under the input as a directory, else the one object it names.
type memInputs struct {
	store *obsmem.Store
	chans map[string]obsclient.Location // input name → its obs_url

	mu        sync.Mutex
	listErr   error             // answer listInput with this
	truncated bool              // mark listings truncated
	drop      map[string]bool   // keys the streams leave out
	badETag   map[string]bool   // keys whose entries carry another ETag
	cutAfter  int               // > 0: each stream breaks off after this many entries
	objErr    error             // answer inputObjects with this
	lists     int               // S3 listings the fake made itself
	etags     map[string]string // the ETags listed, by key
	streams   [][]string        // keys asked for, per stream
}

func newMemInputs(store *obsmem.Store, chans ...Channel) *memInputs {
	m := &memInputs{store: store, chans: map[string]obsclient.Location{}, drop: map[string]bool{}, badETag: map[string]bool{},
		etags: map[string]string{}}
	for _, c := range chans {
		m.chans[c.Name] = c.Remote
	}
	return m
}

func (m *memInputs) listInput(ctx context.Context, name string) (*api.RunnerObjectList, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.listErr != nil {
		return nil, m.listErr
	}
	loc, ok := m.chans[name]
	if !ok {
		return nil, &callError{Path: "inputs/" + name, Status: 404}
	}
	out := &api.RunnerObjectList{Items: []api.RunnerObject{}, Truncated: m.truncated}
	dir := loc.AsDir()
	m.lists++
	for o, err := range m.store.List(ctx, dir.Bucket, obsclient.ListOptions{Prefix: dir.Key, Recursive: true}) {
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, api.RunnerObject{Key: o.Key, ETag: o.ETag, Size: o.Size, LastModified: o.LastModified.UnixMilli()})
		m.etags[o.Key] = o.ETag
	}
	if len(out.Items) == 0 && !loc.DirSyntax() {
		if data, ok := m.store.Object(loc.Bucket, loc.Key); ok {
			out.Items = append(out.Items, api.RunnerObject{Key: loc.Key, ETag: md5hex(data), Size: int64(len(data)), LastModified: time.Now().UnixMilli()})
		}
	}
	return out, nil
}

func (m *memInputs) inputObjects(ctx context.Context, name string, keys []string) (io.ReadCloser, error) {
	m.mu.Lock()
	m.streams = append(m.streams, slices.Clone(keys))
	objErr, cutAfter, loc := m.objErr, m.cutAfter, m.chans[name]
	drop, badETag, etags := maps.Clone(m.drop), maps.Clone(m.badETag), maps.Clone(m.etags)
	m.mu.Unlock()
	if objErr != nil {
		return nil, objErr
	}
	// The archive is written as it is read, as the server streams it.
	pr, pw := io.Pipe()
	go func() {
		cw := &countingWriter{w: pw}
		tw := tar.NewWriter(cw)
		n := 0
		for _, k := range keys {
			data, ok := m.store.Object(loc.Bucket, k)
			if !ok || drop[k] {
				continue
			}
			etag, ok := etags[k]
			if !ok {
				etag = md5hex(data)
			}
			if badETag[k] {
				etag = md5hex([]byte("something else"))
			}
			if cutAfter > 0 && n == cutAfter {
				// Break off inside the next entry.
				cw.limit = cw.n + 700
			}
			h := &tar.Header{Typeflag: tar.TypeReg, Name: k, Mode: 0o644, Size: int64(len(data)), ModTime: time.Now(),
				PAXRecords: map[string]string{api.RunnerETagRecord: etag}, Format: tar.FormatPAX}
			if err := tw.WriteHeader(h); err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := tw.Write(data); err != nil {
				pw.CloseWithError(err)
				return
			}
			n++
		}
		pw.CloseWithError(tw.Close())
	}()
	return pr, nil
}

// countingWriter counts what it writes and, past limit (> 0), ends the
// stream cleanly as a server that gave up would.
type countingWriter struct {
	w     *io.PipeWriter
	n     int64
	limit int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.limit > 0 && c.n+int64(len(p)) > c.limit {
		k := c.limit - c.n
		c.w.Write(p[:k])
		c.n += k
		c.w.Close()
		return int(k), io.ErrShortWrite
	}
	c.n += int64(len(p))
	return c.w.Write(p)
}

// serveHTTP answers the inputs calls of the fake server; rest is the path
// after /inputs/.
func (m *memInputs) serveHTTP(w http.ResponseWriter, r *http.Request, rest string) {
	name, objects := strings.CutSuffix(rest, "/objects")
	var err error
	switch {
	case r.Method == "GET" && !objects:
		var l *api.RunnerObjectList
		if l, err = m.listInput(r.Context(), name); err == nil {
			_ = json.NewEncoder(w).Encode(l)
			return
		}
	case r.Method == "POST" && objects:
		var req api.RunnerObjectsRequest
		if err = json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var body io.ReadCloser
		if body, err = m.inputObjects(r.Context(), name, req.Keys); err == nil {
			w.Header().Set("Content-Type", "application/x-tar")
			_, _ = io.Copy(w, body)
			return
		}
	default:
		http.NotFound(w, r)
		return
	}
	status := http.StatusInternalServerError
	var ce *callError
	if errors.As(err, &ce) {
		status = ce.Status
	}
	http.Error(w, `{"error_code":"ATL.TEST.0002","error_msg":"`+err.Error()+`"}`, status)
}

// s3Calls counts the S3 calls of op the stager made (not the fake's own).
func (m *memInputs) s3Calls(op string) int {
	n := m.store.Count(op)
	if op == "List" {
		m.mu.Lock()
		n -= m.lists
		m.mu.Unlock()
	}
	return n
}

// bulkEnv is a stager over an in-memory OBS with the server's inputs
// calls.
type bulkEnv struct {
	t     *testing.T
	store *obsmem.Store
	work  string
	in    *memInputs
	st    *stager
	warns []string
}

func newBulkEnv(t *testing.T, chans ...Channel) *bulkEnv {
	t.Helper()
	e := &bulkEnv{t: t, store: obsmem.New(), work: t.TempDir()}
	if err := e.store.MakeBucket(context.Background(), "bkt"); err != nil {
		t.Fatal(err)
	}
	e.in = newMemInputs(e.store, chans...)
	e.st = &stager{s3: e.store, client: obsclient.New(e.store, obsclient.Options{Jobs: StageJobs}),
		cacheDir: ObjectCacheDir(e.work), warn: func(w string) { e.warns = append(e.warns, w) }, inputs: e.in,
		log: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	return e
}

func channel(t *testing.T, name, url string) Channel {
	t.Helper()
	loc, err := obsclient.ParseLocation(url)
	if err != nil {
		t.Fatal(err)
	}
	return Channel{Name: name, Remote: loc}
}

// stage stages chans into fresh dirs under the work dir and returns the
// tree of the first (relative path → content).
func (e *bulkEnv) stage(chans ...Channel) (stageResult, map[string]string) {
	e.t.Helper()
	chans = slices.Clone(chans)
	for i := range chans {
		chans[i].Dir = filepath.Join(e.work, "in", fmt.Sprint(time.Now().UnixNano()), chans[i].Name)
	}
	res, err := e.st.stageInputs(context.Background(), chans)
	if err != nil {
		e.t.Fatal(err)
	}
	return res, dirTree(e.t, chans[0].Dir)
}

func dirTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel != "." {
				out[rel+"/"] = ""
			}
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *bulkEnv) put(key, data string) {
	e.store.PutObject("bkt", key, []byte(data), time.Now().Add(-time.Hour).Truncate(time.Millisecond))
}

func TestStageInputsThroughServer(t *testing.T) {
	ch := channel(t, "data_url", "obs://bkt/ds/")
	e := newBulkEnv(t, ch)
	want := map[string]string{}
	for i := range 300 {
		k := fmt.Sprintf("c%d/%03d.jpg", i%7, i)
		e.put("ds/"+k, strings.Repeat(string(rune('a'+i%26)), i*37))
		want[k] = strings.Repeat(string(rune('a'+i%26)), i*37)
	}
	e.put("ds/empty/", "") // a directory marker
	e.put("dsx/not-this", "x")
	for i := range 7 {
		want[fmt.Sprintf("c%d/", i)] = ""
	}
	want["empty/"] = ""
	res, got := e.stage(ch)
	if !mapsEqual(got, want) {
		t.Fatalf("staged tree differs: %d entries, want %d", len(got), len(want))
	}
	if res.Files != 300 || res.Hits != 0 {
		t.Errorf("result %s", res)
	}
	if n := e.in.s3Calls("Get"); n != 0 {
		t.Errorf("%d S3 GETs; every object should come in a stream", n)
	}
	if n := e.in.s3Calls("List"); n != 0 {
		t.Errorf("%d S3 listings; the server lists", n)
	}
	if len(e.in.streams) < 2 || len(e.in.streams) > BulkStreams {
		t.Errorf("%d streams", len(e.in.streams))
	}
	// The cache files carry the objects' times, as S3 downloads do.
	o, _ := e.store.Stat(context.Background(), "bkt", "ds/c1/001.jpg")
	f := remoteFile{Bucket: "bkt", Obj: o}
	if fi, err := os.Stat(e.st.cachePath(f)); err != nil || !fi.ModTime().Equal(o.LastModified) || fi.Mode().Perm() != 0o644 {
		t.Errorf("cache file %v %v; object time %v", fi.ModTime(), err, o.LastModified)
	}
	// No temporary files are left in the cache.
	filepath.WalkDir(e.st.cacheDir, func(p string, d fs.DirEntry, err error) error {
		if strings.Contains(filepath.Base(p), ".bulk-") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
	// A second staging hits the cache and asks the server for nothing.
	streams := len(e.in.streams)
	res, got = e.stage(ch)
	if !mapsEqual(got, want) || res.Hits != 300 || len(e.in.streams) != streams {
		t.Errorf("cached: %s, %d streams more", res, len(e.in.streams)-streams)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestStageInputsSameAsS3: the server's listing makes the same tree as an
// S3 listing, with keys that are unsafe or both a file and a directory.
func TestStageInputsSameAsS3(t *testing.T) {
	for _, url := range []string{"obs://bkt/ds/", "obs://bkt/ds", "obs://bkt/one.csv", "obs://bkt/"} {
		t.Run(url, func(t *testing.T) {
			ch := channel(t, "in", url)
			var trees []map[string]string
			var warns [][]string
			for _, bulk := range []bool{true, false} {
				e := newBulkEnv(t, ch)
				for _, k := range []string{"ds/a", "ds/a/b", "ds/x//y", "ds/./z", "ds/ok/1", "ds/dir/", "one.csv", "top"} {
					e.put(k, "data of "+k)
				}
				if !bulk {
					e.st.inputs = nil
				}
				_, got := e.stage(ch)
				trees = append(trees, got)
				warns = append(warns, e.warns)
				if bulk && e.in.s3Calls("Get") != 0 {
					t.Errorf("%d S3 GETs through the server", e.in.s3Calls("Get"))
				}
			}
			if !mapsEqual(trees[0], trees[1]) || !slices.Equal(warns[0], warns[1]) {
				t.Errorf("through the server %v, warnings %q\nover S3 %v, warnings %q", trees[0], warns[0], trees[1], warns[1])
			}
		})
	}
}

func TestStageSingleObjectThroughServer(t *testing.T) {
	ch := channel(t, "data_url", "obs://bkt/tables/t.csv")
	e := newBulkEnv(t, ch)
	e.put("tables/t.csv", "x,y")
	chans := []Channel{ch}
	chans[0].Dir = filepath.Join(e.work, "in")
	if _, err := e.st.stageInputs(context.Background(), chans); err != nil {
		t.Fatal(err)
	}
	if chans[0].File != "t.csv" || e.in.s3Calls("Get") != 0 || e.in.s3Calls("Stat") != 0 {
		t.Errorf("file %q, S3 gets %d, stats %d", chans[0].File, e.in.s3Calls("Get"), e.in.s3Calls("Stat"))
	}
	if b, err := os.ReadFile(filepath.Join(chans[0].Dir, "t.csv")); err != nil || string(b) != "x,y" {
		t.Errorf("t.csv: %q %v", b, err)
	}
	// Nothing there: the same error as over S3.
	ch = channel(t, "missing", "obs://bkt/nothing")
	e = newBulkEnv(t, ch)
	chans = []Channel{ch}
	chans[0].Dir = filepath.Join(e.work, "in")
	_, err := e.st.stageInputs(context.Background(), chans)
	if errs.CodeOf(err) != CodeNothing {
		t.Errorf("missing input: %v", err)
	}
}

// TestStageInputsFallBackToS3: whatever the server does not deliver comes
// over S3.
func TestStageInputsFallBackToS3(t *testing.T) {
	ch := channel(t, "data_url", "obs://bkt/ds/")
	setup := func(t *testing.T) (*bulkEnv, map[string]string) {
		e := newBulkEnv(t, ch)
		want := map[string]string{}
		for i := range 60 {
			k := fmt.Sprintf("f%02d", i)
			e.put("ds/"+k, strings.Repeat("z", 1000+i))
			want[k] = strings.Repeat("z", 1000+i)
		}
		return e, want
	}
	for _, c := range []struct {
		name          string
		fault         func(m *memInputs)
		gets, s3lists int
	}{
		{"older server", func(m *memInputs) { m.listErr = &callError{Status: 404} }, 60, 1},
		{"list fails", func(m *memInputs) { m.listErr = &callError{Status: 500} }, 60, 1},
		{"list truncated", func(m *memInputs) { m.truncated = true }, 60, 1},
		{"objects refused", func(m *memInputs) { m.objErr = &callError{Status: 403} }, 60, 0},
		{"keys left out", func(m *memInputs) { m.drop["ds/f03"], m.drop["ds/f40"] = true, true }, 2, 0},
		{"changed since listed", func(m *memInputs) { m.badETag["ds/f07"] = true }, 1, 0},
		{"stream breaks off", func(m *memInputs) { m.cutAfter = 5 }, -1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, want := setup(t)
			c.fault(e.in)
			res, got := e.stage(ch)
			if !mapsEqual(got, want) || res.Files != 60 {
				t.Fatalf("staged %d files: %s", len(got), res)
			}
			gets := e.in.s3Calls("Get")
			if c.gets >= 0 && gets != c.gets {
				t.Errorf("%d S3 GETs, want %d", gets, c.gets)
			}
			if c.gets < 0 && (gets == 0 || gets == 60) {
				t.Errorf("%d S3 GETs: want the rest of the broken streams", gets)
			}
			if n := e.in.s3Calls("List"); n != c.s3lists {
				t.Errorf("%d S3 listings, want %d", n, c.s3lists)
			}
		})
	}
}

// TestStageLargeObjectsOverS3: objects from BulkMaxSize up go over S3, in
// parallel with the streams of the small ones.
func TestStageLargeObjectsOverS3(t *testing.T) {
	ch := channel(t, "data_url", "obs://bkt/ds/")
	e := newBulkEnv(t, ch)
	big := strings.Repeat("B", BulkMaxSize)
	e.put("ds/big.bin", big)
	e.put("ds/small.txt", "small")
	_, got := e.stage(ch)
	if got["big.bin"] != big || got["small.txt"] != "small" {
		t.Fatalf("tree has %d entries", len(got))
	}
	calls := e.store.Calls()
	var gets []string
	for _, c := range calls {
		if c.Op == "Get" {
			gets = append(gets, c.Key)
		}
	}
	if len(gets) == 0 || slices.ContainsFunc(gets, func(k string) bool { return k != "ds/big.bin" }) {
		t.Errorf("S3 GETs %q; want only ds/big.bin", gets)
	}
}

func TestPlanBulk(t *testing.T) {
	file := func(input, key string, size int64) remoteFile {
		return remoteFile{Input: input, Obj: obsclient.Object{Key: key, Size: size}}
	}
	var many, growing []remoteFile
	for i := range 2000 {
		many = append(many, file("a", fmt.Sprintf("k%04d", i), 25_000))
		growing = append(growing, file("a", fmt.Sprintf("k%04d", i), int64(1000+i*25)))
	}
	for _, c := range []struct {
		name    string
		files   []remoteFile
		streams int
		want    []int // files per batch
	}{
		{"nothing", nil, 4, nil},
		{"one small file", []remoteFile{file("a", "x", 10)}, 4, []int{1}},
		{"a small input is one stream", []remoteFile{file("a", "x", 1000), file("a", "y", 1000), file("a", "z", 1000)}, 4, []int{3}},
		{"a large input is spread", many, 4, []int{500, 500, 500, 500}},
		{"by cost, not count", growing, 4, []int{335, 391, 493, 781}},
		{"one stream", many, 1, []int{2000}},
		{"zero means one", many[:10], 0, []int{10}},
		{"inputs never share a stream", []remoteFile{file("b", "1", 10), file("a", "2", 10)}, 4, []int{1, 1}},
		{"few big files", []remoteFile{file("a", "1", 7<<20), file("a", "2", 7<<20)}, 4, []int{1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			batches := planBulk(slices.Clone(c.files), c.streams)
			var sizes []int
			seen := map[string]bool{}
			var costs []int64
			for i, b := range batches {
				if i > 0 && b.Input == batches[i-1].Input && len(b.Files) > 0 &&
					b.Files[0].Obj.Key <= batches[i-1].Files[len(batches[i-1].Files)-1].Obj.Key {
					t.Errorf("batch %d does not follow batch %d in key order", i, i-1)
				}
				sizes = append(sizes, len(b.Files))
				costs = append(costs, b.cost)
				if !slices.IsSortedFunc(b.Files, func(x, y remoteFile) int { return strings.Compare(x.Obj.Key, y.Obj.Key) }) {
					t.Errorf("batch keys not sorted")
				}
				for _, f := range b.Files {
					if f.Input != b.Input || seen[f.Input+"/"+f.Obj.Key] {
						t.Errorf("file %s/%s in batch of %s, or twice", f.Input, f.Obj.Key, b.Input)
					}
					seen[f.Input+"/"+f.Obj.Key] = true
				}
			}
			slices.Sort(sizes)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(sizes, want) || len(seen) != len(c.files) {
				t.Errorf("batch sizes %v, want %v (%d of %d files)", sizes, want, len(seen), len(c.files))
			}
			if len(costs) > 1 && c.name == "by cost, not count" {
				lo, hi := slices.Min(costs), slices.Max(costs)
				if float64(hi-lo) > 0.01*float64(hi) {
					t.Errorf("unbalanced batches: costs %v", costs)
				}
			}
		})
	}
}

// TestRunStagesThroughServer: a job's inputs come through the runner
// protocol (list and tar streams over HTTP), not S3, when the server
// offers it.
func TestRunStagesThroughServer(t *testing.T) {
	e := newEnv(t)
	for i := range 40 {
		e.put(fmt.Sprintf("data/d%d/f%02d.bin", i%4, i), strings.Repeat("x", i))
	}
	script := `for a in "$@"; do case "$a" in --data_url=*) d=${a#--data_url=};; esac; done; find "$d" -type f | wc -l; cat "$d/d1/f05.bin"`
	j := withIO(e.job("j-bulk", "count.sh"))
	fs := newFakeServer(t, j, map[string]string{"count.sh": script})
	loc, _ := obsclient.ParseLocation(j.Job.Algorithm.Inputs[0].Remote.OBS.OBSURL)
	fs.inputs = newMemInputs(e.store, Channel{Name: j.Job.Algorithm.Inputs[0].Name, Remote: loc})
	e.run(context.Background(), e.config(fs))
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v", ex)
	}
	if got := fs.texts(StreamStdout); !slices.Equal(got, []string{"40", "xxxxx"}) {
		t.Errorf("stdout %q", got)
	}
	if n := fs.inputs.s3Calls("Get"); n != 0 {
		t.Errorf("%d S3 GETs", n)
	}
	if !slices.ContainsFunc(fs.texts(StreamRunner), func(s string) bool {
		return strings.Contains(s, "staged the inputs: 40 files (0 from the cache") && strings.Contains(s, "list ")
	}) {
		t.Errorf("runner lines %q", fs.texts(StreamRunner))
	}
}

func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// TestStagingFailsWhileInputsStage: the inputs are staged while the code
// is; a failure of either fails the attempt before user code runs, with
// that failure's message.
func TestStagingFailsWhileInputsStage(t *testing.T) {
	for _, c := range []struct {
		name, boot, want string
	}{
		{"no boot file", "missing.sh", "boot file missing.sh is not in the code dir"},
		{"input fails", "run.sh", "no object and nothing under obs://bkt/data/nothing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			for i := range 50 {
				e.put(fmt.Sprintf("data/f%02d", i), "x")
			}
			j := withIO(e.job("j-fail", c.boot))
			if c.name == "input fails" {
				j.Job.Algorithm.Inputs[0].Remote.OBS.OBSURL = "obs://bkt/data/nothing"
			}
			fs := newFakeServer(t, j, map[string]string{"run.sh": "echo ran"})
			loc, _ := obsclient.ParseLocation(j.Job.Algorithm.Inputs[0].Remote.OBS.OBSURL)
			fs.inputs = newMemInputs(e.store, Channel{Name: "data_url", Remote: loc})
			e.run(context.Background(), e.config(fs))
			ex := fs.exit()
			if ex.Reason != api.FailureStaging || !strings.Contains(ex.Message, c.want) || ex.UserStarted != 0 {
				t.Errorf("exit %+v", ex)
			}
			if slices.Contains(fs.texts(StreamStdout), "ran") {
				t.Errorf("user code ran")
			}
		})
	}
}

// TestStageGivenListing: an input whose listing came with the job is not
// listed again, neither through the server nor over S3, and stages the
// same tree; an input without one is listed as before.
func TestStageGivenListing(t *testing.T) {
	ch := channel(t, "data_url", "obs://bkt/ds/")
	other := channel(t, "other", "obs://bkt/ds2/")
	e := newBulkEnv(t, ch, other)
	for i := range 50 {
		e.put(fmt.Sprintf("ds/c%d/%02d.jpg", i%3, i), strings.Repeat("x", i))
	}
	e.put("ds2/z.csv", "z")
	want := map[string]string{"c0/": "", "c1/": "", "c2/": ""}
	for i := range 50 {
		want[fmt.Sprintf("c%d/%02d.jpg", i%3, i)] = strings.Repeat("x", i)
	}
	l, err := e.in.listInput(context.Background(), ch.Name)
	if err != nil {
		t.Fatal(err)
	}
	listed := e.in.lists
	e.st.given = map[string][]api.RunnerObject{ch.Name: l.Items}
	res, got := e.stage(ch)
	if !mapsEqual(got, want) || res.Files != 50 {
		t.Fatalf("staged %d entries (%s); want %d", len(got), res, len(want))
	}
	if e.in.lists != listed || e.in.s3Calls("List") != 0 {
		t.Errorf("%d server listings, %d S3 listings after the given one; want none", e.in.lists-listed, e.in.s3Calls("List"))
	}
	// The input without a given listing is listed through the server.
	_, got = e.stage(other, ch)
	if got["z.csv"] != "z" || e.in.lists != listed+1 || e.in.s3Calls("List") != 0 {
		t.Errorf("other input: %v, %d server listings, %d S3", got, e.in.lists-listed, e.in.s3Calls("List"))
	}
}

// TestPlaceLinksByDir: the links of many directories, some larger than a
// worker's run, all land, and a file already there is replaced.
func TestPlaceLinksByDir(t *testing.T) {
	work := t.TempDir()
	st := &stager{cacheDir: filepath.Join(work, "cache"), warn: func(string) {}}
	var files []remoteFile
	for i := range 2*placeGroup + 40 {
		d := "big"
		if i%5 == 0 {
			d = fmt.Sprintf("small/%d", i%3)
		}
		f := remoteFile{Bucket: "bkt", Obj: obsclient.Object{Key: fmt.Sprint(i), ETag: fmt.Sprint("e", i), Size: int64(len(fmt.Sprint(i)))},
			Rel: fmt.Sprintf("%s/%d.bin", d, i)}
		p := st.cachePath(f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	big := 0
	for _, f := range files {
		if strings.HasPrefix(f.Rel, "big/") {
			big++
		}
	}
	// big: runs of placeGroup files; small/0, small/1, small/2: one each.
	if n, want := len(byDir(files, placeGroup)), (big+placeGroup-1)/placeGroup+3; n != want || big <= placeGroup {
		t.Errorf("%d runs; want %d", n, want)
	}
	dst := filepath.Join(work, "in")
	if err := os.MkdirAll(filepath.Join(dst, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "big", "1.bin"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	st.withCachePaths(files)
	if err := st.place(files, nil, dst, true); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(f.Rel)))
		if err != nil || string(got) != f.Obj.Key {
			t.Fatalf("%s: %q %v", f.Rel, got, err)
		}
		a, _ := os.Stat(filepath.Join(dst, filepath.FromSlash(f.Rel)))
		b, _ := os.Stat(f.cache)
		if !os.SameFile(a, b) {
			t.Fatalf("%s is not a link of the cache file", f.Rel)
		}
	}
}
