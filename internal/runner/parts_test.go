package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
)

func lines(from, to int64) []api.LogLine {
	var out []api.LogLine
	for s := from; s <= to; s++ {
		out = append(out, api.LogLine{Attempt: 1, Seq: s, Stream: "stdout", Text: fmt.Sprintf("line %04d %s", s, strings.Repeat("x", 40))})
	}
	return out
}

func seqs(ls []api.LogLine) []int64 {
	out := make([]int64, len(ls))
	for i, l := range ls {
		out[i] = l.Seq
	}
	return out
}

func TestSpoolDeliversInOrderOnce(t *testing.T) {
	sp, err := openSpool(t.TempDir(), 1<<20) // 64 KiB segments
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	next := int64(1)
	for round := 0; round < 20; round++ {
		if _, err := sp.append(lines(next, next+49)); err != nil {
			t.Fatal(err)
		}
		next += 50
		b, err := sp.peek(30, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if round%3 == 0 {
			continue // a failed delivery: not acknowledged
		}
		got = append(got, seqs(b.Lines)...)
		sp.ack(b)
	}
	for sp.pending() {
		b, _ := sp.peek(100, 1<<20)
		got = append(got, seqs(b.Lines)...)
		sp.ack(b)
	}
	if len(got) != int(next-1) {
		t.Fatalf("delivered %d lines, want %d", len(got), next-1)
	}
	for i, s := range got {
		if s != int64(i+1) {
			t.Fatalf("delivery %d is seq %d", i, s)
		}
	}
	ents, _ := os.ReadDir(sp.dir)
	if len(ents) > 1 {
		t.Errorf("%d segment files left after everything was delivered", len(ents))
	}
}

func TestSpoolDropsOldestWhenFull(t *testing.T) {
	sp, err := openSpool(t.TempDir(), 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	var dropped int64
	for s := int64(1); s <= 2000; s += 10 {
		n, err := sp.append(lines(s, s+9))
		if err != nil {
			t.Fatal(err)
		}
		dropped += n
	}
	if dropped == 0 {
		t.Fatal("nothing dropped")
	}
	if sp.total > sp.max+sp.segBytes+4<<10 {
		t.Errorf("spool holds %d bytes, bound %d", sp.total, sp.max)
	}
	var got []int64
	for sp.pending() {
		b, _ := sp.peek(500, 1<<20)
		got = append(got, seqs(b.Lines)...)
		sp.ack(b)
	}
	if int64(len(got))+dropped != 2000 {
		t.Errorf("%d delivered + %d dropped != 2000", len(got), dropped)
	}
	if got[len(got)-1] != 2000 || got[0] != dropped+1 || !slices.IsSorted(got) {
		t.Errorf("delivered %d..%d", got[0], got[len(got)-1])
	}
}

func TestSinkSplitsLongLines(t *testing.T) {
	sp, _ := openSpool(t.TempDir(), 0)
	k := newLogSink(1, sp, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	long := strings.Repeat("a", 2*MaxLineBytes+10)
	k.read(StreamStdout, strings.NewReader("first\r\n"+long+"\nbad\xffutf8\nlast without newline"))
	b, _ := sp.peek(100, 10<<20)
	var texts []string
	for _, l := range b.Lines {
		texts = append(texts, l.Text)
	}
	want := []string{"first", long[:MaxLineBytes], long[MaxLineBytes : 2*MaxLineBytes], long[2*MaxLineBytes:], "bad\uFFFDutf8", "last without newline"}
	if !slices.Equal(texts, want) {
		t.Errorf("lines %d, want %d: %.40q", len(texts), len(want), texts)
	}
	if got := k.Tail(); len(got) != 6 || got[5] != "last without newline" {
		t.Errorf("tail %.40q", got)
	}
}

func TestTailKeepsLast(t *testing.T) {
	sp, _ := openSpool(t.TempDir(), 0)
	k := newLogSink(1, sp, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i := range 450 {
		k.add(StreamStderr, []string{fmt.Sprint(i)})
	}
	k.Runner("not user output")
	tail := k.Tail()
	if len(tail) != tailLines || tail[0] != "250" || tail[tailLines-1] != "449" || k.FirstStderr() != "0" {
		t.Errorf("tail %v…%v first %q", tail[0], tail[len(tail)-1], k.FirstStderr())
	}
}

func TestParseMetricLine(t *testing.T) {
	step := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		in   string
		want *userMetric
	}{
		{`{"time": 1700000000123, "step": 5, "values": {"loss": 0.5}}`, &userMetric{Time: 1700000000123, Step: step(5), Values: map[string]float64{"loss": 0.5}}},
		{`{"step": null, "values": {"acc": 1}}`, &userMetric{Values: map[string]float64{"acc": 1}}},
		{`{"values": {"a": NaN, "b": -Infinity, "c": 2, "NaN": 3}}`, &userMetric{Values: map[string]float64{"c": 2, "NaN": 3}}},
		{`{"step": 2.0, "values": {"a": 1}}`, &userMetric{Step: step(2), Values: map[string]float64{"a": 1}}},
		{`{"step": 2.5, "values": {"a": 1}}`, nil},
		{`{"values": {"a": "x"}}`, nil},
		{`{"values": {}}`, nil},
		{`{"values": {"a": NaN}}`, nil},
		{`{"values": {"": 1}}`, nil},
		{`{"time": -1, "values": {"a": 1}}`, nil},
		{`{"values": {"a": 1}} {}`, nil},
		{`[1,2]`, nil},
		{`not json`, nil},
	} {
		got, err := parseMetricLine([]byte(tc.in))
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%s: accepted as %+v", tc.in, got)
		case tc.want != nil && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.want != nil:
			if got.Time != tc.want.Time || (got.Step == nil) != (tc.want.Step == nil) || got.Step != nil && *got.Step != *tc.want.Step ||
				fmt.Sprint(got.Values) != fmt.Sprint(tc.want.Values) {
				t.Errorf("%s: got %+v, want %+v", tc.in, got, *tc.want)
			}
		}
	}
}

func FuzzParseMetricLine(f *testing.F) {
	f.Add([]byte(`{"time": 1, "step": 1, "values": {"loss": 0.5}}`))
	f.Add([]byte(`{"values": {"a": NaN, "s": "NaN\"Infinity"}}`))
	f.Add([]byte(`{"values": {"a": -Infinity}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMetricLine(b)
		if err != nil {
			return
		}
		if len(m.Values) == 0 {
			t.Fatal("accepted a line without values")
		}
		for k, v := range m.Values {
			if k == "" || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("bad value %q=%v", k, v)
			}
		}
	})
}

func TestParseNvidiaSMI(t *testing.T) {
	g, err := parseNvidiaSMI([]byte("30, 1024\n50, [N/A]\n\n"))
	if err != nil || g.Count != 2 || g.Util != 40 || g.Memory != 1024<<20 {
		t.Errorf("got %+v, %v", g, err)
	}
	for _, bad := range []string{"30\n", "x, 1\n", "1, 2, 3\n", "-1, 2\n"} {
		if _, err := parseNvidiaSMI([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseNvidiaSMI(f *testing.F) {
	f.Add([]byte("30, 1024\n"))
	f.Add([]byte("[Not Supported], 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := parseNvidiaSMI(b)
		if err == nil && (g.Util < 0 || g.Memory < 0 || g.Count < 0 || math.IsNaN(g.Util)) {
			t.Fatalf("bad usage %+v", g)
		}
	})
}

func TestParseProcStat(t *testing.T) {
	s := "4242 (my (weird) prog) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 100 1000000 300 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
	p, ok := parseProcStat(s)
	if !ok || p.PID != 4242 || p.PPID != 17 || p.CPU != 310*clockTick || p.RSS != 300*int64(os.Getpagesize()) {
		t.Errorf("got %+v %v", p, ok)
	}
	for _, bad := range []string{"", "x (a) S 1", "12 no parens", "1 (a) S"} {
		if _, ok := parseProcStat(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add("1 (init) S 0 1 1 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 1 1 1")
	f.Fuzz(func(t *testing.T, s string) {
		parseProcStat(s)
	})
}

func TestProcessTree(t *testing.T) {
	procs := []procInfo{{PID: 1}, {PID: 10, PPID: 1}, {PID: 11, PPID: 10}, {PID: 12, PPID: 11}, {PID: 20, PPID: 1}}
	var got []int
	for _, p := range tree(10, procs) {
		got = append(got, p.PID)
	}
	if !slices.Equal(got, []int{10, 11, 12}) {
		t.Errorf("tree = %v", got)
	}
	if tree(99, procs) != nil {
		t.Error("tree of a missing root")
	}
	cpu, rss := treeUsage(os.Getpid())
	if cpu <= 0 || rss <= 0 {
		t.Errorf("own usage cpu %v rss %d", cpu, rss)
	}
}

func TestHangDetector(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type obs struct {
		at     float64
		cpu    time.Duration
		output float64 // when the last line was written
		gpu    bool
		hung   bool
	}
	for name, steps := range map[string][]obs{
		"idle and silent": {{0, 0, 0, false, false}, {5, ms(10), 0, false, false}, {10, ms(20), 0, false, true}},
		"output resets":   {{0, 0, 0, false, false}, {5, 0, 4, false, false}, {10, 0, 4, false, false}, {14, 0, 4, false, true}},
		"busy cpu":        {{0, 0, 0, false, false}, {10, ms(5000), 0, false, false}, {20, ms(10000), 0, false, false}},
		"cpu then idle":   {{0, 0, 0, false, false}, {10, ms(5000), 0, false, false}, {15, ms(5000), 0, false, false}, {20, ms(5050), 0, false, true}},
		"gpu busy":        {{0, 0, 0, false, false}, {10, 0, 0, true, false}, {20, 0, 0, true, false}},
		"window not seen": {{9, 0, 0, false, false}, {12, 0, 0, false, false}},
	} {
		h := &hangDetector{timeout: 10 * time.Second}
		for i, o := range steps {
			if got := h.observe(at(o.at), at(o.output), o.cpu, o.gpu); got != o.hung {
				t.Errorf("%s: step %d: hung=%v, want %v", name, i, got, o.hung)
			}
		}
	}
	if (&hangDetector{}).observe(at(100), at(0), 0, false) {
		t.Error("a zero timeout detects hangs")
	}
}

func TestOutputSyncChangedFilesOnly(t *testing.T) {
	store := obsmem.New()
	ctx := context.Background()
	if err := store.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(rel, data string, mtime time.Time) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mtime, mtime)
	}
	t0 := time.Now().Add(-time.Hour)
	write("a.pth", "a1", t0)
	write("sub/b.pth", "b1", t0)
	os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	loc, _ := obsclient.ParseLocation("obs://bkt/out")
	o := newOutputSync(store, obsclient.Options{}, []Channel{{Name: "o", Dir: dir, Remote: loc}})
	roots, err := openRoots(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer roots.close()
	o.setRoots(roots)
	puts := func() []string {
		var out []string
		for _, c := range store.Calls() {
			if c.Op == "Put" {
				out = append(out, c.Key)
			}
		}
		slices.Sort(out)
		return out
	}
	if sum, err := o.sync(ctx); err != nil || sum.Files != 2 {
		t.Fatalf("first sync %+v %v", sum, err)
	}
	if got := puts(); !slices.Equal(got, []string{"out/a.pth", "out/sub/b.pth"}) {
		t.Errorf("puts %q", got)
	}
	if sum, err := o.sync(ctx); err != nil || sum.Files != 0 {
		t.Errorf("unchanged sync %+v %v", sum, err)
	}
	write("a.pth", "a2", t0.Add(time.Minute)) // same size, new mtime
	write("c.pth", "c", t0)
	os.Remove(filepath.Join(dir, "sub", "b.pth"))
	if sum, err := o.sync(ctx); err != nil || sum.Files != 2 {
		t.Errorf("third sync %+v %v", sum, err)
	}
	if got := puts(); !slices.Equal(got, []string{"out/a.pth", "out/a.pth", "out/c.pth", "out/sub/b.pth"}) {
		t.Errorf("puts %q", got)
	}
	if data, _ := store.Object("bkt", "out/a.pth"); string(data) != "a2" {
		t.Errorf("a.pth = %q", data)
	}
	if _, ok := store.Object("bkt", "out/sub/b.pth"); !ok {
		t.Error("a sync deleted a remote file")
	}
	// A failed sync is retried in full by the next one.
	store.SetFault(func(c obsmem.Call) error {
		if c.Op == "Put" {
			return obsclient.S3Error("AccessDenied", "", c.Bucket, c.Key)
		}
		return nil
	})
	write("d.pth", "d", t0)
	if _, err := o.sync(ctx); err == nil {
		t.Error("sync with a failing Put succeeded")
	}
	store.SetFault(nil)
	if sum, err := o.sync(ctx); err != nil || sum.Files != 1 {
		t.Errorf("retry sync %+v %v", sum, err)
	}
}

func TestCacheName(t *testing.T) {
	o := obsclient.Object{Key: "k", ETag: "e"}
	a, b := cacheName("b", o), cacheName("b", obsclient.Object{Key: "k", ETag: "f"})
	if a == b || len(a) != 64 || cacheName("b2", o) == a {
		t.Errorf("cache names %s %s", a, b)
	}
	noTag := obsclient.Object{Key: "k", Size: 3, LastModified: time.Unix(5, 0)}
	if cacheName("b", noTag) == cacheName("b", obsclient.Object{Key: "k", Size: 4, LastModified: time.Unix(5, 0)}) {
		t.Error("objects without ETag of different sizes share a name")
	}
}

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name, link, data string
	typ              byte
}

func tarBytes(t testing.TB, ents ...tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o755, Size: int64(len(e.data))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(e.data))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func TestExtractTar(t *testing.T) {
	root := filepath.Join(t.TempDir(), "code")
	st, err := extractTar(bytes.NewReader(tarBytes(t,
		tarEntry{name: "./", typ: tar.TypeDir},
		tarEntry{name: "pkg/", typ: tar.TypeDir},
		tarEntry{name: "pkg/mod.py", data: "x = 1\n", typ: tar.TypeReg},
		tarEntry{name: "run.sh", data: "echo\n", typ: tar.TypeReg},
		tarEntry{name: "latest", link: "pkg/mod.py", typ: tar.TypeSymlink},
		tarEntry{name: "pkg/up", link: "../run.sh", typ: tar.TypeSymlink},
		tarEntry{name: "copy.py", link: "pkg/mod.py", typ: tar.TypeLink},
		tarEntry{name: "fifo", typ: tar.TypeFifo},
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 3 || st.Skipped != 1 || st.Bytes != 11 {
		t.Errorf("stats %+v", st)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "pkg", "up")); string(b) != "echo\n" {
		t.Errorf("pkg/up reads %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(root, "run.sh")); fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh lost its exec bit: %v", fi.Mode())
	}
	for name, ents := range map[string][]tarEntry{
		"absolute":           {{name: "/etc/x", data: "x", typ: tar.TypeReg}},
		"dotdot":             {{name: "a/../../x", data: "x", typ: tar.TypeReg}},
		"absolute link":      {{name: "l", link: "/etc", typ: tar.TypeSymlink}},
		"escaping link":      {{name: "a/l", link: "../../etc", typ: tar.TypeSymlink}},
		"write through link": {{name: "d/", typ: tar.TypeDir}, {name: "l", link: "d", typ: tar.TypeSymlink}, {name: "l/x", data: "x", typ: tar.TypeReg}},
		"hard link outside":  {{name: "h", link: "../../etc/passwd", typ: tar.TypeLink}},
		"hard link unknown":  {{name: "h", link: "nothere", typ: tar.TypeLink}},
		"file then dir":      {{name: "a", data: "x", typ: tar.TypeReg}, {name: "a/b", data: "y", typ: tar.TypeReg}},
		"dir then file":      {{name: "a/", typ: tar.TypeDir}, {name: "a", data: "y", typ: tar.TypeReg}},
	} {
		root := filepath.Join(t.TempDir(), "code")
		if _, err := extractTar(bytes.NewReader(tarBytes(t, ents...)), root); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := extractTar(strings.NewReader("not a tar archive at all, just text that is long enough"), filepath.Join(t.TempDir(), "c")); err == nil {
		t.Error("garbage accepted")
	}
}

func FuzzExtractTar(f *testing.F) {
	f.Add(tarBytes(f, tarEntry{name: "a/b.py", data: "x", typ: tar.TypeReg}, tarEntry{name: "l", link: "a", typ: tar.TypeSymlink}))
	f.Add(tarBytes(f, tarEntry{name: "l", link: ".", typ: tar.TypeSymlink}, tarEntry{name: "l/x", data: "x", typ: tar.TypeReg}))
	f.Add(tarBytes(f, tarEntry{name: "h", link: "a", typ: tar.TypeLink}))
	tmp := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		base, err := os.MkdirTemp(tmp, "x")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		root := filepath.Join(base, "root")
		extractTarLimit(bytes.NewReader(data), root, 1<<20)
		ents, _ := os.ReadDir(base)
		if len(ents) != 1 || ents[0].Name() != "root" {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("wrote outside root: %v", names)
		}
	})
}
