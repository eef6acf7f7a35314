package obsclient

import (
	"context"
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Locker is an S3 with object lock: buckets made with it, a bucket's
// configuration, and a version's retention and legal hold. The minio-go S3
// has it; commands that need it fail with Unsupported over one that does
// not.
type Locker interface {
	// MakeLockedBucket creates a bucket with object lock (and versioning)
	// enabled.
	MakeLockedBucket(ctx context.Context, bucket string) error
	// SetObjectLock enables object lock on a bucket (whose versioning is
	// Enabled) with the default retention of c (none when c.Mode is "").
	SetObjectLock(ctx context.Context, bucket string, c LockConfig) error
	// ObjectLock is the bucket's configuration; NotFound when the bucket
	// does not have object lock.
	ObjectLock(ctx context.Context, bucket string) (LockConfig, error)
	// SetRetention sets (r.Mode "": removes) the retention of a version
	// ("" for the latest); bypass sends x-amz-bypass-governance-retention.
	SetRetention(ctx context.Context, bucket, key, versionID string, r Retention, bypass bool) error
	// Retention is the retention of a version; NotFound when it has none.
	Retention(ctx context.Context, bucket, key, versionID string) (Retention, error)
	// SetLegalHold turns the legal hold of a version on or off.
	SetLegalHold(ctx context.Context, bucket, key, versionID string, on bool) error
	// LegalHold is the legal hold of a version ("ON" or "OFF"); NotFound
	// when it never had one.
	LegalHold(ctx context.Context, bucket, key, versionID string) (string, error)
}

// LockConfig is a bucket's object lock configuration: its default
// retention, Mode ("GOVERNANCE" or "COMPLIANCE"; "" for none) for Days or
// Years.
type LockConfig struct {
	Mode  string
	Days  int
	Years int
}

// Retention is a version's retention: Mode ("GOVERNANCE" or "COMPLIANCE")
// until Until; the zero value is none.
type Retention struct {
	Mode  string
	Until time.Time
}

// Locker returns the S3's Locker; Unsupported if it has none.
func (c *Client) Locker() (Locker, error) {
	l, ok := c.s3.(Locker)
	if !ok {
		return nil, errs.E("obsclient.Locker", errs.Unsupported, "this S3 connection cannot work with object lock")
	}
	return l, nil
}

func (m *minioS3) MakeLockedBucket(ctx context.Context, bucket string) error {
	return m.fail(m.core.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: Region, ObjectLocking: true}), bucket, "")
}

func (m *minioS3) SetObjectLock(ctx context.Context, bucket string, c LockConfig) error {
	if c.Mode == "" {
		return m.fail(m.core.SetObjectLockConfig(ctx, bucket, nil, nil, nil), bucket, "")
	}
	mode := minio.RetentionMode(c.Mode)
	validity, unit := uint(c.Days), minio.Days
	if c.Years != 0 {
		validity, unit = uint(c.Years), minio.Years
	}
	return m.fail(m.core.SetObjectLockConfig(ctx, bucket, &mode, &validity, &unit), bucket, "")
}

func (m *minioS3) ObjectLock(ctx context.Context, bucket string) (LockConfig, error) {
	_, mode, validity, unit, err := m.core.GetObjectLockConfig(ctx, bucket)
	if err != nil {
		return LockConfig{}, m.fail(err, bucket, "")
	}
	var c LockConfig
	if mode != nil && validity != nil && unit != nil {
		c.Mode = string(*mode)
		if *unit == minio.Years {
			c.Years = int(*validity)
		} else {
			c.Days = int(*validity)
		}
	}
	return c, nil
}

func (m *minioS3) SetRetention(ctx context.Context, bucket, key, versionID string, r Retention, bypass bool) error {
	opts := minio.PutObjectRetentionOptions{VersionID: versionID, GovernanceBypass: bypass}
	if r.Mode != "" {
		mode := minio.RetentionMode(r.Mode)
		until := r.Until.UTC()
		opts.Mode, opts.RetainUntilDate = &mode, &until
	}
	return m.fail(m.core.PutObjectRetention(ctx, bucket, key, opts), bucket, key)
}

func (m *minioS3) Retention(ctx context.Context, bucket, key, versionID string) (Retention, error) {
	mode, until, err := m.core.GetObjectRetention(ctx, bucket, key, versionID)
	if err != nil {
		return Retention{}, m.fail(err, bucket, key)
	}
	var r Retention
	if mode != nil {
		r.Mode = string(*mode)
	}
	if until != nil {
		r.Until = until.UTC()
	}
	return r, nil
}

func (m *minioS3) SetLegalHold(ctx context.Context, bucket, key, versionID string, on bool) error {
	status := minio.LegalHoldDisabled
	if on {
		status = minio.LegalHoldEnabled
	}
	return m.fail(m.core.PutObjectLegalHold(ctx, bucket, key, minio.PutObjectLegalHoldOptions{VersionID: versionID, Status: &status}), bucket, key)
}

func (m *minioS3) LegalHold(ctx context.Context, bucket, key, versionID string) (string, error) {
	status, err := m.core.GetObjectLegalHold(ctx, bucket, key, minio.GetObjectLegalHoldOptions{VersionID: versionID})
	if err != nil {
		return "", m.fail(err, bucket, key)
	}
	if status == nil {
		return "", nil
	}
	return string(*status), nil
}

// MakeLockedBucket creates a bucket with object lock enabled (and so
// versioning Enabled, for good).
func (c *Client) MakeLockedBucket(ctx context.Context, bucket string) error {
	if err := ValidateBucketName(bucket); err != nil {
		return err
	}
	l, err := c.Locker()
	if err != nil {
		return err
	}
	return l.MakeLockedBucket(ctx, bucket)
}

// SetObjectLock enables object lock on loc's bucket with the default
// retention cfg (none when cfg.Mode is "").
func (c *Client) SetObjectLock(ctx context.Context, loc Location, cfg LockConfig) error {
	const op errs.Op = "obsclient.SetObjectLock"
	if err := needBucket(op, loc); err != nil {
		return err
	}
	if cfg.Mode != "" && (cfg.Days > 0) == (cfg.Years > 0) {
		return errs.E(op, errs.Invalid, fmt.Sprintf("a default retention has Days or Years, one of them positive; got %d days and %d years", cfg.Days, cfg.Years))
	}
	l, err := c.Locker()
	if err != nil {
		return err
	}
	return l.SetObjectLock(ctx, loc.Bucket, cfg)
}

// ObjectLock is the object lock configuration of loc's bucket.
func (c *Client) ObjectLock(ctx context.Context, loc Location) (LockConfig, error) {
	if err := needBucket("obsclient.ObjectLock", loc); err != nil {
		return LockConfig{}, err
	}
	l, err := c.Locker()
	if err != nil {
		return LockConfig{}, err
	}
	return l.ObjectLock(ctx, loc.Bucket)
}

// SetRetention sets the retention of a version of the object at loc
// (versionID "" for the latest); r.Mode "" removes it.
func (c *Client) SetRetention(ctx context.Context, loc Location, versionID string, r Retention, bypass bool) error {
	if err := needObject("obsclient.SetRetention", loc); err != nil {
		return err
	}
	l, err := c.Locker()
	if err != nil {
		return err
	}
	return l.SetRetention(ctx, loc.Bucket, loc.Key, versionID, r, bypass)
}

// Retention is the retention of a version of the object at loc.
func (c *Client) Retention(ctx context.Context, loc Location, versionID string) (Retention, error) {
	if err := needObject("obsclient.Retention", loc); err != nil {
		return Retention{}, err
	}
	l, err := c.Locker()
	if err != nil {
		return Retention{}, err
	}
	return l.Retention(ctx, loc.Bucket, loc.Key, versionID)
}

// SetLegalHold turns the legal hold of a version of the object at loc on
// or off.
func (c *Client) SetLegalHold(ctx context.Context, loc Location, versionID string, on bool) error {
	if err := needObject("obsclient.SetLegalHold", loc); err != nil {
		return err
	}
	l, err := c.Locker()
	if err != nil {
		return err
	}
	return l.SetLegalHold(ctx, loc.Bucket, loc.Key, versionID, on)
}

// LegalHold is the legal hold of a version of the object at loc.
func (c *Client) LegalHold(ctx context.Context, loc Location, versionID string) (string, error) {
	if err := needObject("obsclient.LegalHold", loc); err != nil {
		return "", err
	}
	l, err := c.Locker()
	if err != nil {
		return "", err
	}
	return l.LegalHold(ctx, loc.Bucket, loc.Key, versionID)
}
