package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// The content cache is bounded: after a runner has staged what it needs
// (and its user code is starting), it trims the cache in the background
// to the size the server's config allows (content_cache_size, written by
// the server to CachePolicyFile), least recently used first. An entry
// linked into a workload's dir (more than one link) is in use and frees
// nothing when removed: it stays; so does one used within CacheTrimGrace,
// which another runner may be about to link.

// CachePolicyFile, under work_dir/cache, is the cache's policy as the
// server writes it at start: api.CachePolicy in JSON.
const CachePolicyFile = "policy.json"

// Trimming constants.
const (
	// CacheTrimDelay is how long after staging a runner waits before it
	// trims (user code's start comes first; Timing.CacheTrim).
	CacheTrimDelay = 2 * time.Second
	// CacheTrimGrace: an entry used this recently is never removed.
	CacheTrimGrace = 10 * time.Minute
	// cacheLowWater: a trim removes entries until the cache is at this
	// share of its size, so that the next runners need not trim again.
	cacheLowWater = 0.9
)

// cacheEntry is one file of the content cache.
type cacheEntry struct {
	path  string
	size  int64 // bytes it takes on disk
	used  time.Time
	links uint64
}

// cacheEvictions chooses the entries to remove from a cache of max bytes:
// none while it fits; else the least recently used entries that are not
// in use (one link only, unused since before now-grace) until what
// remains is at most cacheLowWater of max. It returns them and the size
// the cache keeps. It is pure.
func cacheEvictions(entries []cacheEntry, max int64, now time.Time, grace time.Duration) (evict []cacheEntry, left int64) {
	for _, e := range entries {
		left += e.size
	}
	if max <= 0 || left <= max {
		return nil, left
	}
	target := int64(float64(max) * cacheLowWater)
	cands := slices.Clone(entries)
	slices.SortStableFunc(cands, func(a, b cacheEntry) int { return a.used.Compare(b.used) })
	for _, e := range cands {
		if left <= target {
			break
		}
		if e.links > 1 || now.Sub(e.used) < grace {
			continue
		}
		evict = append(evict, e)
		left -= e.size
	}
	return evict, left
}

// trimCache marks used (cache paths this runner staged) as used now, then
// trims the content cache under cacheDir to its policy's size. Another
// runner trimming at the same time is left to do it. It returns what it
// removed.
func trimCache(ctx context.Context, cacheDir string, used []string, now func() time.Time) (removed int, freed int64, err error) {
	const op errs.Op = "runner.trimCache"
	t := now()
	for _, p := range used {
		touchUsed(p, t)
	}
	policy, err := readCachePolicy(filepath.Join(filepath.Dir(cacheDir), CachePolicyFile))
	if err != nil || policy.MaxBytes <= 0 {
		return 0, 0, err
	}
	lock, err := os.OpenFile(filepath.Join(filepath.Dir(cacheDir), ".trim.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, 0, errs.E(op, errs.IO, "cannot open the cache's trim lock", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return 0, 0, nil // another runner trims
	}
	var entries []cacheEntry
	err = filepath.WalkDir(cacheDir, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || !d.Type().IsRegular() || !isCacheName(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		entries = append(entries, cacheEntry{path: p, size: st.Blocks * 512, used: time.Unix(st.Atim.Unix()), links: uint64(st.Nlink)})
		return nil
	})
	if err != nil {
		return 0, 0, errs.E(op, errs.IO, "cannot walk the content cache", err)
	}
	evict, _ := cacheEvictions(entries, policy.MaxBytes, now(), CacheTrimGrace)
	for _, e := range evict {
		if ctx.Err() != nil {
			break
		}
		if err := os.Remove(e.path); err == nil || errors.Is(err, fs.ErrNotExist) {
			removed++
			freed += e.size
		}
	}
	return removed, freed, nil
}

// touchUsed sets a cache entry's access time, its last use, keeping its
// modification time (the object's, which linked copies show).
func touchUsed(path string, t time.Time) {
	var ts [2]syscall.Timespec
	ts[0] = syscall.NsecToTimespec(t.UnixNano())
	ts[1] = syscall.Timespec{Nsec: unix.UTIME_OMIT} // the modification time stays
	syscall.UtimesNano(path, ts[:])
}

// isCacheName reports whether name is a cache entry's name (cacheName: 64
// hex digits), not a download in progress or another file.
func isCacheName(name string) bool {
	if len(name) != 64 {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func readCachePolicy(path string) (api.CachePolicy, error) {
	var p api.CachePolicy
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, errs.E("runner.readCachePolicy", errs.IO, "cannot read the cache policy "+path, err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, errs.E("runner.readCachePolicy", errs.Invalid, "the cache policy "+path+" is not valid JSON", err)
	}
	return p, nil
}

// WriteCachePolicy writes the cache policy under workDir for runners
// (the server, at start).
func WriteCachePolicy(workDir string, p api.CachePolicy) error {
	const op errs.Op = "runner.WriteCachePolicy"
	dir := filepath.Dir(ObjectCacheDir(workDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errs.E(op, errs.IO, "cannot create "+dir, err)
	}
	b, _ := json.Marshal(p)
	tmp := filepath.Join(dir, CachePolicyFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return errs.E(op, errs.IO, "cannot write the cache policy", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, CachePolicyFile)); err != nil {
		return errs.E(op, errs.IO, "cannot write the cache policy", err)
	}
	return nil
}

// trimCacheLater trims the content cache after delay (Timing.CacheTrim)
// in the background, while user code starts; it gives up when ctx ends.
func trimCacheLater(ctx context.Context, delay time.Duration, cacheDir string, used []string, log *slog.Logger) {
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		n, freed, err := trimCache(ctx, cacheDir, used, time.Now)
		switch {
		case err != nil && log != nil:
			log.Warn("cannot trim the content cache", "err", err)
		case n > 0 && log != nil:
			log.Info("trimmed the content cache", "removed", n, "freed_bytes", freed)
		}
	}()
}
