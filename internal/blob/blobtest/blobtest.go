package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/blob"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Stager is implemented by stores that stage a Put's bytes before the blob
// exists (blob/disk stages them in tmp/). Pending is the number of staged
// writes; the suite checks it is zero after failed Puts.
type Stager interface {
	Pending(ctx context.Context) (int, error)
}

// Run runs the conformance suite. open must return a fresh, empty store for
// each call and arrange, with t.Cleanup, for its removal. Subtests run in
// parallel.
func Run(t *testing.T, open func(t *testing.T) blob.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, blob.Store)
	}{
		{"PutOpenRead", testPutOpenRead},
		{"ReadAtRanges", testReadAtRanges},
		{"Empty", testEmpty},
		{"Large", testLarge},
		{"ChunkedReader", testChunkedReader},
		{"ConcurrentPuts", testConcurrentPuts},
		{"ConcurrentReadAt", testConcurrentReadAt},
		{"Delete", testDelete},
		{"OpenMissing", testOpenMissing},
		{"InvalidIDs", testInvalidIDs},
		{"Walk", testWalk},
		{"WalkStops", testWalkStops},
		{"FailingReader", testFailingReader},
		{"CancelledBefore", testCancelledBefore},
		{"CancelledDuring", testCancelledDuring},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// randBytes is n bytes from a generator seeded with seed.
func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n - n%8; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// put stores data and checks the answer.
func put(t *testing.T, s blob.Store, data []byte) string {
	t.Helper()
	id, n, err := s.Put(t.Context(), bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%d bytes): %v", len(data), err)
	}
	if n != int64(len(data)) {
		t.Fatalf("Put(%d bytes) size = %d", len(data), n)
	}
	checkIDForm(t, id)
	return id
}

// checkIDForm checks that id is non-empty and URL-safe.
func checkIDForm(t *testing.T, id string) {
	t.Helper()
	if id == "" {
		t.Fatal("Put returned an empty id")
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			t.Fatalf("id %q has %q, which is not URL-safe", id, c)
		}
	}
}

// readAll reads the whole blob through ReadAt and checks Size.
func readAll(t *testing.T, s blob.Store, id string) []byte {
	t.Helper()
	r, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatalf("Open(%s): %v", id, err)
	}
	defer r.Close()
	got := make([]byte, r.Size())
	const chunk = 1 << 20
	for off := 0; off < len(got); off += chunk {
		end := min(off+chunk, len(got))
		n, err := r.ReadAt(got[off:end], int64(off))
		if n != end-off || (err != nil && err != io.EOF) || (err == io.EOF && end != len(got)) {
			t.Fatalf("ReadAt(%d bytes at %d) of a %d-byte blob = %d, %v", end-off, off, len(got), n, err)
		}
	}
	return got
}

func checkContent(t *testing.T, s blob.Store, id string, want []byte) {
	t.Helper()
	got := readAll(t, s, id)
	if !bytes.Equal(got, want) {
		t.Fatalf("blob %s: read %d bytes (sha256 %x), want %d bytes (sha256 %x)", id, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

func testPutOpenRead(t *testing.T, s blob.Store) {
	for i, n := range []int{1, 100, 4095, 4096, 4097, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3<<20 + 17} {
		data := randBytes(uint64(i), n)
		id := put(t, s, data)
		checkContent(t, s, id, data)
	}
}

func testReadAtRanges(t *testing.T, s blob.Store) {
	const size = 10000
	data := randBytes(7, size)
	id := put(t, s, data)
	r, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != size {
		t.Fatalf("Size = %d, want %d", r.Size(), size)
	}
	for _, tc := range []struct {
		off  int64
		n    int
		want int // bytes read
		eof  bool
	}{
		{0, size, size, false},
		{0, 1, 1, false},
		{1234, 4321, 4321, false},
		{size - 1, 1, 1, false},
		{size - 100, 100, 100, false},
		{size - 100, 101, 100, true},
		{size - 100, 5000, 100, true},
		{0, size + 1, size, true},
		{size, 1, 0, true},
		{size, 100, 0, true},
		{size + 1, 10, 0, true},
		{1 << 40, 10, 0, true},
	} {
		p := make([]byte, tc.n)
		n, err := r.ReadAt(p, tc.off)
		if n != tc.want {
			t.Errorf("ReadAt(%d bytes at %d) read %d, want %d", tc.n, tc.off, n, tc.want)
		}
		if tc.eof && err != io.EOF {
			t.Errorf("ReadAt(%d bytes at %d) error = %v, want io.EOF", tc.n, tc.off, err)
		}
		if !tc.eof && err != nil && err != io.EOF {
			t.Errorf("ReadAt(%d bytes at %d) error = %v", tc.n, tc.off, err)
		}
		if n > 0 && !bytes.Equal(p[:n], data[tc.off:tc.off+int64(n)]) {
			t.Errorf("ReadAt(%d bytes at %d): wrong bytes", tc.n, tc.off)
		}
	}
	if n, err := r.ReadAt(make([]byte, 10), -1); err == nil {
		t.Errorf("ReadAt at -1 = %d, nil; want an error", n)
	}
}

func testEmpty(t *testing.T, s blob.Store) {
	id := put(t, s, nil)
	r, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != 0 {
		t.Fatalf("Size = %d, want 0", r.Size())
	}
	if n, err := r.ReadAt(make([]byte, 10), 0); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt of an empty blob = %d, %v; want 0, io.EOF", n, err)
	}
	found := false
	if err := s.Walk(t.Context(), func(got string, size int64, _ time.Time) error {
		if got == id {
			found = true
			if size != 0 {
				t.Errorf("Walk: empty blob has size %d", size)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatal("Walk did not report the empty blob")
	}
}

func testLarge(t *testing.T, s blob.Store) {
	data := randBytes(20, 20<<20)
	id := put(t, s, data)
	checkContent(t, s, id, data)
}

// chunkReader yields its data in reads of varying, odd sizes, sometimes
// with io.EOF on the last data.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(70000))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	if len(c.data) == 0 && c.rng.IntN(2) == 0 {
		return n, io.EOF
	}
	return n, nil
}

func testChunkedReader(t *testing.T, s blob.Store) {
	for i := range 8 {
		data := randBytes(uint64(100+i), 1+i*777777)
		id, n, err := s.Put(t.Context(), &chunkReader{data: data, rng: rand.New(rand.NewPCG(uint64(i), 1))})
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(len(data)) {
			t.Fatalf("size = %d, want %d", n, len(data))
		}
		checkContent(t, s, id, data)
	}
}

func testConcurrentPuts(t *testing.T, s blob.Store) {
	const workers, each = 32, 8
	type res struct {
		id   string
		seed uint64
		size int
	}
	results := make(chan res, workers*each)
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				seed := uint64(w*each + i)
				size := int(seed*7919) % 300000
				id, n, err := s.Put(t.Context(), bytes.NewReader(randBytes(seed, size)))
				if err != nil {
					errc <- err
					return
				}
				if n != int64(size) {
					errc <- fmt.Errorf("size = %d, want %d", n, size)
					return
				}
				results <- res{id, seed, size}
			}
		})
	}
	wg.Wait()
	close(results)
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for r := range results {
		checkIDForm(t, r.id)
		if seen[r.id] {
			t.Fatalf("id %s returned twice", r.id)
		}
		seen[r.id] = true
		checkContent(t, s, r.id, randBytes(r.seed, r.size))
	}
	if len(seen) != workers*each {
		t.Fatalf("%d blobs, want %d", len(seen), workers*each)
	}
	walked := walkAll(t, s)
	if len(walked) != len(seen) {
		t.Fatalf("Walk saw %d blobs, want %d", len(walked), len(seen))
	}
}

func testConcurrentReadAt(t *testing.T, s blob.Store) {
	data := randBytes(3, 2<<20)
	id := put(t, s, data)
	r, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			p := make([]byte, 65536)
			for range 200 {
				off := rng.IntN(len(data))
				n, err := r.ReadAt(p, int64(off))
				want := min(len(p), len(data)-off)
				if n != want || (err != nil && err != io.EOF) || !bytes.Equal(p[:n], data[off:off+n]) {
					errc <- fmt.Errorf("ReadAt(%d at %d) = %d, %v; want %d bytes", len(p), off, n, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

func testDelete(t *testing.T, s blob.Store) {
	ctx := t.Context()
	keep := put(t, s, randBytes(1, 1000))
	gone := put(t, s, randBytes(2, 1000))
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Open(ctx, gone); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Open after Delete: %v, want NotFound", err)
	}
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatalf("Delete of a deleted blob: %v, want nil", err)
	}
	checkContent(t, s, keep, randBytes(1, 1000))
	walked := walkAll(t, s)
	if len(walked) != 1 || walked[keep] != 1000 {
		t.Fatalf("Walk after Delete = %v, want only %s", walked, keep)
	}
}

func testOpenMissing(t *testing.T, s blob.Store) {
	id := put(t, s, []byte("x"))
	if err := s.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(t.Context(), id)
	if !errs.Is(err, errs.NotFound) {
		t.Fatalf("Open of a missing blob = %v, %v; want NotFound", r, err)
	}
}

func testInvalidIDs(t *testing.T, s blob.Store) {
	ctx := t.Context()
	data := randBytes(9, 5000)
	id := put(t, s, data)
	bad := []string{
		"", ".", "..", "/", "../x", "a/b", "a\\b", "/etc/passwd", "..\\x", "x\x00y",
		"../" + id, "./" + id, "/" + id, id + "/", id + "/..", id + "\x00", id + " ", " " + id,
		id[:len(id)/2] + "/" + id[len(id)/2:], "../../../../../../../../tmp",
		"%2e%2e%2fx", string(make([]byte, 4096)),
	}
	for _, b := range bad {
		if r, err := s.Open(ctx, b); err == nil {
			r.Close()
			t.Errorf("Open(%q) succeeded; want Invalid", b)
		} else if !errs.Is(err, errs.Invalid) {
			t.Errorf("Open(%q) = %v; want Invalid", b, err)
		}
		if err := s.Delete(ctx, b); !errs.Is(err, errs.Invalid) {
			t.Errorf("Delete(%q) = %v; want Invalid", b, err)
		}
	}
	checkContent(t, s, id, data)
	if w := walkAll(t, s); len(w) != 1 || w[id] != int64(len(data)) {
		t.Fatalf("Walk after invalid Deletes = %v, want only %s", w, id)
	}
}

// walkAll is every blob Walk reports, by id, with its size.
func walkAll(t *testing.T, s blob.Store) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	if err := s.Walk(t.Context(), func(id string, size int64, mod time.Time) error {
		if _, dup := m[id]; dup {
			t.Errorf("Walk reported %s twice", id)
		}
		if mod.IsZero() || time.Since(mod) > 24*time.Hour || time.Until(mod) > time.Hour {
			t.Errorf("Walk: %s has modification time %v", id, mod)
		}
		m[id] = size
		return nil
	}); err != nil {
		t.Fatalf("Walk: %v", err)
	}
	return m
}

func testWalk(t *testing.T, s blob.Store) {
	if w := walkAll(t, s); len(w) != 0 {
		t.Fatalf("Walk of an empty store = %v", w)
	}
	want := map[string]int64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 300; i += 8 {
				n := i * 37
				id, _, err := s.Put(t.Context(), bytes.NewReader(randBytes(uint64(i), n)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[id] = int64(n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got := walkAll(t, s)
	if len(got) != len(want) {
		t.Fatalf("Walk saw %d blobs, want %d", len(got), len(want))
	}
	for id, n := range want {
		if g, ok := got[id]; !ok || g != n {
			t.Errorf("Walk: %s size %d (seen %v), want %d", id, g, ok, n)
		}
	}
}

func testWalkStops(t *testing.T, s blob.Store) {
	for i := range 10 {
		put(t, s, randBytes(uint64(i), 10))
	}
	stop := errors.New("stop")
	calls := 0
	err := s.Walk(t.Context(), func(string, int64, time.Time) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Fatalf("Walk = %v after %d calls; want fn's error after 3", err, calls)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Walk(ctx, func(string, int64, time.Time) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Walk with a cancelled context = %v, want context.Canceled", err)
	}
}

// checkClean checks that the store holds exactly the blobs in want and, if
// it stages writes, that nothing is staged.
func checkClean(t *testing.T, s blob.Store, want map[string]int64) {
	t.Helper()
	got := walkAll(t, s)
	if len(got) != len(want) {
		t.Fatalf("store holds %d blobs (%v), want %d", len(got), got, len(want))
	}
	for id := range want {
		if _, ok := got[id]; !ok {
			t.Fatalf("blob %s missing", id)
		}
	}
	if st, ok := s.(Stager); ok {
		n, err := st.Pending(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%d staged writes left behind", n)
		}
	}
}

// failingReader yields n bytes, then fails with err.
type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	clear(p[:k])
	f.n -= k
	return k, nil
}

func testFailingReader(t *testing.T, s blob.Store) {
	keep := put(t, s, []byte("keep"))
	boom := errors.New("boom")
	for _, n := range []int{0, 1, 4096, 3<<20 + 5} {
		id, _, err := s.Put(t.Context(), &failingReader{n: n, err: boom})
		if !errors.Is(err, boom) {
			t.Fatalf("Put from a reader failing after %d bytes = %q, %v; want the reader's error", n, id, err)
		}
		if id != "" {
			t.Errorf("failed Put returned id %q", id)
		}
	}
	// A truncated body (net/http reports io.ErrUnexpectedEOF) is a failure,
	// not the end of the data.
	if _, _, err := s.Put(t.Context(), &failingReader{n: 100, err: io.ErrUnexpectedEOF}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Put from a truncated reader = %v; want io.ErrUnexpectedEOF", err)
	}
	checkClean(t, s, map[string]int64{keep: 4})
}

func testCancelledBefore(t *testing.T, s blob.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	id, _, err := s.Put(ctx, bytes.NewReader([]byte("data")))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context = %q, %v; want context.Canceled", id, err)
	}
	checkClean(t, s, nil)
}

// cancellingReader yields zeros and cancels its context once it has yielded
// after bytes. It fails 64 MiB later, so a store that ignores the
// cancellation fails the test instead of filling the disk.
type cancellingReader struct {
	after  int
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	if c.after < -64<<20 {
		return 0, errors.New("the store kept reading 64 MiB past the cancellation of its context")
	}
	clear(p)
	c.after -= len(p)
	if c.after <= 0 {
		c.cancel()
	}
	return len(p), nil
}

func testCancelledDuring(t *testing.T, s blob.Store) {
	for _, after := range []int{1, 5 << 20} {
		ctx, cancel := context.WithCancel(t.Context())
		id, _, err := s.Put(ctx, &cancellingReader{after: after, cancel: cancel})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Put cancelled after %d bytes = %q, %v; want context.Canceled", after, id, err)
		}
	}
	checkClean(t, s, nil)
}
