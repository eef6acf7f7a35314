package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/keypath"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsurl"
	"github.com/atelier-dev/atelier/internal/text"
)

// StageJobs is how many objects are downloaded in parallel.
const StageJobs = 32

// remoteFile is one object to stage and where it goes below the channel
// dir.
type remoteFile struct {
	Bucket string
	Obj    obsclient.Object
	Rel    string // slash-separated path below the destination dir
	// Input is the job input the object belongs to when the server can
	// send it in a tar stream of the runner protocol ("": S3 only).
	Input string
	// cache is the file's path in the content cache once computed
	// (withCachePaths); "" until then.
	cache string
}

// cacheName is the content cache's file name of an object version:
// sha256(bucket "/" key "\n" etag). Without an ETag, size and time stand in
// for it.
func cacheName(bucket string, o obsclient.Object) string {
	etag := o.ETag
	if etag == "" {
		etag = fmt.Sprintf("size=%d;mtime=%d", o.Size, o.LastModified.UnixNano())
	}
	sum := sha256.Sum256([]byte(bucket + "/" + o.Key + "\n" + etag))
	return hex.EncodeToString(sum[:])
}

// cachePath is where the cache keeps f: objects/<name[:2]>/<name>, fanned
// out so that parallel downloads do not all lock one directory.
func (s *stager) cachePath(f remoteFile) string {
	if f.cache != "" {
		return f.cache
	}
	n := cacheName(f.Bucket, f.Obj)
	return filepath.Join(s.cacheDir, n[:2], n)
}

// stager downloads objects through the content cache.
type stager struct {
	s3       obsclient.S3
	client   *obsclient.Client
	cacheDir string
	warn     func(string)
	// inputs, when set, lists a job's inputs and streams their small
	// objects through the runner protocol; S3 remains the fallback.
	inputs inputSource
	// given are the listings of inputs the job came with (by input
	// name; api.RunnerJob.Inputs): those inputs are not listed again.
	given map[string][]api.RunnerObject
	// streams bounds the parallel tar streams (0: BulkStreams).
	streams int
	log     *slog.Logger // the runner's own log (nil: none)

	mu   sync.Mutex
	used []string // the cache paths fetched: their last use is now
}

// usedPaths are the cache paths of the files fetched so far.
func (s *stager) usedPaths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.used)
}

// listing is what a location holds.
type listing struct {
	Files []remoteFile
	Dirs  []string // relative directories to create (empty prefixes, "dir/" markers)
	// Single is set when the location is one object; Files holds it.
	Single bool
	// Manifest and ManifestName are a dataset version's manifest, staged
	// beside its objects.
	Manifest, ManifestName string
}

// list lists loc once: every object under it as a directory or, when there
// is none and loc does not end in "/", the object it names.
func (s *stager) list(ctx context.Context, loc obsclient.Location) (listing, error) {
	const op errs.Op = "runner.list"
	dir := loc.AsDir()
	var objs []obsclient.Object
	for o, err := range s.s3.List(ctx, dir.Bucket, obsclient.ListOptions{Prefix: dir.Key, Recursive: true}) {
		if err != nil {
			return listing{}, errs.E(op, CodeList, because(fmt.Sprintf("cannot list %s", dir), err), err)
		}
		objs = append(objs, o)
	}
	out := s.listed(dir, objs)
	if len(out.Files) > 0 || loc.DirSyntax() {
		return out, nil
	}
	return s.single(ctx, loc, nil)
}

// withCachePaths computes the cache path of each file once: fetch and
// place both need it.
func (s *stager) withCachePaths(files []remoteFile) {
	for i := range files {
		if files[i].cache == "" {
			files[i].cache = s.cachePath(files[i])
		}
	}
}

// listed is the listing of the objects under dir.
func (s *stager) listed(dir obsclient.Location, objs []obsclient.Object) listing {
	out := listing{Files: make([]remoteFile, 0, len(objs))}
	files := make(map[string]bool, len(objs))
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, dir.Key)
		if strings.HasSuffix(rel, "/") {
			if r := strings.TrimSuffix(rel, "/"); keypath.Unsafe(r) == "" {
				out.Dirs = append(out.Dirs, r)
			}
			continue
		}
		if why := keypath.Unsafe(rel); why != "" {
			s.warn(fmt.Sprintf("skipping %s: %s", obsurl.Format(dir.Bucket, o.Key), why))
			continue
		}
		files[rel] = true
		out.Files = append(out.Files, remoteFile{Bucket: dir.Bucket, Obj: o, Rel: rel})
	}
	// A key that is also the directory of other keys cannot be a file.
	kept := out.Files[:0]
	for _, f := range out.Files {
		if anc := keypath.FileAncestor(f.Rel, files); anc != "" {
			s.warn(fmt.Sprintf("skipping %s: %s is also an object, not a directory", obsurl.Format(f.Bucket, f.Obj.Key), anc))
			continue
		}
		kept = append(kept, f)
	}
	out.Files = kept
	return out
}

// single is the listing of the one object loc names: known (from the
// server's listing) or, when nil, looked up over S3.
func (s *stager) single(ctx context.Context, loc obsclient.Location, known *obsclient.Object) (listing, error) {
	const op errs.Op = "runner.list"
	if known != nil {
		return listing{Single: true, Files: []remoteFile{{Bucket: loc.Bucket, Obj: *known, Rel: path.Base(loc.Key)}}}, nil
	}
	o, err := s.s3.Stat(ctx, loc.Bucket, loc.Key)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			return listing{}, errs.E(op, errs.NotFound, CodeNothing,
				errs.Hint("check the obs_url of the channel with `atelier obs ls`"),
				fmt.Sprintf("there is no object and nothing under %s", loc))
		}
		return listing{}, errs.E(op, CodeList, because(fmt.Sprintf("cannot read %s", loc), err), err)
	}
	return listing{Single: true, Files: []remoteFile{{Bucket: loc.Bucket, Obj: o, Rel: path.Base(loc.Key)}}}, nil
}

// fetchStats counts a fetch.
type fetchStats struct {
	Files, Hits int
	Bytes       int64 // downloaded
}

// fetch makes sure every file is in the content cache; a cached file of
// the wrong size is a miss. Small misses of a job's inputs come from the
// server in tar streams (fetchBulk) while the others are downloaded over
// S3 StageJobs at a time; what a stream did not deliver is downloaded over
// S3 after it.
func (s *stager) fetch(ctx context.Context, files []remoteFile) (fetchStats, error) {
	const op errs.Op = "runner.fetch"
	if err := os.MkdirAll(s.cacheDir, 0o755); err != nil {
		return fetchStats{}, errs.E(op, errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", s.cacheDir), err), err)
	}
	st := fetchStats{Files: len(files)}
	var bulk, direct []remoteFile
	queued := map[string]bool{}
	hit := s.inCache(files)
	used := make([]string, 0, len(files))
	defer func() {
		s.mu.Lock()
		s.used = append(s.used, used...)
		s.mu.Unlock()
	}()
	for i, f := range files {
		p := s.cachePath(f)
		used = append(used, p)
		if hit[i] {
			st.Hits++
			continue
		}
		if queued[p] {
			continue
		}
		queued[p] = true
		st.Bytes += f.Obj.Size
		if f.Input != "" && s.inputs != nil && f.Obj.Size < BulkMaxSize {
			bulk = append(bulk, f)
		} else {
			direct = append(direct, f)
		}
	}
	if len(bulk) == 0 {
		return st, s.download(ctx, direct)
	}
	var derr error
	done := make(chan struct{})
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(done)
		if derr = s.download(ctx, direct); derr != nil {
			cancel() // the staging fails: stop the streams too
		}
	}()
	left := s.fetchBulk(bctx, bulk)
	<-done
	if derr != nil {
		return st, derr
	}
	if ctx.Err() != nil {
		return st, ctx.Err()
	}
	return st, s.download(ctx, left)
}

// inCache reports for each file whether the cache holds it (a file of its
// size), looking placeJobs at a time.
func (s *stager) inCache(files []remoteFile) []bool {
	hit := make([]bool, len(files))
	jobs := placeJobs
	if len(files) < 64 {
		jobs = 1
	}
	var wg sync.WaitGroup
	for w := range jobs {
		wg.Go(func() {
			for i := w; i < len(files); i += jobs {
				fi, err := os.Stat(s.cachePath(files[i]))
				hit[i] = err == nil && fi.Size() == files[i].Obj.Size
			}
		})
	}
	wg.Wait()
	return hit
}

// download downloads files into the content cache over S3, StageJobs at
// a time.
func (s *stager) download(ctx context.Context, files []remoteFile) error {
	const op errs.Op = "runner.fetch"
	if len(files) == 0 {
		return nil
	}
	var plan obsclient.Plan
	for _, f := range files {
		plan.Transfers = append(plan.Transfers, obsclient.Transfer{
			Op:  obsclient.Download,
			Src: obsclient.Location{Bucket: f.Bucket, Key: f.Obj.Key}, Dst: obsclient.Location{Path: s.cachePath(f)},
			Size: f.Obj.Size, ModTime: f.Obj.LastModified, ETag: f.Obj.ETag, VersionID: f.Obj.VersionID,
		})
	}
	if _, err := s.client.Execute(ctx, plan, "downloaded", false); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The transfer engine's first failure names the object and the
		// S3 error; the cache path it was written to is no news to users.
		return errs.E(op, CodeDownload, "cannot download", innermost(err))
	}
	return nil
}

// placeJobs is how many files place links or copies at once.
const placeJobs = 4

// place puts the cached files under dir: hard links (read-only data shared
// by every job) when link, else copies (code, which jobs may change). A
// hard link that cannot be made (another file system) falls back to a copy.
// The directories are made first, then the files placeJobs at a time.
func (s *stager) place(files []remoteFile, dirs []string, dir string, link bool) error {
	return s.placeN(files, dirs, dir, link, placeJobs)
}

// placeN is place with jobs files at a time.
func (s *stager) placeN(files []remoteFile, dirs []string, dir string, link bool, jobs int) error {
	const op errs.Op = "runner.place"
	made := map[string]bool{}
	mkdir := func(d string) error {
		if made[d] {
			return nil
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return errs.E(op, errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", d), err), err)
		}
		made[d] = true
		return nil
	}
	if err := mkdir(dir); err != nil {
		return err
	}
	for _, d := range dirs {
		if err := mkdir(filepath.Join(dir, filepath.FromSlash(d))); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := mkdir(filepath.Dir(filepath.Join(dir, filepath.FromSlash(f.Rel)))); err != nil {
			return err
		}
	}
	one := func(f remoteFile) error {
		src := s.cachePath(f)
		dst := filepath.Join(dir, filepath.FromSlash(f.Rel))
		if link {
			err := os.Link(src, dst)
			if errors.Is(err, os.ErrExist) {
				os.Remove(dst)
				err = os.Link(src, dst)
			}
			if err == nil {
				return nil
			}
			if !linkFallback(err) {
				return errs.E(op, errs.IO, CodeCacheLink, because(fmt.Sprintf("cannot link %s to %s", src, dst), err), err)
			}
		}
		return copyFile(src, dst, f.Obj.LastModified)
	}
	if !link {
		return forEach(files, jobs, one)
	}
	// Links are made directory by directory, each directory's entries by
	// one worker through a descriptor of it: a link takes the lock of the
	// directory it is made in, so workers in different directories do not
	// wait on each other, and the destination path is not walked again
	// for every file.
	groups := byDir(files, placeGroup)
	return forEach(groups, jobs, func(g []remoteFile) error {
		d := filepath.Join(dir, filepath.FromSlash(path.Dir(g[0].Rel)))
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			// Not expected (made above): the files one by one say why.
			for _, f := range g {
				if err := one(f); err != nil {
					return err
				}
			}
			return nil
		}
		defer unix.Close(fd)
		for _, f := range g {
			base := path.Base(f.Rel)
			src := s.cachePath(f)
			err := unix.Linkat(unix.AT_FDCWD, src, fd, base, 0)
			if err == unix.EEXIST {
				_ = unix.Unlinkat(fd, base, 0)
				err = unix.Linkat(unix.AT_FDCWD, src, fd, base, 0)
			}
			if err == nil {
				continue
			}
			if err := one(f); err != nil { // a copy, or the error with its paths
				return err
			}
		}
		return nil
	})
}

// placeGroup is the most files one worker links into a directory in one
// go: a large directory is still shared by several workers.
const placeGroup = 256

// linkFallback reports whether a hard link failed for a reason a copy
// does not have (another file system, no links allowed, too many links).
func linkFallback(err error) bool {
	return errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EMLINK)
}

// byDir splits files into runs of at most n files of one directory each,
// in the order of the directories' first files.
func byDir(files []remoteFile, n int) [][]remoteFile {
	idx := map[string][]int{}
	var order []string
	for i, f := range files {
		d := path.Dir(f.Rel)
		if _, ok := idx[d]; !ok {
			order = append(order, d)
		}
		idx[d] = append(idx[d], i)
	}
	var out [][]remoteFile
	for _, d := range order {
		is := idx[d]
		for len(is) > 0 {
			k := min(n, len(is))
			g := make([]remoteFile, k)
			for j, i := range is[:k] {
				g[j] = files[i]
			}
			out = append(out, g)
			is = is[k:]
		}
	}
	return out
}

// forEach calls fn for every item, jobs at a time (one at a time when
// there are few), and returns the first failure; a worker stops at its
// first failure.
func forEach[T any](items []T, jobs int, fn func(T) error) error {
	if jobs <= 1 || len(items) < 2 {
		for _, it := range items {
			if err := fn(it); err != nil {
				return err
			}
		}
		return nil
	}
	jobs = min(jobs, len(items))
	var next atomic.Int64
	errc := make(chan error, jobs)
	var wg sync.WaitGroup
	for range jobs {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(items) {
					return
				}
				if err := fn(items[i]); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	return <-errc // the first failure, or nil
}

// innermost is the last *errs.Error in err's chain (err itself when there
// is none).
func innermost(err error) error {
	last := err
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*errs.Error); ok {
			last = e
		}
	}
	return last
}

// copyFile copies src to dst (replacing it) with mtime.
func copyFile(src, dst string, mtime time.Time) error {
	const op errs.Op = "runner.copyFile"
	in, err := os.Open(src)
	if err != nil {
		return errs.E(op, errs.IO, CodeCacheLink, because(fmt.Sprintf("cannot read %s", src), err), err)
	}
	defer in.Close()
	os.Remove(dst)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return errs.E(op, errs.IO, CodeCacheLink, because(fmt.Sprintf("cannot create %s", dst), err), err)
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errs.E(op, errs.IO, CodeCacheLink, because(fmt.Sprintf("cannot write %s", dst), err), err)
	}
	if !mtime.IsZero() {
		_ = os.Chtimes(dst, mtime, mtime)
	}
	return nil
}

// stageResult counts a staging.
type stageResult struct {
	Files, Hits int
	Bytes       int64 // downloaded
	Elapsed     time.Duration
	// List, Fetch and Place are the parts of Elapsed spent listing,
	// downloading and linking.
	List, Fetch, Place time.Duration
}

func (r stageResult) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("%d files (%d from the cache, %s downloaded) in %s (list %s, download %s, link %s)",
		r.Files, r.Hits, text.Bytes(r.Bytes), ms(r.Elapsed), ms(r.List), ms(r.Fetch), ms(r.Place))
}

// stageInputs lists every input once, downloads what the cache misses and
// links the files into the input dirs. An input that is one object is
// recorded in its Channel.File.
func (s *stager) stageInputs(ctx context.Context, inputs []Channel) (stageResult, error) {
	start := time.Now()
	lists := make([]listing, len(inputs))
	var all []remoteFile
	for i, c := range inputs {
		l, err := s.listInput(ctx, c)
		if err != nil {
			return stageResult{}, err
		}
		if len(l.Files) == 0 && !l.Single {
			s.warn(fmt.Sprintf("input %s: there are no objects under %s", c.Name, c.Remote))
		}
		s.withCachePaths(l.Files)
		lists[i] = l
		all = append(all, l.Files...)
	}
	listed := time.Now()
	st, err := s.fetch(ctx, all)
	if err != nil {
		return stageResult{}, err
	}
	fetched := time.Now()
	for i := range inputs {
		if lists[i].Single {
			inputs[i].File = lists[i].Files[0].Rel
		}
		if err := s.place(lists[i].Files, lists[i].Dirs, inputs[i].Dir, true); err != nil {
			return stageResult{}, err
		}
		if lists[i].ManifestName != "" {
			if err := writeManifests(inputs[i], lists[i]); err != nil {
				return stageResult{}, err
			}
		}
	}
	end := time.Now()
	return stageResult{Files: st.Files, Hits: st.Hits, Bytes: st.Bytes, Elapsed: end.Sub(start),
		List: listed.Sub(start), Fetch: fetched.Sub(listed), Place: end.Sub(fetched)}, nil
}

// stageCode downloads an OBS code dir into dir (copies, not links).
func (s *stager) stageCode(ctx context.Context, loc obsclient.Location, dir string) (stageResult, error) {
	start := time.Now()
	l, err := s.list(ctx, loc.AsDir())
	if err != nil {
		return stageResult{}, err
	}
	s.withCachePaths(l.Files)
	listed := time.Now()
	st, err := s.fetch(ctx, l.Files)
	if err != nil {
		return stageResult{}, err
	}
	fetched := time.Now()
	if err := s.place(l.Files, l.Dirs, dir, false); err != nil {
		return stageResult{}, err
	}
	end := time.Now()
	return stageResult{Files: st.Files, Hits: st.Hits, Bytes: st.Bytes, Elapsed: end.Sub(start),
		List: listed.Sub(start), Fetch: fetched.Sub(listed), Place: end.Sub(fetched)}, nil
}
