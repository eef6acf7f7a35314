package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

func TestCacheEvictions(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	e := func(name string, size int64, used time.Time, links uint64) cacheEntry {
		return cacheEntry{path: name, size: size, used: used, links: links}
	}
	tests := []struct {
		name    string
		entries []cacheEntry
		max     int64
		evict   []string
		left    int64
	}{
		{name: "fits", max: 100, left: 90,
			entries: []cacheEntry{e("a", 50, ago(time.Hour), 1), e("b", 40, ago(2*time.Hour), 1)}},
		{name: "exactly full fits", max: 90, left: 90,
			entries: []cacheEntry{e("a", 50, ago(time.Hour), 1), e("b", 40, ago(2*time.Hour), 1)}},
		{name: "least recently used first", max: 100, evict: []string{"old"}, left: 80,
			entries: []cacheEntry{e("new", 50, ago(time.Hour), 1), e("old", 30, ago(5*time.Hour), 1), e("mid", 30, ago(3*time.Hour), 1)}},
		{name: "down to 90%", max: 100, evict: []string{"old", "mid"}, left: 50,
			entries: []cacheEntry{e("new", 50, ago(time.Hour), 1), e("old", 30, ago(5*time.Hour), 1), e("mid", 45, ago(3*time.Hour), 1)}},
		{name: "stops at the low-water mark", max: 100, evict: []string{"a"}, left: 90,
			entries: []cacheEntry{e("a", 20, ago(5*time.Hour), 1), e("b", 45, ago(4*time.Hour), 1), e("c", 45, ago(3*time.Hour), 1)}},
		{name: "linked entries stay (in use by a workload)", max: 100, evict: []string{"free"}, left: 110,
			entries: []cacheEntry{e("linked", 60, ago(9*time.Hour), 2), e("free", 40, ago(8*time.Hour), 1), e("new", 50, ago(time.Hour), 3)}},
		{name: "recently used entries stay", max: 10, evict: []string{"stale"}, left: 20,
			entries: []cacheEntry{e("stale", 20, ago(time.Hour), 1), e("fresh", 20, ago(time.Minute), 1)}},
		{name: "an unbounded cache is never trimmed", max: 0, left: 1 << 40,
			entries: []cacheEntry{e("a", 1<<40, ago(time.Hour), 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evict, left := cacheEvictions(tt.entries, tt.max, now, 10*time.Minute)
			var names []string
			for _, x := range evict {
				names = append(names, x.path)
			}
			if !slices.Equal(names, tt.evict) || left != tt.left {
				t.Errorf("evict %v (left %d), want %v (left %d)", names, left, tt.evict, tt.left)
			}
		})
	}
}

// FuzzCacheEvictions: a trim removes only entries that are neither in use
// nor recent, least recently used first, and never more than it must.
func FuzzCacheEvictions(f *testing.F) {
	f.Add([]byte{10, 1, 1, 200, 2, 3}, int64(20))
	f.Fuzz(func(t *testing.T, raw []byte, max int64) {
		now := time.Unix(1_000_000, 0)
		var entries []cacheEntry
		var total int64
		for i := 0; i+2 < len(raw); i += 3 {
			en := cacheEntry{path: fmt.Sprint(i), size: int64(raw[i]), used: now.Add(-time.Duration(raw[i+1]) * time.Minute), links: uint64(raw[i+2]%3 + 1)}
			entries = append(entries, en)
			total += en.size
		}
		evict, left := cacheEvictions(entries, max, now, 10*time.Minute)
		var freed int64
		for i, x := range evict {
			freed += x.size
			if x.links > 1 || now.Sub(x.used) < 10*time.Minute {
				t.Fatalf("evicted %+v, which is in use or recent", x)
			}
			if i > 0 && x.used.Before(evict[i-1].used) {
				t.Fatalf("evicted out of order: %v", evict)
			}
		}
		if left != total-freed {
			t.Fatalf("left %d, total %d, freed %d", left, total, freed)
		}
		if max <= 0 || total <= max {
			if len(evict) > 0 {
				t.Fatalf("trimmed a cache that fits: %v", evict)
			}
			return
		}
		if n := len(evict); n > 0 && left+evict[n-1].size <= int64(float64(max)*cacheLowWater) {
			t.Fatalf("evicted more than needed: left %d of max %d", left, max)
		}
	})
}

// TestTrimCache: the real trim removes least recently used entries that
// no workload links, keeps linked and recent ones and what is not an
// entry, marks the entries a runner used, and trims only under the
// policy's size.
func TestTrimCache(t *testing.T) {
	work := t.TempDir()
	cacheDir := ObjectCacheDir(work)
	now := time.Now()
	entry := func(tag string, kib int, used time.Time) string {
		sum := sha256.Sum256([]byte(tag))
		name := hex.EncodeToString(sum[:])
		p := filepath.Join(cacheDir, name[:2], name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, kib<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, used, time.Unix(1_600_000_000, 0)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := entry("old", 400, now.Add(-5*time.Hour))
	older := entry("older", 400, now.Add(-6*time.Hour))
	linked := entry("linked", 400, now.Add(-9*time.Hour))
	if err := os.Link(linked, filepath.Join(work, "job-input")); err != nil {
		t.Fatal(err)
	}
	recent := entry("recent", 400, now.Add(-time.Minute))
	used := entry("used-by-this-runner", 400, now.Add(-8*time.Hour))
	stray := filepath.Join(cacheDir, "ab", "download.partial")
	os.MkdirAll(filepath.Dir(stray), 0o755)
	if err := os.WriteFile(stray, make([]byte, 400<<10), 0o644); err != nil {
		t.Fatal(err)
	}

	// Without a policy nothing is trimmed.
	if n, _, err := trimCache(context.Background(), cacheDir, nil, time.Now); n != 0 || err != nil {
		t.Fatalf("trim without a policy: %d %v", n, err)
	}
	if err := WriteCachePolicy(work, api.CachePolicy{MaxBytes: 1200 << 10}); err != nil {
		t.Fatal(err)
	}
	n, freed, err := trimCache(context.Background(), cacheDir, []string{used}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	gone := func(p string) bool { _, err := os.Stat(p); return os.IsNotExist(err) }
	// 2000 KiB of entries, 1200 KiB allowed, 1080 KiB after: the two least
	// recently used that are not linked, recent or just used.
	if n != 2 || freed < 800<<10 || !gone(older) || !gone(old) {
		t.Errorf("removed %d (%d bytes); older gone %v, old gone %v", n, freed, gone(older), gone(old))
	}
	for _, p := range []string{linked, recent, used, stray} {
		if gone(p) {
			t.Errorf("%s was removed", p)
		}
	}
	fi, _ := os.Stat(used)
	if !fi.ModTime().Equal(time.Unix(1_600_000_000, 0)) {
		t.Errorf("marking an entry used changed its modification time to %v", fi.ModTime())
	}
}

// TestRunnerTrimsTheCache: a job's runner trims the content cache after it
// has staged its inputs: an old entry no workload uses goes, the job's
// own (linked into its inputs) stays.
func TestRunnerTrimsTheCache(t *testing.T) {
	e := newEnv(t)
	e.put("data/a.txt", "hello")
	cacheDir := ObjectCacheDir(e.work)
	sum := sha256.Sum256([]byte("an old object"))
	name := hex.EncodeToString(sum[:])
	old := filepath.Join(cacheDir, name[:2], name)
	os.MkdirAll(filepath.Dir(old), 0o755)
	if err := os.WriteFile(old, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(old, time.Now().Add(-24*time.Hour), time.Now().Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := WriteCachePolicy(e.work, api.CachePolicy{MaxBytes: 16 << 10}); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "trimmed")
	// The job runs until the test has seen the trim (at most 30 s).
	script := fmt.Sprintf("for i in $(seq 300); do [ -e %q ] && exit 0; sleep 0.1; done; exit 3\n", mark)
	j := withIO(e.job("j-trim", "wait.sh"))
	fs := newFakeServer(t, j, map[string]string{"wait.sh": script})
	cfg := e.config(fs)
	cfg.Timing.CacheTrim = time.Millisecond
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(old); os.IsNotExist(err) {
				os.WriteFile(mark, nil, 0o644)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	e.run(context.Background(), cfg)
	<-done
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("the job did not see the trim: exit %+v", ex)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old entry is still in the cache: %v", err)
	}
	staged := filepath.Join(e.work, "jobs", "j-trim", "home", "modelarts", "inputs", "data_url_0", "a.txt")
	if b, err := os.ReadFile(staged); err != nil || string(b) != "hello" {
		t.Errorf("the job's input: %q %v", b, err)
	}
}
