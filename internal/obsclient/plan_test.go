package obsclient_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient"
)

var (
	t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func loc(t *testing.T, s string) obsclient.Location {
	t.Helper()
	l, err := obsclient.ParseLocation(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ents makes entries of 10 bytes from "rel" or "rel=size".
func ents(specs ...string) []obsclient.Entry {
	var out []obsclient.Entry
	for _, s := range specs {
		rel, size := s, int64(10)
		if r, n, ok := strings.Cut(s, "="); ok {
			rel = r
			fmt.Sscan(n, &size)
		}
		out = append(out, obsclient.Entry{Rel: rel, Path: rel, Size: size, ModTime: t0})
	}
	return out
}

// transfers renders a plan's transfers as "op src -> dst".
func transfers(p obsclient.Plan) []string {
	var out []string
	for _, t := range p.Transfers {
		out = append(out, fmt.Sprintf("%s %s -> %s", t.Op, t.Src, t.Dst))
	}
	return out
}

func TestPlanCopy(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		dir      bool
		entries  []obsclient.Entry
		pruned   []string
		dst      string
		dstDir   bool
		opts     obsclient.CopyOptions
		want     []string
		skipped  int
		warnings []string
		wantErr  string
	}{
		{name: "file to bucket root", src: "data/x.txt", entries: ents("x.txt"), dst: "obs://bkt",
			want: []string{"upload data/x.txt -> obs://bkt/x.txt"}},
		{name: "file to prefix with slash", src: "data/x.txt", entries: ents("x.txt"), dst: "obs://bkt/in/",
			want: []string{"upload data/x.txt -> obs://bkt/in/x.txt"}},
		{name: "file to key", src: "data/x.txt", entries: ents("x.txt"), dst: "obs://bkt/in/y.txt",
			want: []string{"upload data/x.txt -> obs://bkt/in/y.txt"}},
		{name: "file to existing prefix without slash", src: "data/x.txt", entries: ents("x.txt"), dst: "obs://bkt/in", dstDir: true,
			want: []string{"upload data/x.txt -> obs://bkt/in/x.txt"}},
		{name: "dir without -r", src: "data", dir: true, dst: "obs://bkt/ds/",
			wantErr: "data is a directory; use -r to copy its contents"},
		{name: "dir without -r, move", src: "data", dir: true, dst: "obs://bkt/ds/", opts: obsclient.CopyOptions{Move: true},
			wantErr: "data is a directory; use -r to move its contents"},
		{name: "contents of dir under prefix", src: "data", dir: true, entries: ents("cat/1.jpg", "dog/2.jpg"), dst: "obs://bkt/ds/",
			opts: obsclient.CopyOptions{Recursive: true},
			want: []string{"upload data/cat/1.jpg -> obs://bkt/ds/cat/1.jpg", "upload data/dog/2.jpg -> obs://bkt/ds/dog/2.jpg"}},
		{name: "contents of dir, prefix without slash", src: "data/", dir: true, entries: ents("cat/1.jpg"), dst: "obs://bkt/ds",
			opts: obsclient.CopyOptions{Recursive: true},
			want: []string{"upload data/cat/1.jpg -> obs://bkt/ds/cat/1.jpg"}},
		{name: "contents of dir to bucket root", src: "data", dir: true, entries: ents("cat/1.jpg"), dst: "obs://bkt",
			opts: obsclient.CopyOptions{Recursive: true},
			want: []string{"upload data/cat/1.jpg -> obs://bkt/cat/1.jpg"}},
		{name: "skip .git and __pycache__", src: "code", dir: true,
			entries: ents("train.py", ".git/HEAD", "pkg/__pycache__/m.pyc", "pkg/m.py", ".gitignore"), dst: "obs://bkt/code/",
			opts: obsclient.CopyOptions{Recursive: true},
			want: []string{"upload code/train.py -> obs://bkt/code/train.py", "upload code/pkg/m.py -> obs://bkt/code/pkg/m.py",
				"upload code/.gitignore -> obs://bkt/code/.gitignore"},
			skipped: 2, warnings: []string{"not copying .git/, __pycache__/ (use --all to include them)"}},
		{name: "--all keeps .git", src: "code", dir: true, entries: ents(".git/HEAD"), dst: "obs://bkt/code/",
			opts: obsclient.CopyOptions{Recursive: true, All: true},
			want: []string{"upload code/.git/HEAD -> obs://bkt/code/.git/HEAD"}},
		{name: "pruned by the walk", src: "code", dir: true, entries: ents("a.py"), pruned: []string{"__pycache__"}, dst: "obs://bkt/c/",
			opts: obsclient.CopyOptions{Recursive: true},
			want: []string{"upload code/a.py -> obs://bkt/c/a.py"}, warnings: []string{"not copying __pycache__/"}},
		{name: "object to local dir", src: "obs://bkt/m/model.pt", entries: ents("model.pt"), dst: "out", dstDir: true,
			want: []string{"download obs://bkt/m/model.pt -> out/model.pt"}},
		{name: "object to local path with slash", src: "obs://bkt/m/model.pt", entries: ents("model.pt"), dst: "new/",
			want: []string{"download obs://bkt/m/model.pt -> new/model.pt"}},
		{name: "object to local file", src: "obs://bkt/m/model.pt", entries: ents("model.pt"), dst: "best.pt",
			want: []string{"download obs://bkt/m/model.pt -> best.pt"}},
		{name: "prefix to local dir", src: "obs://bkt/ds/", dir: true, entries: ents("cat/1.jpg", "dog/2.jpg"), dst: "out",
			opts: obsclient.CopyOptions{Recursive: true},
			want: []string{"download obs://bkt/ds/cat/1.jpg -> out/cat/1.jpg", "download obs://bkt/ds/dog/2.jpg -> out/dog/2.jpg"}},
		{name: "unsafe keys and markers are not downloaded", src: "obs://bkt/ds/", dir: true,
			entries: ents("ok.txt", "../evil", "a//b", "./x", "empty/=0", "full/=3"), dst: "out",
			opts: obsclient.CopyOptions{Recursive: true},
			want: []string{"download obs://bkt/ds/ok.txt -> out/ok.txt"},
			warnings: []string{`obs://bkt/ds/../evil: the key contains a ".." path element`, "obs://bkt/ds/a//b: the key contains an empty path element",
				`obs://bkt/ds/./x: the key contains a "." path element`, "obs://bkt/ds/full/: a key ending in / cannot be a local file"}},
		{name: "object that is also a directory", src: "obs://bkt/ds/", dir: true, entries: ents("a", "a/b"), dst: "out",
			opts: obsclient.CopyOptions{Recursive: true},
			want: []string{"download obs://bkt/ds/a -> out/a"}, warnings: []string{"skipping obs://bkt/ds/a/b: obs://bkt/ds/a is also an object"}},
		{name: "prefix to prefix", src: "obs://bkt/ds", dir: true, entries: ents("cat/1.jpg"), dst: "obs://other/copy/",
			opts: obsclient.CopyOptions{Recursive: true},
			want: []string{"copy obs://bkt/ds/cat/1.jpg -> obs://other/copy/cat/1.jpg"}},
		{name: "object onto itself", src: "obs://bkt/a.txt", entries: ents("a.txt"), dst: "obs://bkt/",
			wantErr: "source and destination are the same object"},
		{name: "local to local", src: "a.txt", entries: ents("a.txt"), dst: "b.txt",
			wantErr: "are both local paths"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := obsclient.Source{Loc: loc(t, tt.src), Dir: tt.dir, Entries: tt.entries, Pruned: tt.pruned}
			p, err := obsclient.PlanCopy(src, obsclient.Dest{Loc: loc(t, tt.dst), Dir: tt.dstDir}, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(errs.UserMessage(err), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := transfers(p); !slices.Equal(got, tt.want) {
				t.Errorf("transfers\n got %q\nwant %q", got, tt.want)
			}
			if p.Skipped != tt.skipped {
				t.Errorf("skipped %d, want %d", p.Skipped, tt.skipped)
			}
			checkWarnings(t, p.Warnings, tt.warnings)
		})
	}
}

func checkWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("warnings %q, want %d like %q", got, len(want), want)
		return
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %q does not contain %q", got[i], want[i])
		}
	}
}

// fakeETags answers ETags from a table: path → part size → ETag.
type fakeETags map[string]map[int64]string

func (f fakeETags) etags(path string, sizes []int64) ([]string, error) {
	m, ok := f[path]
	if !ok {
		return nil, errors.New("unexpected hash of " + path)
	}
	out := make([]string, len(sizes))
	for i, s := range sizes {
		out[i] = m[s]
	}
	return out, nil
}

const (
	md5A = "0cc175b9c0f1b6a831c399e269772661"
	md5B = "92eb5ffee6ae2fec3ad71c777531578f"
)

func TestPlanSync(t *testing.T) {
	const mb = 1 << 20
	obj := func(rel string, size int64, etag string, mod time.Time) obsclient.Entry {
		return obsclient.Entry{Rel: rel, Path: "ds/" + rel, Size: size, ETag: etag, ModTime: mod}
	}
	file := func(rel string, size int64, mod time.Time) obsclient.Entry {
		return obsclient.Entry{Rel: rel, Path: "data/" + rel, Size: size, ModTime: mod}
	}
	hashes := fakeETags{
		"data/same.bin":  {0: md5A},
		"data/diff.bin":  {0: md5B},
		"data/big.bin":   {16 * mb: md5A + "-3", 32 * mb: md5B + "-2"},
		"data/other.bin": {16 * mb: md5B + "-3"},
	}
	tests := []struct {
		name      string
		src, dst  string
		srcE      []obsclient.Entry
		dstE      []obsclient.Entry
		opts      obsclient.SyncOptions
		want      []string
		deletes   []string
		unchanged int
		wantErr   string
	}{
		{name: "missing at destination", src: "data", dst: "obs://bkt/ds/",
			srcE: []obsclient.Entry{file("new.bin", 5, t0)},
			want: []string{"upload data/new.bin -> obs://bkt/ds/new.bin"}},
		{name: "size differs", src: "data", dst: "obs://bkt/ds",
			srcE: []obsclient.Entry{file("same.bin", 5, t0)}, dstE: []obsclient.Entry{obj("same.bin", 6, md5A, t1)},
			want: []string{"upload data/same.bin -> obs://bkt/ds/same.bin"}},
		{name: "single-part MD5 equal", src: "data", dst: "obs://bkt/ds/",
			srcE: []obsclient.Entry{file("same.bin", 5, t1)}, dstE: []obsclient.Entry{obj("same.bin", 5, md5A, t0)},
			unchanged: 1},
		{name: "single-part MD5 differs although newer", src: "data", dst: "obs://bkt/ds/",
			srcE: []obsclient.Entry{file("diff.bin", 5, t0)}, dstE: []obsclient.Entry{obj("diff.bin", 5, md5A, t1)},
			want: []string{"upload data/diff.bin -> obs://bkt/ds/diff.bin"}},
		{name: "multipart ETag equal at the configured part size", src: "data", dst: "obs://bkt/ds/",
			opts: obsclient.SyncOptions{PartSize: 16 * mb},
			srcE: []obsclient.Entry{file("big.bin", 40*mb, t1)}, dstE: []obsclient.Entry{obj("big.bin", 40*mb, md5A+"-3", t0)},
			unchanged: 1},
		{name: "multipart ETag equal at another usual part size", src: "data", dst: "obs://bkt/ds/",
			opts: obsclient.SyncOptions{PartSize: 16 * mb},
			srcE: []obsclient.Entry{file("big.bin", 40*mb, t1)}, dstE: []obsclient.Entry{obj("big.bin", 40*mb, md5B+"-2", t0)},
			unchanged: 1},
		{name: "multipart ETag differs", src: "data", dst: "obs://bkt/ds/",
			opts: obsclient.SyncOptions{PartSize: 16 * mb},
			srcE: []obsclient.Entry{file("other.bin", 40*mb, t0)}, dstE: []obsclient.Entry{obj("other.bin", 40*mb, md5A+"-3", t1)},
			want: []string{"upload data/other.bin -> obs://bkt/ds/other.bin"}},
		{name: "multipart ETag no usual part size explains: newer object is equal", src: "data", dst: "obs://bkt/ds/",
			srcE: []obsclient.Entry{file("odd.bin", 40*mb, t0)}, dstE: []obsclient.Entry{obj("odd.bin", 40*mb, md5A+"-70", t1)},
			unchanged: 1},
		{name: "multipart ETag no usual part size explains: older object is copied", src: "data", dst: "obs://bkt/ds/",
			srcE: []obsclient.Entry{file("odd.bin", 40*mb, t1)}, dstE: []obsclient.Entry{obj("odd.bin", 40*mb, md5A+"-70", t0)},
			want: []string{"upload data/odd.bin -> obs://bkt/ds/odd.bin"}},
		{name: "download: local file equal", src: "obs://bkt/ds/", dst: "data",
			srcE: []obsclient.Entry{obj("same.bin", 5, md5A, t1)}, dstE: []obsclient.Entry{file("same.bin", 5, t0)},
			unchanged: 1},
		{name: "download: local file differs", src: "obs://bkt/ds/", dst: "data",
			srcE: []obsclient.Entry{obj("diff.bin", 5, md5A, t0)}, dstE: []obsclient.Entry{file("diff.bin", 5, t1)},
			want: []string{"download obs://bkt/ds/diff.bin -> data/diff.bin"}},
		{name: "download: unknown ETag, local file as new", src: "obs://bkt/ds/", dst: "data",
			srcE: []obsclient.Entry{obj("x.bin", 5, "", t0)}, dstE: []obsclient.Entry{file("x.bin", 5, t0)},
			unchanged: 1},
		{name: "server copy: same ETag", src: "obs://bkt/ds/", dst: "obs://bkt/bak/",
			srcE: []obsclient.Entry{obj("a", 5, md5A, t1)}, dstE: []obsclient.Entry{obj("a", 5, md5A, t0)}, unchanged: 1},
		{name: "server copy: different MD5s", src: "obs://bkt/ds/", dst: "obs://bkt/bak/",
			srcE: []obsclient.Entry{obj("a", 5, md5A, t0)}, dstE: []obsclient.Entry{obj("a", 5, md5B, t1)},
			want: []string{"copy obs://bkt/ds/a -> obs://bkt/bak/a"}},
		{name: "server copy: multipart vs single, newer copy", src: "obs://bkt/ds/", dst: "obs://bkt/bak/",
			srcE: []obsclient.Entry{obj("a", 5, md5A+"-2", t0)}, dstE: []obsclient.Entry{obj("a", 5, md5B, t1)}, unchanged: 1},
		{name: "delete extras, keep protected", src: "data", dst: "obs://bkt/ds/", opts: obsclient.SyncOptions{Delete: true},
			srcE:      []obsclient.Entry{file("same.bin", 5, t1)},
			dstE:      []obsclient.Entry{obj("same.bin", 5, md5A, t0), obj("old.bin", 1, md5B, t0), obj(".git/HEAD", 1, md5B, t0)},
			unchanged: 1, deletes: []string{"obs://bkt/ds/old.bin"}},
		{name: "delete with --all removes protected", src: "data", dst: "obs://bkt/ds/", opts: obsclient.SyncOptions{Delete: true, All: true},
			dstE:    []obsclient.Entry{obj(".git/HEAD", 1, md5B, t0)},
			deletes: []string{"obs://bkt/ds/.git/HEAD"}},
		{name: "no delete without --delete", src: "data", dst: "obs://bkt/ds/",
			dstE: []obsclient.Entry{obj("old.bin", 1, md5B, t0)}},
		{name: "delete local extras", src: "obs://bkt/ds/", dst: "out", opts: obsclient.SyncOptions{Delete: true},
			dstE: []obsclient.Entry{file("stale.txt", 1, t0)}, deletes: []string{"out/stale.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := obsclient.Source{Loc: loc(t, tt.src), Dir: true, Entries: tt.srcE}
			opts := tt.opts
			opts.ETags = hashes.etags
			p, err := obsclient.PlanSync(src, obsclient.Dest{Loc: loc(t, tt.dst)}, tt.dstE, opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(errs.UserMessage(err), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := transfers(p); !slices.Equal(got, tt.want) {
				t.Errorf("transfers\n got %q\nwant %q", got, tt.want)
			}
			var dels []string
			for _, d := range p.Deletes {
				dels = append(dels, d.String())
			}
			if !slices.Equal(dels, tt.deletes) {
				t.Errorf("deletes %q, want %q", dels, tt.deletes)
			}
			if p.Unchanged != tt.unchanged {
				t.Errorf("unchanged %d, want %d", p.Unchanged, tt.unchanged)
			}
		})
	}
}

func TestPlanSyncSingleFile(t *testing.T) {
	src := obsclient.Source{Loc: loc(t, "a.txt"), Entries: ents("a.txt")}
	_, err := obsclient.PlanSync(src, obsclient.Dest{Loc: loc(t, "obs://bkt/")}, nil, obsclient.SyncOptions{})
	if err == nil || !strings.Contains(errs.UserMessage(err), "sync works on directories") {
		t.Fatalf("error %v", err)
	}
}

func TestSkippedDir(t *testing.T) {
	for rel, want := range map[string]string{
		".git/config": ".git", "a/__pycache__/x.pyc": "__pycache__", ".git": "", "a/.gitignore": "",
		"a/b.py": "", "x.git/y": "", "__pycache__": "",
	} {
		if got := obsclient.SkippedDir(rel); got != want {
			t.Errorf("SkippedDir(%q) = %q, want %q", rel, got, want)
		}
	}
}
