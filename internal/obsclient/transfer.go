package obsclient

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Copy copies src to dst (see PlanCopy for what goes where) and, with
// o.Move, deletes each source once it is copied. Without o.Force it refuses
// to replace existing local files.
func (c *Client) Copy(ctx context.Context, src, dst Location, o CopyOptions) (Summary, error) {
	kind, err := opFor(src, dst)
	if err != nil {
		return Summary{}, err
	}
	if err := c.checkBucket(ctx, dst); err != nil {
		return Summary{}, err
	}
	source, err := c.source(ctx, src, o.Recursive, o.All)
	if err != nil {
		return Summary{}, err
	}
	dest, err := c.dest(ctx, dst, !source.Dir)
	if err != nil {
		return Summary{}, err
	}
	plan, err := PlanCopy(source, dest, o)
	if err != nil {
		return Summary{}, err
	}
	if err := c.checkClobber(plan, o.Force); err != nil {
		return Summary{}, err
	}
	action := map[Op]string{Upload: "uploaded", Download: "downloaded", ServerCopy: "copied"}[kind]
	if o.Move {
		action = "moved"
	}
	return c.Execute(ctx, plan, action, o.Move)
}

// Sync makes the directory or prefix dst hold what the directory or prefix
// src holds, copying only what is missing or different (see PlanSync).
func (c *Client) Sync(ctx context.Context, src, dst Location, o SyncOptions) (Summary, error) {
	if _, err := opFor(src, dst); err != nil {
		return Summary{}, err
	}
	if err := c.checkBucket(ctx, dst); err != nil {
		return Summary{}, err
	}
	source, err := c.source(ctx, src, true, o.All)
	if err != nil {
		return Summary{}, err
	}
	existing, err := c.existing(ctx, dst)
	if err != nil {
		return Summary{}, err
	}
	if o.PartSize == 0 {
		o.PartSize = c.opt.PartSize
	}
	if o.ETags == nil {
		o.ETags = FileETags
	}
	plan, err := PlanSync(source, Dest{Loc: dst}, existing, o)
	if err != nil {
		return Summary{}, err
	}
	return c.Execute(ctx, plan, "synced", false)
}

// checkBucket fails early when the bucket of a destination in OBS is
// missing.
func (c *Client) checkBucket(ctx context.Context, dst Location) error {
	if !dst.Remote() {
		return nil
	}
	ok, err := c.s3.BucketExists(ctx, dst.Bucket)
	if err != nil {
		return err
	}
	if !ok {
		return S3Error("NoSuchBucket", "", dst.Bucket, "")
	}
	return nil
}

// checkClobber fails, unless force, when a download would replace local
// files.
func (c *Client) checkClobber(plan Plan, force bool) error {
	const op errs.Op = "obsclient.checkClobber"
	if force {
		return nil
	}
	var clash []string
	for _, t := range plan.Transfers {
		if t.Op != Download {
			continue
		}
		if _, err := os.Lstat(t.Dst.Path); err == nil {
			clash = append(clash, t.Dst.Path)
		}
	}
	switch len(clash) {
	case 0:
		return nil
	case 1:
		return errs.E(op, errs.Exists, errs.Hint("use -f (--force) to replace it"), fmt.Sprintf("%s already exists", clash[0]))
	}
	return errs.E(op, errs.Exists,
		errs.Hint("use -f (--force) to replace them, or `atelier obs sync` to copy only what changed"),
		fmt.Sprintf("%d local files already exist, e.g. %s", len(clash), clash[0]))
}

// Execute runs plan: its transfers, Jobs at a time and the largest first,
// then (when every transfer succeeded) its deletions. With move, each source
// is deleted once copied. action names what happened in the Summary. A
// failure does not stop the other transfers unless it would fail them too
// (bad credentials, unreachable endpoint, missing bucket); the error then
// counts the failures and describes the first.
func (c *Client) Execute(ctx context.Context, plan Plan, action string, move bool) (Summary, error) {
	const op errs.Op = "obsclient.Execute"
	for _, w := range plan.Warnings {
		c.rep.Warn(w)
	}
	start := time.Now()
	c.resumed.Store(0)
	sum := Summary{Action: action, Unchanged: plan.Unchanged, Skipped: plan.Skipped}
	todo := slices.Clone(plan.Transfers)
	slices.SortStableFunc(todo, func(a, b Transfer) int { return cmp.Compare(b.Size, a.Size) })
	var total int64
	for _, t := range todo {
		total += t.Size
	}
	c.rep.Begin(len(todo), total)

	run, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu       sync.Mutex
		failures []error
		wg       sync.WaitGroup
	)
	work := make(chan Transfer)
	for range min(c.opt.Jobs, len(todo)) {
		wg.Go(func() {
			for t := range work {
				err := c.transfer(run, t, move)
				mu.Lock()
				switch {
				case err == nil:
					sum.Files++
					sum.Bytes += t.Size
				case run.Err() != nil && isCanceled(err):
					// stopped by an interrupt or another transfer's fatal error
				default:
					failures = append(failures, errs.E(op, fmt.Sprintf("cannot %s %s to %s", t.Op, t.Src, t.Dst), err))
					if isFatal(err) {
						cancel(err)
					}
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, t := range todo {
		select {
		case work <- t:
		case <-run.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	sum.Elapsed = time.Since(start)

	if err := ctx.Err(); err != nil {
		c.stop()
		return sum, err
	}
	if len(failures) > 0 {
		c.stop()
		if len(failures) == 1 {
			return sum, failures[0]
		}
		return sum, errs.E(op, fmt.Sprintf("%d of %d transfers failed; the first", len(failures), len(todo)), failures[0])
	}
	sum.Resumed = c.resumed.Load()
	sum.Bytes -= sum.Resumed
	n, err := c.deleteAll(ctx, plan.Deletes)
	sum.Deleted = n
	sum.Elapsed = time.Since(start)
	if err != nil {
		c.stop()
		return sum, err
	}
	c.rep.Done(sum)
	return sum, nil
}

// stop tidies the reporter after a failed run.
func (c *Client) stop() {
	if s, ok := c.rep.(stopper); ok {
		s.stop()
	}
}

// transfer runs one transfer and, with move, deletes its source.
func (c *Client) transfer(ctx context.Context, t Transfer, move bool) error {
	var err error
	switch t.Op {
	case Upload:
		err = c.upload(ctx, t)
	case Download:
		err = c.download(ctx, t)
	case ServerCopy:
		if _, err = c.s3.Copy(ctx, t.Src.Bucket, t.Src.Key, t.Dst.Bucket, t.Dst.Key); err == nil {
			c.rep.Progress(t.Size)
		}
	default:
		err = errs.E("obsclient.transfer", errs.Internal, fmt.Sprintf("unknown transfer %s", t.Op))
	}
	if err != nil || !move {
		return err
	}
	if t.Src.Remote() {
		return c.s3.Remove(ctx, t.Src.Bucket, t.Src.Key)
	}
	if err := os.Remove(t.Src.Path); err != nil {
		return errs.E("obsclient.transfer", errs.IO, fmt.Sprintf("copied, but cannot delete %s: %s", t.Src.Path, errText(err)))
	}
	return nil
}

// deleteAll deletes locs (objects in batches per bucket, local files one by
// one) and returns how many it deleted.
func (c *Client) deleteAll(ctx context.Context, locs []Location) (int, error) {
	byBucket := map[string][]string{}
	var buckets []string
	n := 0
	for _, l := range locs {
		if l.Remote() {
			if _, ok := byBucket[l.Bucket]; !ok {
				buckets = append(buckets, l.Bucket)
			}
			byBucket[l.Bucket] = append(byBucket[l.Bucket], l.Key)
			continue
		}
		if err := os.Remove(l.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, errs.E("obsclient.delete", errs.IO, fmt.Sprintf("cannot delete %s: %s", l.Path, errText(err)))
		}
		n++
	}
	for _, b := range buckets {
		if err := c.s3.RemoveMany(ctx, b, byBucket[b]); err != nil {
			return n, err
		}
		n += len(byBucket[b])
	}
	return n, nil
}

// upload sends a local file: in one request up to the part size, in parts
// above it.
func (c *Client) upload(ctx context.Context, t Transfer) error {
	const op errs.Op = "obsclient.upload"
	f, err := c.opt.Open(t.Src.Path)
	if err != nil {
		var e *errs.Error
		if errors.As(err, &e) {
			return errs.E(op, err)
		}
		return errs.E(op, errs.IO, fmt.Sprintf("cannot read %s: %s", t.Src.Path, errText(err)))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot read %s: %s", t.Src.Path, errText(err)))
	}
	opts := PutOptions{ContentType: contentType(t.Src.Path)}
	if fi.Size() > c.opt.PartSize {
		return c.uploadParts(ctx, f, fi, t, opts)
	}
	body := newHashReader(io.NewSectionReader(f, 0, fi.Size()), c.rep.Progress)
	etag, err := c.s3.Put(ctx, t.Dst.Bucket, t.Dst.Key, body, fi.Size(), opts)
	if err != nil {
		body.unreport()
		return err
	}
	return checkETag(t.Dst.String(), etag, body.sum(fi.Size()))
}

// contentType guesses the MIME type of a file from its extension.
func contentType(p string) string {
	if t := mime.TypeByExtension(filepath.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// checkETag compares the ETag the server answered for what was sent with
// its MD5, when both are known and the ETag is a plain MD5.
func checkETag(what, etag string, sum []byte) error {
	etag = strings.ToLower(strings.Trim(etag, `"`))
	if sum == nil || !isMD5(etag) || etag == hex.EncodeToString(sum) {
		return nil
	}
	return errs.E("obsclient.checkETag", errs.IO, errs.Hint("run the command again"),
		fmt.Sprintf("%s was corrupted in transit: the server's ETag %s is not the MD5 %x of the data", what, etag, sum))
}

// download writes an object to a temporary file next to the destination,
// in one request up to the part size or in parallel ranges above it, then
// sets its mtime to the object's and renames it into place.
func (c *Client) download(ctx context.Context, t Transfer) (err error) {
	const op errs.Op = "obsclient.download"
	dir := filepath.Dir(t.Dst.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot create %s: %s", dir, errText(err)))
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(t.Dst.Path)+".atelier-*")
	if err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot write in %s: %s", dir, errText(err)))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if t.Size > c.opt.PartSize {
		err = c.downloadRanges(ctx, tmp, t)
	} else {
		err = c.downloadWhole(ctx, tmp, t)
	}
	if err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot write %s: %s", tmp.Name(), errText(err)))
	}
	if err := tmp.Close(); err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot write %s: %s", tmp.Name(), errText(err)))
	}
	if !t.ModTime.IsZero() {
		if err := os.Chtimes(tmp.Name(), t.ModTime, t.ModTime); err != nil {
			return errs.E(op, errs.IO, fmt.Sprintf("cannot set the time of %s: %s", tmp.Name(), errText(err)))
		}
	}
	if err := os.Rename(tmp.Name(), t.Dst.Path); err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot write %s: %s", t.Dst.Path, errText(err)))
	}
	return nil
}

// get reads a range of a transfer's source: only while its ETag is the
// listed one, when the transfer knows it and the S3 can say so (If-Match),
// so no byte of a changed object lands under the listed ETag's name.
func (c *Client) get(ctx context.Context, t Transfer, off, n int64) (io.ReadCloser, Object, error) {
	if t.VersionID != "" {
		vg, ok := c.s3.(VersionRangeGetter)
		if !ok {
			return nil, Object{}, errs.E("obsclient.download", errs.Unsupported,
				fmt.Sprintf("%s: this S3 connection cannot read version %s", t.Src, t.VersionID))
		}
		return vg.GetVersionMatch(ctx, t.Src.Bucket, t.Src.Key, t.VersionID, off, n, t.ETag)
	}
	if mg, ok := c.s3.(MatchGetter); ok && t.ETag != "" {
		return mg.GetMatch(ctx, t.Src.Bucket, t.Src.Key, off, n, t.ETag)
	}
	return c.s3.Get(ctx, t.Src.Bucket, t.Src.Key, off, n)
}

// downloadWhole reads the object in one request, checking size and MD5.
func (c *Client) downloadWhole(ctx context.Context, f *os.File, t Transfer) error {
	body, _, err := c.get(ctx, t, 0, -1)
	if err != nil {
		return err
	}
	defer body.Close()
	h := md5.New()
	pw := &progressWriter{report: c.rep.Progress}
	n, err := io.Copy(io.MultiWriter(f, h, pw), body)
	if err != nil {
		pw.unreport()
		if isCanceled(err) {
			return err
		}
		return errs.E("obsclient.download", errs.IO, fmt.Sprintf("cannot download %s: %v", t.Src, err))
	}
	if n != t.Size {
		pw.unreport()
		return errs.E("obsclient.download", errs.Conflict, errs.Hint("run the command again"),
			fmt.Sprintf("%s changed during the download (%d bytes read, %d expected)", t.Src, n, t.Size))
	}
	return checkETag(t.Src.String(), t.ETag, h.Sum(nil))
}

// downloadRanges reads the object in part-size ranges, PartJobs at a time,
// each written at its offset.
func (c *Client) downloadRanges(ctx context.Context, f *os.File, t Transfer) error {
	const op errs.Op = "obsclient.download"
	if err := f.Truncate(t.Size); err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot write %s: %s", f.Name(), errText(err)))
	}
	ps := c.opt.PartSize
	parts := int(ceilDiv(t.Size, ps))
	return parallel(ctx, parts, c.opt.PartJobs, func(ctx context.Context, i int) error {
		off := int64(i) * ps
		n := min(ps, t.Size-off)
		body, _, err := c.get(ctx, t, off, n)
		if err != nil {
			return err
		}
		defer body.Close()
		pw := &progressWriter{report: c.rep.Progress}
		got, err := io.Copy(io.MultiWriter(io.NewOffsetWriter(f, off), pw), io.LimitReader(body, n))
		if err != nil {
			pw.unreport()
			if isCanceled(err) {
				return err
			}
			return errs.E(op, errs.IO, fmt.Sprintf("cannot download %s: %v", t.Src, err))
		}
		if got != n {
			pw.unreport()
			return errs.E(op, errs.Conflict, errs.Hint("run the command again"),
				fmt.Sprintf("%s changed during the download (range at %d: %d bytes read, %d expected)", t.Src, off, got, n))
		}
		return nil
	})
}

// parallel runs fn for 0..n-1, jobs at a time; the first failure cancels
// the rest and is returned.
func parallel(ctx context.Context, n, jobs int, fn func(ctx context.Context, i int) error) error {
	run, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for range min(jobs, n) {
		wg.Go(func() {
			for i := range next {
				if err := fn(run, i); err != nil {
					once.Do(func() { first = err; cancel(err) })
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-run.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// hashReader reads a section of a file, hashing it with MD5 and reporting
// progress; rewinding it (a retried request) resets both.
type hashReader struct {
	r      *io.SectionReader
	h      hash.Hash
	n      int64 // bytes read since the last rewind
	broken bool  // sought elsewhere than the start: the hash is not of the data sent
	report func(int64)
	mu     sync.Mutex
}

func newHashReader(r *io.SectionReader, report func(int64)) *hashReader {
	return &hashReader{r: r, h: md5.New(), report: report}
}

func (r *hashReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.mu.Lock()
		r.h.Write(p[:n])
		r.n += int64(n)
		r.mu.Unlock()
		r.report(int64(n))
	}
	return n, err
}

func (r *hashReader) Seek(offset int64, whence int) (int64, error) {
	pos, err := r.r.Seek(offset, whence)
	if err != nil {
		return pos, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case pos == 0:
		r.report(-r.n)
		r.h.Reset()
		r.n = 0
		r.broken = false
	case pos != r.n:
		r.broken = true
	}
	return pos, nil
}

// sum is the MD5 of what was read, or nil unless exactly size bytes were
// read in order.
func (r *hashReader) sum(size int64) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken || r.n != size {
		return nil
	}
	return r.h.Sum(nil)
}

// unreport takes back the progress reported for a failed request.
func (r *hashReader) unreport() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report(-r.n)
	r.n = 0
	r.broken = true
}

// progressWriter reports what is written through it.
type progressWriter struct {
	report func(int64)
	n      int64
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.report(int64(len(p)))
	return len(p), nil
}

// unreport takes back the progress reported for a failed request.
func (w *progressWriter) unreport() {
	w.report(-w.n)
	w.n = 0
}
