package obsclient

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Defaults of Options.
const (
	DefaultJobs     = 16       // files in parallel
	DefaultPartJobs = 4        // parts in parallel per file
	DefaultPartSize = 16 << 20 // bytes; larger files go in parts
	// MaxPresign is the longest a presigned URL may be valid (SigV4).
	MaxPresign = 7 * 24 * time.Hour
)

// Options configure a Client.
type Options struct {
	Jobs     int   // files transferred in parallel (default DefaultJobs)
	PartJobs int   // parts of one file in parallel (default DefaultPartJobs)
	PartSize int64 // part size; files larger than it go in parts (default DefaultPartSize)
	// CheckpointDir holds the checkpoints of multipart uploads, so an
	// interrupted upload resumes; empty disables resuming.
	CheckpointDir string
	Reporter      Reporter // default Quiet()
	// Open opens a local file to upload (default os.Open). The runner
	// opens files user code wrote without following links.
	Open func(path string) (*os.File, error)
}

// Client runs OBS operations and transfers through an S3.
type Client struct {
	s3      S3
	opt     Options
	rep     Reporter
	resumed atomic.Int64 // bytes a resumed upload found already sent, this run
}

// New returns a Client over s3; zero options take their defaults, and a
// part size is raised to MinPartSize.
func New(s3 S3, opt Options) *Client {
	if opt.Jobs <= 0 {
		opt.Jobs = DefaultJobs
	}
	if opt.PartJobs <= 0 {
		opt.PartJobs = DefaultPartJobs
	}
	if opt.PartSize <= 0 {
		opt.PartSize = DefaultPartSize
	}
	opt.PartSize = min(max(opt.PartSize, MinPartSize), MaxPartSize)
	if opt.Reporter == nil {
		opt.Reporter = Quiet()
	}
	if opt.Open == nil {
		opt.Open = os.Open
	}
	return &Client{s3: s3, opt: opt, rep: opt.Reporter}
}

// needBucket checks that loc is in OBS.
func needBucket(op errs.Op, loc Location) error {
	if !loc.Remote() {
		return errs.E(op, errs.Invalid, errs.Hint("write it as obs://BUCKET/KEY"),
			fmt.Sprintf("%s is a local path, not an OBS URL", loc))
	}
	return nil
}

// needObject checks that loc names an object key, not a bucket or a
// directory prefix.
func needObject(op errs.Op, loc Location) error {
	if err := needBucket(op, loc); err != nil {
		return err
	}
	switch {
	case loc.Key == "":
		return errs.E(op, errs.Invalid, errs.Hint(fmt.Sprintf("list it with `atelier obs ls %s`", loc)),
			fmt.Sprintf("%s is a bucket, not an object", loc))
	case strings.HasSuffix(loc.Key, "/"):
		return errs.E(op, errs.Invalid, errs.Hint(fmt.Sprintf("list it with `atelier obs ls %s`", loc)),
			fmt.Sprintf("%s is a directory, not an object", loc))
	}
	return nil
}

// MakeBucket creates a bucket.
func (c *Client) MakeBucket(ctx context.Context, bucket string) error {
	if err := ValidateBucketName(bucket); err != nil {
		return err
	}
	return c.s3.MakeBucket(ctx, bucket)
}

// RemoveBucket deletes a bucket; with force it first deletes every object
// and aborts every incomplete multipart upload in it. It returns the number
// of objects deleted.
func (c *Client) RemoveBucket(ctx context.Context, bucket string, force bool) (int, error) {
	n := 0
	if force {
		entries, err := c.listEntries(ctx, bucket, "")
		if err != nil {
			return 0, err
		}
		keys := make([]string, len(entries))
		for i, e := range entries {
			keys[i] = e.Path
		}
		if err := c.s3.RemoveMany(ctx, bucket, keys); err != nil {
			return 0, err
		}
		n = len(keys)
		uploads, err := c.s3.ListUploads(ctx, bucket, "")
		if err != nil {
			return n, err
		}
		for _, u := range uploads {
			if err := c.s3.AbortMultipart(ctx, bucket, u.Key, u.UploadID); err != nil && !errs.Is(err, errs.NotFound) {
				return n, err
			}
		}
	}
	return n, c.s3.RemoveBucket(ctx, bucket)
}

// ListBuckets lists the buckets by name.
func (c *Client) ListBuckets(ctx context.Context) ([]Bucket, error) {
	bs, err := c.s3.ListBuckets(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(bs, func(a, b Bucket) int { return cmp.Compare(a.Name, b.Name) })
	return bs, nil
}

// List lists what is under loc by key: one level (objects and prefixes) or,
// with recursive, every object. A key without a trailing slash lists the
// "directory" of that name when it has objects, else the keys starting
// with it. Nothing under a key is an error whose hint names a key that
// differs only in case, if one exists.
func (c *Client) List(ctx context.Context, loc Location, recursive bool) ([]Object, error) {
	const op errs.Op = "obsclient.List"
	if err := needBucket(op, loc); err != nil {
		return nil, err
	}
	out, err := c.list(ctx, loc.Bucket, loc.AsDir().Key, recursive)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 && !loc.DirSyntax() {
		if out, err = c.list(ctx, loc.Bucket, loc.Key, recursive); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 && loc.Key != "" {
		return nil, errs.E(op, errs.NotFound, c.nearMiss(ctx, loc.Bucket, loc.Key),
			fmt.Sprintf("nothing found at %s", loc))
	}
	return out, nil
}

// list is one listing, sorted by key.
func (c *Client) list(ctx context.Context, bucket, prefix string, recursive bool) ([]Object, error) {
	var out []Object
	for o, err := range c.s3.List(ctx, bucket, ListOptions{Prefix: prefix, Recursive: recursive}) {
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Object) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

// Stat describes the object at loc.
func (c *Client) Stat(ctx context.Context, loc Location) (Object, error) {
	if err := needObject("obsclient.Stat", loc); err != nil {
		return Object{}, err
	}
	o, err := c.s3.Stat(ctx, loc.Bucket, loc.Key)
	if errs.Is(err, errs.NotFound) {
		return Object{}, c.missing(ctx, loc, "stat")
	}
	return o, err
}

// Cat writes the content of the object at loc to w and returns its size.
func (c *Client) Cat(ctx context.Context, loc Location, w io.Writer) (int64, error) {
	const op errs.Op = "obsclient.Cat"
	if err := needObject(op, loc); err != nil {
		return 0, err
	}
	body, _, err := c.s3.Get(ctx, loc.Bucket, loc.Key, 0, -1)
	if errs.Is(err, errs.NotFound) {
		return 0, c.missing(ctx, loc, "cat")
	}
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n, err := io.Copy(w, body)
	if err != nil {
		if isCanceled(err) {
			return n, err
		}
		return n, errs.E(op, errs.IO, fmt.Sprintf("cannot read %s: %v", loc, err))
	}
	return n, nil
}

// Presign returns a URL that reads the object at loc without credentials
// for expires (at most MaxPresign). The object must exist.
func (c *Client) Presign(ctx context.Context, loc Location, expires time.Duration) (string, error) {
	const op errs.Op = "obsclient.Presign"
	if expires < time.Second || expires > MaxPresign {
		return "", errs.E(op, errs.Invalid, fmt.Sprintf("expiry %s is not between 1s and 7 days (168h)", expires))
	}
	if _, err := c.Stat(ctx, loc); err != nil {
		return "", err
	}
	return c.s3.PresignGet(ctx, loc.Bucket, loc.Key, expires)
}

// Remove deletes the object at loc, or with recursive every object under
// loc taken as a directory (and the object named by loc itself, when there
// is one). It returns the number of objects deleted.
func (c *Client) Remove(ctx context.Context, loc Location, recursive bool) (int, error) {
	const op errs.Op = "obsclient.Remove"
	if err := needBucket(op, loc); err != nil {
		return 0, err
	}
	if !recursive {
		if loc.Key == "" {
			return 0, errs.E(op, errs.Invalid,
				errs.Hint(fmt.Sprintf("delete the bucket with `atelier obs rb %s`, or its objects with -r", loc)),
				fmt.Sprintf("%s is a bucket, not an object", loc))
		}
		if err := needObject(op, loc); err != nil {
			return 0, errs.E(op, err, hintRecursive)
		}
		if _, err := c.s3.Stat(ctx, loc.Bucket, loc.Key); err != nil {
			if errs.Is(err, errs.NotFound) {
				return 0, c.missing(ctx, loc, "rm")
			}
			return 0, err
		}
		return 1, c.s3.Remove(ctx, loc.Bucket, loc.Key)
	}
	entries, err := c.listEntries(ctx, loc.Bucket, loc.AsDir().Key)
	if err != nil {
		return 0, err
	}
	keys := make([]string, 0, len(entries)+1)
	for _, e := range entries {
		keys = append(keys, e.Path)
	}
	if !loc.DirSyntax() {
		if _, err := c.s3.Stat(ctx, loc.Bucket, loc.Key); err == nil {
			keys = append(keys, loc.Key)
		} else if !errs.Is(err, errs.NotFound) {
			return 0, err
		}
	}
	if len(keys) == 0 {
		if loc.Key == "" {
			return 0, nil
		}
		return 0, errs.E(op, errs.NotFound, c.nearMiss(ctx, loc.Bucket, loc.Key),
			fmt.Sprintf("nothing to delete at %s", loc))
	}
	if err := c.s3.RemoveMany(ctx, loc.Bucket, keys); err != nil {
		return 0, err
	}
	return len(keys), nil
}
