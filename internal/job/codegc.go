package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
)

// Code dirs uploaded by `job create` live under
// obs://atelier-system/code/<user id>/<upload id>/<name>/, the upload id a
// UUIDv7 (it carries the upload's time). One that no job references — its
// job was deleted, or never created: the spec was refused after the
// upload, the client died between the two — is deleted by the janitor once
// it is older than DefaultCodeGrace, which covers the moment between an
// upload and the create that references it.

// codeRoot is the prefix of uploaded code dirs in the platform bucket.
const codeRoot = "code/"

// DefaultCodeGrace is how old an upload no job references must be before
// it is deleted.
const DefaultCodeGrace = time.Hour

// CodeUpload is one uploaded code dir.
type CodeUpload struct {
	Prefix   string    // code/<user id>/<upload id>/
	Uploaded time.Time // zero when unknown
}

// uploadOf is the upload prefix (code/<user id>/<upload id>/) a code_dir
// key part lies in, "" when it is not an uploaded code dir.
func uploadOf(key string) string {
	rest, ok := strings.CutPrefix(key, codeRoot)
	if !ok {
		return ""
	}
	user, rest, ok1 := strings.Cut(rest, "/")
	upload, _, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || user == "" || upload == "" {
		return ""
	}
	return codeRoot + user + "/" + upload + "/"
}

// ExpiredCode decides which uploads to delete: those no job references
// (referenced holds the upload prefixes of every job's code_dir) that were
// uploaded more than grace before now. An upload of unknown age is kept.
// It is pure; the janitor does the listing and the deleting.
func ExpiredCode(uploads []CodeUpload, referenced map[string]bool, now time.Time, grace time.Duration) []string {
	var out []string
	for _, u := range uploads {
		if referenced[u.Prefix] || u.Uploaded.IsZero() || now.Sub(u.Uploaded) <= grace {
			continue
		}
		out = append(out, u.Prefix)
	}
	return out
}

// uploadTime is when an upload id was made: the time in its UUIDv7.
func uploadTime(id string) (time.Time, bool) {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return time.Time{}, false
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec), true
}

// collectCode deletes the uploaded code dirs no job references that are
// older than the grace period, and returns how many it deleted.
func (jn *Janitor) collectCode(ctx context.Context) (int, error) {
	const op errs.Op = "job.collectCode"
	sys := obs.As(jn.system)
	uploads, err := jn.codeUploads(ctx, sys)
	if errs.Is(err, errs.NotFound) {
		return 0, nil // no platform bucket yet: nothing was uploaded
	}
	if err != nil {
		return 0, errs.E(op, err)
	}
	if len(uploads) == 0 {
		return 0, nil
	}
	// The jobs are read after the listing: a job created meanwhile is
	// seen, and an upload made meanwhile is within the grace period.
	referenced := map[string]bool{}
	for off := 0; ; {
		page, total, err := jn.store.ListJobs(ctx, meta.JobFilter{}, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return 0, errs.E(op, err)
		}
		for _, raw := range page {
			r, err := decode(raw)
			if err != nil {
				return 0, err // never delete what an unreadable job may reference
			}
			if b, key, err := ParseOBSURL(r.job.Algorithm.CodeDir); err == nil && b == SystemBucket {
				referenced[uploadOf(key)] = true
			}
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			break
		}
	}
	n := 0
	var errList []error
	for _, p := range ExpiredCode(uploads, referenced, jn.now(), jn.o.CodeGrace) {
		if err := jn.deletePrefix(ctx, sys, p); err != nil {
			errList = append(errList, err)
			continue
		}
		n++
	}
	return n, errors.Join(errList...)
}

// codeUploads lists the uploaded code dirs with their upload times.
func (jn *Janitor) codeUploads(ctx context.Context, c *obs.Caller) ([]CodeUpload, error) {
	users, err := jn.prefixes(ctx, c, codeRoot)
	if err != nil {
		return nil, err
	}
	var out []CodeUpload
	for _, u := range users {
		ups, err := jn.prefixes(ctx, c, u)
		if err != nil {
			return nil, err
		}
		for _, p := range ups {
			cu := CodeUpload{Prefix: p}
			if t, ok := uploadTime(strings.TrimSuffix(strings.TrimPrefix(p, u), "/")); ok {
				cu.Uploaded = t
			} else if objs, _, err := jn.obs.ListAll(ctx, c, SystemBucket, p, 1); err == nil && len(objs) > 0 {
				cu.Uploaded = objs[0].LastModified // not made by UploadCode: its first object's age
			}
			out = append(out, cu)
		}
	}
	return out, nil
}

// prefixes lists the common prefixes one level under prefix in the
// platform bucket.
func (jn *Janitor) prefixes(ctx context.Context, c *obs.Caller, prefix string) ([]string, error) {
	var out []string
	o := obs.ListOptions{Prefix: prefix, Delimiter: "/", MaxKeys: obs.DefaultMaxKeys, V2: true}
	for {
		res, err := jn.obs.ListObjects(ctx, c, SystemBucket, o)
		if err != nil {
			return nil, err
		}
		out = append(out, res.CommonPrefixes...)
		if !res.IsTruncated {
			return out, nil
		}
		o.ContinuationToken = res.NextContinuationToken
	}
}

// deletePrefix deletes every object under prefix in the platform bucket.
func (jn *Janitor) deletePrefix(ctx context.Context, c *obs.Caller, prefix string) error {
	const op errs.Op = "job.deletePrefix"
	for {
		objs, truncated, err := jn.obs.ListAll(ctx, c, SystemBucket, prefix, obs.MaxDeleteKeys)
		if err != nil {
			return errs.E(op, err)
		}
		if len(objs) == 0 {
			return nil
		}
		keys := make([]string, len(objs))
		for i, o := range objs {
			keys[i] = o.Key
		}
		res, err := jn.obs.DeleteObjects(ctx, c, SystemBucket, keys)
		if err != nil {
			return errs.E(op, err)
		}
		for _, r := range res {
			if r.Err != nil {
				return errs.E(op, fmt.Sprintf("cannot delete obs://%s/%s", SystemBucket, r.Key), r.Err)
			}
		}
		if !truncated {
			return nil
		}
	}
}
