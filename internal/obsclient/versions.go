package obsclient

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/minio/minio-go/v7"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Versioner is an S3 with bucket versioning: the state of a bucket,
// listing versions, reading and deleting one version. The minio-go S3 has
// it; commands that need it fail with Unsupported over one that does not.
type Versioner interface {
	// SetVersioning sets the bucket's state: enabled, or suspended.
	SetVersioning(ctx context.Context, bucket string, enabled bool) error
	// Versioning is the bucket's state: "" (never versioned), "Enabled"
	// or "Suspended".
	Versioning(ctx context.Context, bucket string) (string, error)
	// ListVersions yields the versions and delete markers under prefix,
	// keys in order and each key's newest first.
	ListVersions(ctx context.Context, bucket, prefix string, recursive bool) ([]Version, error)
	// GetVersion reads one version of a key.
	GetVersion(ctx context.Context, bucket, key, versionID string) (io.ReadCloser, Object, error)
	// RemoveVersion deletes one version of a key for good.
	RemoveVersion(ctx context.Context, bucket, key, versionID string) error
}

// Version is a version (or a delete marker) of an object, or with Prefix a
// common prefix of a listing that is not recursive.
type Version struct {
	Object
	VersionID    string
	IsLatest     bool
	DeleteMarker bool
}

// Versioner returns the S3's Versioner; Unsupported if it has none.
func (c *Client) Versioner() (Versioner, error) {
	v, ok := c.s3.(Versioner)
	if !ok {
		return nil, errs.E("obsclient.Versioner", errs.Unsupported, "this S3 connection cannot work with versions")
	}
	return v, nil
}

func (m *minioS3) SetVersioning(ctx context.Context, bucket string, enabled bool) error {
	var err error
	if enabled {
		err = m.core.EnableVersioning(ctx, bucket)
	} else {
		err = m.core.SuspendVersioning(ctx, bucket)
	}
	return m.fail(err, bucket, "")
}

func (m *minioS3) Versioning(ctx context.Context, bucket string) (string, error) {
	c, err := m.core.GetBucketVersioning(ctx, bucket)
	return c.Status, m.fail(err, bucket, "")
}

func (m *minioS3) ListVersions(ctx context.Context, bucket, prefix string, recursive bool) ([]Version, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out []Version
	for oi := range m.core.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: recursive, WithVersions: true}) {
		if oi.Err != nil {
			return nil, m.fail(oi.Err, bucket, prefix)
		}
		v := Version{Object: objectOf(oi), VersionID: oi.VersionID, IsLatest: oi.IsLatest, DeleteMarker: oi.IsDeleteMarker}
		if !recursive && oi.VersionID == "" && oi.ETag == "" && oi.LastModified.IsZero() {
			v = Version{Object: Object{Key: oi.Key, Prefix: true}}
		}
		out = append(out, v)
	}
	// Common prefixes may come after the versions of their page.
	slices.SortStableFunc(out, func(a, b Version) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

func (m *minioS3) GetVersion(ctx context.Context, bucket, key, versionID string) (io.ReadCloser, Object, error) {
	body, oi, _, err := m.core.GetObject(ctx, bucket, key, minio.GetObjectOptions{VersionID: versionID})
	if err != nil {
		return nil, Object{}, m.fail(err, bucket, key)
	}
	return body, objectOf(oi), nil
}

func (m *minioS3) RemoveVersion(ctx context.Context, bucket, key, versionID string) error {
	return m.fail(m.core.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{VersionID: versionID}), bucket, key)
}

// ListVersions lists the versions under loc (taken as a directory, or as a
// key prefix when nothing is under the directory), one level deep unless
// recursive.
func (c *Client) ListVersions(ctx context.Context, loc Location, recursive bool) ([]Version, error) {
	const op errs.Op = "obsclient.ListVersions"
	if err := needBucket(op, loc); err != nil {
		return nil, err
	}
	v, err := c.Versioner()
	if err != nil {
		return nil, err
	}
	out, err := v.ListVersions(ctx, loc.Bucket, loc.AsDir().Key, recursive)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 && !loc.DirSyntax() {
		if out, err = v.ListVersions(ctx, loc.Bucket, loc.Key, recursive); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 && loc.Key != "" {
		return nil, errs.E(op, errs.NotFound, fmt.Sprintf("no version found at %s", loc))
	}
	return out, nil
}

// GetVersion writes version versionID of the object at loc to w and
// returns its size.
func (c *Client) GetVersion(ctx context.Context, loc Location, versionID string, w io.Writer) (int64, error) {
	const op errs.Op = "obsclient.GetVersion"
	if err := needObject(op, loc); err != nil {
		return 0, err
	}
	v, err := c.Versioner()
	if err != nil {
		return 0, err
	}
	body, _, err := v.GetVersion(ctx, loc.Bucket, loc.Key, versionID)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n, err := io.Copy(w, body)
	if err != nil && !isCanceled(err) {
		return n, errs.E(op, errs.IO, fmt.Sprintf("cannot read version %s of %s: %v", versionID, loc, err))
	}
	return n, err
}

// RemoveVersion deletes version versionID of the object at loc for good.
func (c *Client) RemoveVersion(ctx context.Context, loc Location, versionID string) error {
	const op errs.Op = "obsclient.RemoveVersion"
	if err := needObject(op, loc); err != nil {
		return err
	}
	v, err := c.Versioner()
	if err != nil {
		return err
	}
	return v.RemoveVersion(ctx, loc.Bucket, loc.Key, versionID)
}

// SetVersioning enables or suspends the versioning of loc's bucket.
func (c *Client) SetVersioning(ctx context.Context, loc Location, enabled bool) error {
	if err := needBucket("obsclient.SetVersioning", loc); err != nil {
		return err
	}
	v, err := c.Versioner()
	if err != nil {
		return err
	}
	return v.SetVersioning(ctx, loc.Bucket, enabled)
}

// Versioning is the versioning state of loc's bucket ("" if never versioned).
func (c *Client) Versioning(ctx context.Context, loc Location) (string, error) {
	if err := needBucket("obsclient.Versioning", loc); err != nil {
		return "", err
	}
	v, err := c.Versioner()
	if err != nil {
		return "", err
	}
	return v.Versioning(ctx, loc.Bucket)
}
