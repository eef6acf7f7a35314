package obsclient

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/text"
)

// uploadParts uploads f in parts, PartJobs at a time, resuming the upload
// its checkpoint names when the file is unchanged and the upload still
// exists (see the package comment).
func (c *Client) uploadParts(ctx context.Context, f *os.File, fi fs.FileInfo, t Transfer, opts PutOptions) error {
	const op errs.Op = "obsclient.uploadParts"
	size, bucket, key, dest := fi.Size(), t.Dst.Bucket, t.Dst.Key, t.Dst.String()
	source, err := filepath.Abs(t.Src.Path)
	if err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot resolve %s: %v", t.Src.Path, err))
	}
	cp, found := loadCheckpoint(c.opt.CheckpointDir, source, dest, c.rep.Warn)
	var done []checkpointPart
	if found {
		done, err = c.resume(ctx, f, fi, cp)
		if err != nil {
			return err
		}
	}
	if cp.data.UploadID == "" {
		id, err := c.s3.CreateMultipart(ctx, bucket, key, opts)
		if err != nil {
			return err
		}
		cp.start(checkpointData{Source: source, Dest: dest, Size: size, MtimeNs: fi.ModTime().UnixNano(),
			PartSize: PartSizeFor(size, c.opt.PartSize), UploadID: id})
	}
	id, ps := cp.data.UploadID, cp.data.PartSize
	count := int(ceilDiv(size, ps))
	have := map[int]bool{}
	var resumed int64
	for _, p := range done {
		have[p.Number] = true
		resumed += p.Size
	}
	if len(done) > 0 {
		c.rep.Warn(fmt.Sprintf("resuming the upload of %s: %d of %d parts (%s) already uploaded",
			t.Src, len(done), count, text.Bytes(resumed)))
		c.rep.Progress(resumed)
		c.resumed.Add(resumed)
	}
	var todo []int
	for n := 1; n <= count; n++ {
		if !have[n] {
			todo = append(todo, n)
		}
	}
	err = parallel(ctx, len(todo), c.opt.PartJobs, func(ctx context.Context, i int) error {
		n := todo[i]
		off := int64(n-1) * ps
		length := min(ps, size-off)
		body := newHashReader(io.NewSectionReader(f, off, length), c.rep.Progress)
		p, err := c.s3.UploadPart(ctx, bucket, key, id, n, body, length)
		if err != nil {
			body.unreport()
			return err
		}
		sum := body.sum(length)
		if err := checkETag(fmt.Sprintf("part %d of %s", n, dest), p.ETag, sum); err != nil {
			return err
		}
		cp.add(checkpointPart{Number: n, ETag: p.ETag, MD5: hexOrEmpty(sum), Size: length})
		return nil
	})
	if err != nil {
		cp.save()
		c.abandon(ctx, cp, bucket, key)
		return err
	}
	parts := cp.parts()
	complete := make([]Part, len(parts))
	md5s := make([][]byte, 0, len(parts))
	for i, p := range parts {
		complete[i] = Part{Number: p.Number, ETag: p.ETag, Size: p.Size}
		if s, err := hex.DecodeString(p.MD5); err == nil && len(s) == md5.Size {
			md5s = append(md5s, s)
		}
	}
	etag, err := c.s3.CompleteMultipart(ctx, bucket, key, id, complete)
	if err != nil {
		cp.save()
		if errs.Is(err, errs.NotFound) {
			cp.remove()
		} else {
			c.abandon(ctx, cp, bucket, key)
		}
		return err
	}
	cp.remove()
	etag = strings.ToLower(strings.Trim(etag, `"`))
	if _, ok := multipartParts(etag); ok && len(md5s) == len(parts) {
		if want := MultipartETag(md5s); etag != want {
			return errs.E(op, errs.IO, errs.Hint("run the command again"),
				fmt.Sprintf("%s was corrupted in transit: the server's ETag %s is not %s", dest, etag, want))
		}
	}
	return nil
}

// abortTimeout bounds the abort of an upload that cannot be resumed.
const abortTimeout = 30 * time.Second

// abandon aborts the failed upload of cp when nothing could resume it (no
// checkpoint file: resuming is disabled or the checkpoint could not be
// written), so that no incomplete upload is left behind on the server.
// It runs even when ctx was cancelled.
func (c *Client) abandon(ctx context.Context, cp *checkpoint, bucket, key string) {
	if cp.resumable() || cp.data.UploadID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	if err := c.s3.AbortMultipart(ctx, bucket, key, cp.data.UploadID); err != nil && !errs.Is(err, errs.NotFound) {
		c.rep.Warn(fmt.Sprintf("cannot abort the failed upload %s of %s: %s", cp.data.UploadID, cp.data.Dest, errs.UserMessage(err)))
	}
}

// AbortResumable aborts every multipart upload whose checkpoint is in
// CheckpointDir and deletes the checkpoints: nothing is left to resume and
// no incomplete upload stays on the server (a job's final sync that failed
// does this; its next attempt starts from a fresh tree). It returns how
// many uploads it aborted and the first failure; a checkpoint whose upload
// could not be aborted is kept.
func (c *Client) AbortResumable(ctx context.Context) (int, error) {
	const op errs.Op = "obsclient.AbortResumable"
	if c.opt.CheckpointDir == "" {
		return 0, nil
	}
	files, err := filepath.Glob(filepath.Join(c.opt.CheckpointDir, "*.json"))
	if err != nil {
		return 0, errs.E(op, errs.IO, err)
	}
	n := 0
	var first error
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			first = cmp.Or(first, errs.E(op, errs.IO, fmt.Sprintf("cannot read checkpoint %s: %s", f, errText(err))))
			continue
		}
		var d checkpointData
		if json.Unmarshal(b, &d) == nil && d.UploadID != "" {
			bucket, key := splitURL(d.Dest)
			err := c.s3.AbortMultipart(ctx, bucket, key, d.UploadID)
			switch {
			case err == nil:
				n++
			case !errs.Is(err, errs.NotFound):
				first = cmp.Or(first, errs.E(op, fmt.Sprintf("cannot abort the upload %s of %s", d.UploadID, d.Dest), err))
				continue
			}
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			first = cmp.Or(first, errs.E(op, errs.IO, fmt.Sprintf("cannot delete checkpoint %s: %s", f, errText(err))))
		}
	}
	return n, first
}

// resume checks a checkpoint against the file and the server and returns
// the parts that need not be uploaded again. A checkpoint of a changed file
// has its upload aborted; one whose upload is gone starts over; both leave
// cp without an upload ID.
func (c *Client) resume(ctx context.Context, f *os.File, fi fs.FileInfo, cp *checkpoint) ([]checkpointPart, error) {
	d := cp.data
	bucket, key := splitURL(d.Dest)
	if !cp.matches(fi.Size(), fi.ModTime()) {
		c.rep.Warn(fmt.Sprintf("%s changed since its interrupted upload; starting over", d.Source))
		if err := c.s3.AbortMultipart(ctx, bucket, key, d.UploadID); err != nil && !errs.Is(err, errs.NotFound) && !isCanceled(err) {
			c.rep.Warn(fmt.Sprintf("cannot abort the stale upload %s of %s: %s", d.UploadID, d.Dest, errs.UserMessage(err)))
		}
		cp.data.UploadID = ""
		return nil, nil
	}
	server, err := c.s3.ListParts(ctx, bucket, key, d.UploadID)
	if errs.Is(err, errs.NotFound) {
		c.rep.Warn(fmt.Sprintf("the interrupted upload of %s no longer exists on the server; starting over", d.Dest))
		cp.data.UploadID = ""
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	size, ps := fi.Size(), d.PartSize
	count := int(ceilDiv(size, ps))
	recorded := map[int]checkpointPart{}
	for _, p := range d.Parts {
		recorded[p.Number] = p
	}
	var keep []checkpointPart
	for _, sp := range server {
		if sp.Number < 1 || sp.Number > count {
			continue
		}
		want := min(ps, size-int64(sp.Number-1)*ps)
		etag := strings.ToLower(strings.Trim(sp.ETag, `"`))
		if sp.Size != want {
			continue
		}
		if r, ok := recorded[sp.Number]; ok && strings.EqualFold(r.ETag, etag) {
			keep = append(keep, r)
			continue
		}
		// Uploaded, but not yet checkpointed: keep it when it holds the
		// local bytes.
		if !isMD5(etag) {
			continue
		}
		sum, err := ETags(io.NewSectionReader(f, int64(sp.Number-1)*ps, want), []int64{0})
		if err != nil {
			return nil, errs.E("obsclient.resume", errs.IO, fmt.Sprintf("cannot read %s: %s", d.Source, errText(err)))
		}
		if sum[0] == etag {
			keep = append(keep, checkpointPart{Number: sp.Number, ETag: sp.ETag, MD5: etag, Size: want})
		}
	}
	slices.SortFunc(keep, func(a, b checkpointPart) int { return cmp.Compare(a.Number, b.Number) })
	cp.keep(keep)
	return keep, nil
}

// splitURL splits obs://bucket/key.
func splitURL(u string) (bucket, key string) {
	bucket, key, _ = strings.Cut(strings.TrimPrefix(u, "obs://"), "/")
	return bucket, key
}

func hexOrEmpty(b []byte) string {
	if b == nil {
		return ""
	}
	return hex.EncodeToString(b)
}
