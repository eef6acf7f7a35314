package disk_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/blob"
	"github.com/atelier-dev/atelier/internal/blob/blobtest"
	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/errs"
)

func open(t testing.TB, dir string, opts ...disk.Option) *disk.Store {
	t.Helper()
	s, err := disk.Open(context.Background(), dir, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return open(t, t.TempDir()) })
}

func TestConformanceWithoutGroupCommit(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return open(t, t.TempDir(), disk.WithGroupCommit(false)) })
}

func put(t *testing.T, s *disk.Store, data []byte) string {
	t.Helper()
	id, _, err := s.Put(t.Context(), bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return id
}

func read(t *testing.T, s *disk.Store, id string) []byte {
	t.Helper()
	r, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatalf("Open(%s): %v", id, err)
	}
	defer r.Close()
	b := make([]byte, r.Size())
	if n, err := r.ReadAt(b, 0); n != len(b) {
		t.Fatalf("ReadAt(%s) = %d, %v", id, n, err)
	}
	return b
}

func walk(t *testing.T, s *disk.Store) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	if err := s.Walk(t.Context(), func(id string, size int64, _ time.Time) error {
		m[id] = size
		return nil
	}); err != nil {
		t.Fatalf("Walk: %v", err)
	}
	return m
}

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	for _, sub := range []string{"tmp", "data"} {
		fi, err := os.Stat(filepath.Join(dir, sub))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v; want a 0700 directory", sub, fi, err)
		}
	}
	id := put(t, s, []byte("hello"))
	if len(id) != 36 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("id %q is not 36 lowercase hex digits", id)
	}
	fi, err := os.Stat(filepath.Join(dir, "data", id[:2], id[2:4], id))
	if err != nil {
		t.Fatalf("blob not at data/xx/yy/id: %v", err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != 5 {
		t.Fatalf("blob file: mode %v size %d; want 0600, 5", fi.Mode(), fi.Size())
	}
	for _, d := range []string{filepath.Join(dir, "data", id[:2]), filepath.Join(dir, "data", id[:2], id[2:4])} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v; want 0700", d, fi, err)
		}
	}
	if n, err := s.Pending(t.Context()); n != 0 || err != nil {
		t.Fatalf("Pending = %d, %v", n, err)
	}
}

func TestShardRotation(t *testing.T) {
	s := open(t, t.TempDir())
	var mu sync.Mutex
	dirs := map[uint16]int{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 700 / 16 {
				id, _, err := s.Put(t.Context(), bytes.NewReader(nil))
				if err != nil {
					t.Error(err)
					return
				}
				shard, err := strconv.ParseUint(id[:4], 16, 16)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				dirs[uint16(shard)]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// 688 Puts in runs of 256 fill consecutive leaf directories (modulo
	// 65,536): 3 or 4 of them, all but the first and last with 256 blobs.
	first := uint16(0)
	for d := range dirs {
		if dirs[d-1] == 0 {
			first = d
		}
	}
	total := 0
	for i := range uint16(len(dirs)) {
		d := first + i
		n := dirs[d]
		total += n
		if n == 0 || (i > 0 && i < uint16(len(dirs))-1 && n != 256) {
			t.Fatalf("Puts per directory, from %04x: %v", first, dirs)
		}
	}
	if len(dirs) < 3 || len(dirs) > 4 || total != 688 {
		t.Fatalf("688 Puts went to %d directories: %v", len(dirs), dirs)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	want := map[string][]byte{}
	for i := range 50 {
		data := bytes.Repeat([]byte{byte(i)}, i*1000)
		want[put(t, s, data)] = data
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s2 := open(t, dir)
	if s2.RemovedTemp() != 0 {
		t.Errorf("RemovedTemp = %d after a clean Close", s2.RemovedTemp())
	}
	got := walk(t, s2)
	if len(got) != len(want) {
		t.Fatalf("after re-Open Walk sees %d blobs, want %d", len(got), len(want))
	}
	for id, data := range want {
		if !bytes.Equal(read(t, s2, id), data) {
			t.Fatalf("blob %s changed across re-Open", id)
		}
	}
	// The new store writes into the same tree without trouble.
	id := put(t, s2, []byte("after"))
	if string(read(t, s2, id)) != "after" {
		t.Fatal("Put after re-Open")
	}
}

func TestOpenRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	keep := put(t, s, []byte("keep"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	for _, name := range []string{"0123456789abcdef0123456789abcdef0123", "partial", "x.tmp"} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte("half a blob"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(tmp, "d", "e"), 0o700); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, dir)
	if s2.RemovedTemp() != 4 {
		t.Errorf("RemovedTemp = %d, want 4", s2.RemovedTemp())
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Fatalf("tmp after Open: %v, %v; want empty", ents, err)
	}
	if got := walk(t, s2); len(got) != 1 || got[keep] != 4 {
		t.Fatalf("Walk = %v, want only %s", got, keep)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := disk.Open(t.Context(), ""); !errs.Is(err, errs.Invalid) {
		t.Errorf("Open(\"\") = %v, want Invalid", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(file, "sub")} {
		_, err := disk.Open(t.Context(), dir)
		if !errs.Is(err, errs.IO) || !strings.Contains(errs.UserMessage(err), file) || errs.HintOf(err) == "" {
			t.Errorf("Open(%s) = %v (hint %q); want IO naming the path, with a hint", dir, err, errs.HintOf(err))
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := disk.Open(ctx, t.TempDir()); !errors.Is(err, context.Canceled) {
		t.Errorf("Open with a cancelled context = %v", err)
	}
	// Nobody, root included, can make a directory in /proc.
	if _, err := disk.Open(t.Context(), "/proc/blobs"); !errs.Is(err, errs.IO) || !strings.Contains(errs.UserMessage(err), "/proc/blobs") {
		t.Errorf("Open under a directory nobody may write = %v; want IO naming the path", err)
	}
}

func TestLocked(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the directory lock is flock(2), tested on Linux")
	}
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := disk.Open(t.Context(), dir); !errs.Is(err, errs.Conflict) {
		t.Fatalf("second Open = %v, want Conflict", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, dir)
}

func TestClosed(t *testing.T) {
	s := open(t, t.TempDir())
	id := put(t, s, []byte("x"))
	r, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put(t.Context(), bytes.NewReader(nil)); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Put after Close = %v, want Unavailable", err)
	}
	if _, err := s.Open(t.Context(), id); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Open after Close = %v, want Unavailable", err)
	}
	if err := s.Delete(t.Context(), id); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Delete after Close = %v, want Unavailable", err)
	}
	if err := s.Walk(t.Context(), func(string, int64, time.Time) error { return nil }); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Walk after Close = %v, want Unavailable", err)
	}
	p := make([]byte, 1)
	if n, err := r.ReadAt(p, 0); n != 1 || p[0] != 'x' {
		t.Errorf("Reader opened before Close: ReadAt = %d, %v", n, err)
	}
}

// TestInvalidIDsTouchNothing puts files where a path-traversing id would
// land and checks Delete leaves them alone.
func TestInvalidIDsTouchNothing(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "store")
	s := open(t, dir)
	id := put(t, s, []byte("blob"))
	victims := []string{
		filepath.Join(root, "x"), filepath.Join(dir, "x"), filepath.Join(dir, "data", "x"),
		filepath.Join(dir, "tmp", "x"), filepath.Join(dir, "data", id[:2], "x"),
	}
	for _, v := range victims {
		if err := os.WriteFile(v, []byte("victim"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{
		"x", "../x", "../../x", "../../../x", "tmp/x", "data/x", id[:2] + "/x", "../tmp/x",
		"../" + id, id[:2] + "/" + id[2:4] + "/" + id, "data/" + id[:2] + "/" + id[2:4] + "/" + id,
		strings.ToUpper(id), id[:35], id + "0", filepath.Join(dir, "data", id[:2], id[2:4], id),
	} {
		if err := s.Delete(t.Context(), bad); !errs.Is(err, errs.Invalid) {
			t.Errorf("Delete(%q) = %v, want Invalid", bad, err)
		}
		if _, err := s.Open(t.Context(), bad); !errs.Is(err, errs.Invalid) {
			t.Errorf("Open(%q) = %v, want Invalid", bad, err)
		}
	}
	for _, v := range victims {
		if b, err := os.ReadFile(v); err != nil || string(b) != "victim" {
			t.Errorf("%s: %q, %v; want it untouched", v, b, err)
		}
	}
	if string(read(t, s, id)) != "blob" {
		t.Error("the blob was touched")
	}
}

func TestWalkSkipsStrays(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	id := put(t, s, []byte("real"))
	other := "ffff" + id[4:]
	if other == id {
		other = "eeee" + id[4:]
	}
	data := filepath.Join(dir, "data")
	for _, p := range []string{
		filepath.Join(data, "README"),
		filepath.Join(data, "zz", "00", other),
		filepath.Join(data, id[:2], "README"),
		filepath.Join(data, id[:2], id[2:4], "not-a-blob"),
		filepath.Join(data, id[:2], id[2:4], other), // an id in the wrong directory
		filepath.Join(data, id[:2], id[2:4], strings.ToUpper(id)),
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("stray"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(data, id[:2], id[2:4], "0000"+id[4:]), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := walk(t, s); len(got) != 1 || got[id] != 4 {
		t.Fatalf("Walk = %v, want only %s", got, id)
	}
}

// TestDirectoryRemoved checks that a Put recreates a leaf directory removed
// behind the store's back.
func TestDirectoryRemoved(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	id := put(t, s, []byte("one"))
	if err := os.RemoveAll(filepath.Join(dir, "data", id[:2])); err != nil {
		t.Fatal(err)
	}
	id2 := put(t, s, []byte("two"))
	if id2[:4] != id[:4] {
		t.Fatalf("second Put went to %s, not the removed %s", id2[:4], id[:4])
	}
	if string(read(t, s, id2)) != "two" {
		t.Fatal("Put after the directory was removed")
	}
	if _, err := s.Open(t.Context(), id); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Open of a blob removed with its directory = %v, want NotFound", err)
	}
}

// crashBlob is a blob whose first 32 bytes are the sha256 of the rest.
func crashBlob(rng *rand.Rand) []byte {
	size := rng.IntN(64 << 10)
	if rng.IntN(16) == 0 {
		size = 1<<20 + rng.IntN(2<<20)
	}
	b := make([]byte, 32+size)
	for i := 32; i < len(b); i++ {
		b[i] = byte(rng.Uint32())
	}
	sum := sha256.Sum256(b[32:])
	copy(b, sum[:])
	return b
}

func checkCrashBlob(b []byte) bool {
	if len(b) < 32 {
		return false
	}
	sum := sha256.Sum256(b[32:])
	return bytes.Equal(b[:32], sum[:])
}

const crashEnv = "ATELIER_BLOB_DISK_CRASH_DIR"

// TestHelperProcess is the child of TestCrash: it Puts self-checking blobs
// from 32 goroutines, printing "ACK <id>" for each Put that returned, until
// it is killed.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("the child process of TestCrash")
	}
	s, err := disk.Open(context.Background(), dir)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			for {
				id, _, err := s.Put(context.Background(), bytes.NewReader(crashBlob(rng)))
				mu.Lock()
				if err != nil {
					fmt.Fprintln(out, "ERR", err)
				} else {
					fmt.Fprintln(out, "ACK", id)
				}
				_ = out.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestCrash kills a process in the middle of concurrent Puts, several times
// over one directory, and checks after each that re-Open leaves tmp/ empty,
// every blob in data/ complete and every acknowledged blob present.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills child processes")
	}
	dir := t.TempDir()
	acked := map[string]bool{}
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill once the child has acknowledged a few hundred Puts (so many
		// are in flight), or after a while regardless.
		killed := make(chan struct{})
		var once sync.Once
		kill := func() { once.Do(func() { _ = cmd.Process.Kill(); close(killed) }) }
		timer := time.AfterFunc(10*time.Second, kill)
		sc := bufio.NewScanner(stdout)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "ACK "):
				acked[strings.TrimPrefix(line, "ACK ")] = true
				if n++; n == 100+round*50 {
					kill()
				}
			case strings.HasPrefix(line, "ERR "):
				t.Errorf("child: %s", line)
			}
		}
		timer.Stop()
		kill()
		<-killed
		_ = cmd.Wait()
		if n == 0 {
			t.Fatalf("round %d: the child acknowledged no Put", round)
		}

		s := open(t, dir)
		t.Logf("round %d: %d Puts acknowledged, %d temp files removed on re-Open", round, n, s.RemovedTemp())
		if p, err := s.Pending(t.Context()); p != 0 || err != nil {
			t.Fatalf("round %d: Pending after re-Open = %d, %v", round, p, err)
		}
		if ents, err := os.ReadDir(filepath.Join(dir, "tmp")); err != nil || len(ents) != 0 {
			t.Fatalf("round %d: tmp after re-Open: %d entries, %v", round, len(ents), err)
		}
		seen := walk(t, s)
		for id := range seen {
			if b := read(t, s, id); !checkCrashBlob(b) {
				t.Fatalf("round %d: blob %s (%d bytes) is incomplete or corrupt", round, id, len(b))
			}
		}
		for id := range acked {
			if _, ok := seen[id]; !ok {
				t.Fatalf("round %d: acknowledged blob %s is missing", round, id)
			}
		}
		// Nothing outside lock, tmp/ and data/ in the directory.
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			top := strings.Split(rel, string(filepath.Separator))[0]
			if top != "." && top != "lock" && top != "tmp" && top != "data" {
				t.Errorf("round %d: unexpected %s", round, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
