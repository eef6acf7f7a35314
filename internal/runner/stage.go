package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient"
)

// StageJobs is how many objects are downloaded in parallel.
const StageJobs = 32

// remoteFile is one object to stage and where it goes below the channel
// dir.
type remoteFile struct {
	Bucket string
	Obj    obsclient.Object
	Rel    string // slash-separated path below the destination dir
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
	n := cacheName(f.Bucket, f.Obj)
	return filepath.Join(s.cacheDir, n[:2], n)
}

// stager downloads objects through the content cache.
type stager struct {
	s3       obsclient.S3
	client   *obsclient.Client
	cacheDir string
	warn     func(string)
}

// listing is what a location holds.
type listing struct {
	Files []remoteFile
	Dirs  []string // relative directories to create (empty prefixes, "dir/" markers)
	// Single is set when the location is one object; Files holds it.
	Single bool
}

// list lists loc once: every object under it as a directory or, when there
// is none and loc does not end in "/", the object it names.
func (s *stager) list(ctx context.Context, loc obsclient.Location) (listing, error) {
	const op errs.Op = "runner.list"
	dir := loc.AsDir()
	var out listing
	files := map[string]bool{}
	for o, err := range s.s3.List(ctx, dir.Bucket, obsclient.ListOptions{Prefix: dir.Key, Recursive: true}) {
		if err != nil {
			return listing{}, errs.E(op, CodeList, because(fmt.Sprintf("cannot list %s", dir), err), err)
		}
		rel := strings.TrimPrefix(o.Key, dir.Key)
		if strings.HasSuffix(rel, "/") {
			if r := strings.TrimSuffix(rel, "/"); unsafeRel(r) == "" {
				out.Dirs = append(out.Dirs, r)
			}
			continue
		}
		if why := unsafeRel(rel); why != "" {
			s.warn(fmt.Sprintf("skipping %s: %s", obsclient.URL(dir.Bucket, o.Key), why))
			continue
		}
		files[rel] = true
		out.Files = append(out.Files, remoteFile{Bucket: dir.Bucket, Obj: o, Rel: rel})
	}
	// A key that is also the directory of other keys cannot be a file.
	kept := out.Files[:0]
	for _, f := range out.Files {
		if anc := fileAncestor(f.Rel, files); anc != "" {
			s.warn(fmt.Sprintf("skipping %s: %s is also an object, not a directory", obsclient.URL(f.Bucket, f.Obj.Key), anc))
			continue
		}
		kept = append(kept, f)
	}
	out.Files = kept
	if len(out.Files) > 0 || loc.DirSyntax() {
		return out, nil
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

// unsafeRel says why rel cannot be written below a directory, or "".
func unsafeRel(rel string) string {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return "the key is not a relative path"
	}
	if strings.ContainsRune(rel, 0) {
		return "the key contains a NUL byte"
	}
	for _, e := range strings.Split(rel, "/") {
		switch e {
		case "":
			return "the key contains an empty path element (//)"
		case ".", "..":
			return fmt.Sprintf("the key contains a %q path element", e)
		}
	}
	return ""
}

// fileAncestor is the first proper ancestor of rel that is in files, or "".
func fileAncestor(rel string, files map[string]bool) string {
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && files[rel[:i]] {
			return rel[:i]
		}
	}
	return ""
}

// fetchStats counts a fetch.
type fetchStats struct {
	Files, Hits int
	Bytes       int64 // downloaded
}

// fetch makes sure every file is in the content cache, downloading the
// misses StageJobs at a time; a cached file of the wrong size is a miss.
func (s *stager) fetch(ctx context.Context, files []remoteFile) (fetchStats, error) {
	const op errs.Op = "runner.fetch"
	if err := os.MkdirAll(s.cacheDir, 0o755); err != nil {
		return fetchStats{}, errs.E(op, errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", s.cacheDir), err), err)
	}
	st := fetchStats{Files: len(files)}
	var plan obsclient.Plan
	queued := map[string]bool{}
	for _, f := range files {
		p := s.cachePath(f)
		if fi, err := os.Stat(p); err == nil && fi.Size() == f.Obj.Size {
			st.Hits++
			continue
		}
		if queued[p] {
			continue
		}
		queued[p] = true
		st.Bytes += f.Obj.Size
		plan.Transfers = append(plan.Transfers, obsclient.Transfer{
			Op:  obsclient.Download,
			Src: obsclient.Location{Bucket: f.Bucket, Key: f.Obj.Key}, Dst: obsclient.Location{Path: p},
			Size: f.Obj.Size, ModTime: f.Obj.LastModified, ETag: f.Obj.ETag,
		})
	}
	if len(plan.Transfers) == 0 {
		return st, nil
	}
	if _, err := s.client.Execute(ctx, plan, "downloaded", false); err != nil {
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		// The transfer engine's first failure names the object and the
		// S3 error; the cache path it was written to is no news to users.
		return st, errs.E(op, CodeDownload, "cannot download", innermost(err))
	}
	return st, nil
}

// place puts the cached files under dir: hard links (read-only data shared
// by every job) when link, else copies (code, which jobs may change). A
// hard link that cannot be made (another file system) falls back to a copy.
func (s *stager) place(files []remoteFile, dirs []string, dir string, link bool) error {
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
		src := s.cachePath(f)
		dst := filepath.Join(dir, filepath.FromSlash(f.Rel))
		if err := mkdir(filepath.Dir(dst)); err != nil {
			return err
		}
		if link {
			err := os.Link(src, dst)
			if errors.Is(err, os.ErrExist) {
				os.Remove(dst)
				err = os.Link(src, dst)
			}
			if err == nil {
				continue
			}
			if !errors.Is(err, syscall.EXDEV) && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EMLINK) {
				return errs.E(op, errs.IO, CodeCacheLink, because(fmt.Sprintf("cannot link %s to %s", src, dst), err), err)
			}
		}
		if err := copyFile(src, dst, f.Obj.LastModified); err != nil {
			return err
		}
	}
	return nil
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
}

func (r stageResult) String() string {
	return fmt.Sprintf("%d files (%d from the cache, %s downloaded) in %s",
		r.Files, r.Hits, obsclient.HumanBytes(r.Bytes), r.Elapsed.Round(time.Millisecond))
}

// stageInputs lists every input once, downloads what the cache misses and
// links the files into the input dirs. An input that is one object is
// recorded in its Channel.File.
func (s *stager) stageInputs(ctx context.Context, inputs []Channel) (stageResult, error) {
	start := time.Now()
	lists := make([]listing, len(inputs))
	var all []remoteFile
	for i, c := range inputs {
		l, err := s.list(ctx, c.Remote)
		if err != nil {
			return stageResult{}, err
		}
		if len(l.Files) == 0 && !l.Single {
			s.warn(fmt.Sprintf("input %s: there are no objects under %s", c.Name, c.Remote))
		}
		lists[i] = l
		all = append(all, l.Files...)
	}
	st, err := s.fetch(ctx, all)
	if err != nil {
		return stageResult{}, err
	}
	for i := range inputs {
		if lists[i].Single {
			inputs[i].File = lists[i].Files[0].Rel
		}
		if err := s.place(lists[i].Files, lists[i].Dirs, inputs[i].Dir, true); err != nil {
			return stageResult{}, err
		}
	}
	return stageResult{Files: st.Files, Hits: st.Hits, Bytes: st.Bytes, Elapsed: time.Since(start)}, nil
}

// stageCode downloads an OBS code dir into dir (copies, not links).
func (s *stager) stageCode(ctx context.Context, loc obsclient.Location, dir string) (stageResult, error) {
	start := time.Now()
	l, err := s.list(ctx, loc.AsDir())
	if err != nil {
		return stageResult{}, err
	}
	st, err := s.fetch(ctx, l.Files)
	if err != nil {
		return stageResult{}, err
	}
	if err := s.place(l.Files, l.Dirs, dir, false); err != nil {
		return stageResult{}, err
	}
	return stageResult{Files: st.Files, Hits: st.Hits, Bytes: st.Bytes, Elapsed: time.Since(start)}, nil
}
