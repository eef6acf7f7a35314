package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// CreateBucketOptions are the optional parts of CreateBucket.
type CreateBucketOptions struct {
	// Location is the requested region (S3's LocationConstraint); "" or the
	// server's region.
	Location string
	// ObjectOwnership (x-amz-object-ownership); "" is BucketOwnerEnforced,
	// ACLs disabled, as S3 creates buckets since April 2023.
	ObjectOwnership string
	// ACL is the bucket's ACL (x-amz-acl, x-amz-grant-*); with
	// BucketOwnerEnforced only private (or none) is accepted.
	ACL ACLRequest
	// ObjectLock (x-amz-bucket-object-lock-enabled: true) creates the
	// bucket with object lock, and so with versioning Enabled for good;
	// it needs obs:PutBucketObjectLockConfiguration and
	// obs:PutBucketVersioning too.
	ObjectLock bool
}

// CreateBucket creates a private bucket owned by the caller. Any
// authenticated user may create buckets unless a policy denies
// obs:CreateBucket.
func (s *Service) CreateBucket(ctx context.Context, c *Caller, name string, o CreateBucketOptions) (*meta.Bucket, error) {
	const op errs.Op = "obs.CreateBucket"
	if err := ValidateBucketName(name); err != nil {
		return nil, err
	}
	if o.Location != "" && o.Location != s.region {
		return nil, fail(op, CodeWrongRegion,
			fmt.Sprintf("cannot create bucket %q in region %q: this server is region %q", name, o.Location, s.region),
			fmt.Sprintf("leave the location constraint out or set it (and the client's region) to %q", s.region))
	}
	if o.ObjectOwnership == "" {
		o.ObjectOwnership = OwnershipBucketOwnerEnforced
	}
	if err := ValidateOwnership(o.ObjectOwnership); err != nil {
		return nil, err
	}
	b := &meta.Bucket{Name: name, OwnerID: c.userID(), Region: s.region, CreateTime: s.nowMS(), Ownership: o.ObjectOwnership}
	if err := s.check(op, c, b, ActionCreateBucket, "", nil); err != nil {
		return nil, err
	}
	acl, err := s.resolveACL(ctx, op, b, b.OwnerID, o.ACL, false)
	if errs.CodeOf(err) == CodeACLNotSupported {
		return nil, fail(op, CodeACLWithOwnership, fmt.Sprintf("bucket %q would have ObjectOwnership BucketOwnerEnforced (ACLs disabled) and an ACL granting access", name),
			"leave x-amz-acl out (grant access with a bucket policy), or create the bucket with x-amz-object-ownership: ObjectWriter or BucketOwnerPreferred")
	}
	if err != nil {
		return nil, err
	}
	if acl != "" {
		if err := s.check(op, c, b, ActionPutBucketACL, "", nil); err != nil {
			return nil, err
		}
	}
	b.ACL = acl
	if o.ObjectLock {
		for _, a := range []string{ActionPutBucketObjectLockConfiguration, ActionPutBucketVersioning} {
			if err := s.check(op, c, b, a, "", nil); err != nil {
				return nil, err
			}
		}
		enableLockAtCreate(b)
	}
	err = s.store.CreateBucket(ctx, b)
	if errs.Is(err, errs.Exists) {
		old, gerr := s.store.GetBucket(ctx, name)
		if gerr == nil && old.OwnerID == b.OwnerID {
			return nil, fail(op, CodeBucketOwnedByYou, fmt.Sprintf("you already own bucket %q", name), "use the bucket as it is")
		}
		return nil, fail(op, CodeBucketExists, fmt.Sprintf("bucket %q already exists and belongs to another user", name),
			"bucket names are shared by all users of the server: choose another name")
	}
	if err != nil {
		return nil, storeErr(op, fmt.Sprintf("creating bucket %q", name), err)
	}
	return b, nil
}

// DeleteBucket deletes an empty bucket.
func (s *Service) DeleteBucket(ctx context.Context, c *Caller, name string) error {
	const op errs.Op = "obs.DeleteBucket"
	b, err := s.bucket(ctx, op, name)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionDeleteBucket, "", nil); err != nil {
		return err
	}
	err = s.store.DeleteBucket(ctx, name)
	switch {
	case errs.Is(err, errs.Conflict):
		return fail(op, CodeBucketNotEmpty, fmt.Sprintf("bucket %q is not empty: it holds objects, object versions or delete markers, or unfinished multipart uploads", name),
			fmt.Sprintf("delete the objects first (`atelier obs rm -r obs://%s/`) and abort unfinished uploads", name))
	case errs.Is(err, errs.NotFound):
		return noSuchBucket(op, name)
	case err != nil:
		return storeErr(op, fmt.Sprintf("deleting bucket %q", name), err)
	}
	return nil
}

// HeadBucket returns the bucket if it exists and the caller may list it
// (S3's HeadBucket needs obs:ListBucket).
func (s *Service) HeadBucket(ctx context.Context, c *Caller, name string) (*meta.Bucket, error) {
	const op errs.Op = "obs.HeadBucket"
	b, err := s.bucket(ctx, op, name)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionListBucket, "", nil); err != nil {
		return nil, err
	}
	return b, nil
}

// GetBucketLocation returns the region of the bucket.
func (s *Service) GetBucketLocation(ctx context.Context, c *Caller, name string) (string, error) {
	const op errs.Op = "obs.GetBucketLocation"
	b, err := s.bucket(ctx, op, name)
	if err != nil {
		return "", err
	}
	if err := s.check(op, c, b, ActionGetBucketLocation, "", nil); err != nil {
		return "", err
	}
	if b.Region == "" {
		return s.region, nil
	}
	return b.Region, nil
}

// ListBuckets returns the caller's buckets by name; an admin sees every
// bucket.
func (s *Service) ListBuckets(ctx context.Context, c *Caller) ([]*meta.Bucket, error) {
	const op errs.Op = "obs.ListBuckets"
	if err := s.check(op, c, nil, ActionListAllMyBuckets, "", nil); err != nil {
		return nil, err
	}
	owner := c.userID()
	if sub := c.subject(); sub != nil && sub.Admin {
		owner = ""
	}
	bs, err := s.store.ListBuckets(ctx, owner)
	if err != nil {
		return nil, storeErr(op, "listing buckets", err)
	}
	return bs, nil
}

// GetBucketPolicy returns the bucket's policy document as it was put;
// NoSuchBucketPolicy if it has none.
func (s *Service) GetBucketPolicy(ctx context.Context, c *Caller, name string) (string, error) {
	const op errs.Op = "obs.GetBucketPolicy"
	b, err := s.bucket(ctx, op, name)
	if err != nil {
		return "", err
	}
	if err := s.check(op, c, b, ActionGetBucketPolicy, "", nil); err != nil {
		return "", err
	}
	if b.Policy == "" {
		return "", fail(op, CodeNoSuchBucketPolicy, fmt.Sprintf("bucket %q has no policy", name),
			"without a policy only the owner (and admins and users granted access by their own policies) may use the bucket")
	}
	return b.Policy, nil
}

// PutBucketPolicy validates doc as a bucket policy (both grammars; every
// statement needs a Principal; resources must be in this bucket) and
// replaces the bucket's policy with it.
func (s *Service) PutBucketPolicy(ctx context.Context, c *Caller, name string, doc []byte) error {
	const op errs.Op = "obs.PutBucketPolicy"
	b, err := s.bucket(ctx, op, name)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketPolicy, "", nil); err != nil {
		return err
	}
	if err := ValidateBucketPolicy(name, doc); err != nil {
		return err
	}
	if decodePAB(b.PublicAccessBlock).BlockPublicPolicy {
		if p, err := policy.Parse(doc, policy.Resource); err == nil && PolicyIsPublic(p) {
			return fail(op, CodeAccessDenied, fmt.Sprintf("access denied: the public access block of bucket %q (BlockPublicPolicy) refuses a public bucket policy", name),
				"grant to named users (Principal {\"AWS\": [\"user/name\"]}) or pin aws:SourceIp; or have the owner change the block (PUT ?publicAccessBlock)")
		}
	}
	return s.setConfig(ctx, op, name, meta.BucketPolicy, string(bytes.TrimSpace(doc)))
}

// ValidateBucketPolicy checks doc as the policy of bucket name, as
// PutBucketPolicy does before it stores one: both grammars, every statement
// with a Principal, every resource in this bucket. It stores nothing.
func ValidateBucketPolicy(name string, doc []byte) error {
	const op errs.Op = "obs.ValidateBucketPolicy"
	p, err := policy.Parse(doc, policy.Resource)
	if err != nil {
		return fail(op, CodeMalformedPolicy, fmt.Sprintf("invalid policy for bucket %q", name), "", err)
	}
	return checkPolicyResources(op, p, name)
}

// DeleteBucketPolicy removes the bucket's policy; removing none is not an
// error.
func (s *Service) DeleteBucketPolicy(ctx context.Context, c *Caller, name string) error {
	const op errs.Op = "obs.DeleteBucketPolicy"
	b, err := s.bucket(ctx, op, name)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionDeleteBucketPolicy, "", nil); err != nil {
		return err
	}
	return s.setConfig(ctx, op, name, meta.BucketPolicy, "")
}

func (s *Service) setConfig(ctx context.Context, op errs.Op, name string, which meta.BucketConfig, doc string) error {
	err := s.store.SetBucketConfig(ctx, name, which, doc)
	if errs.Is(err, errs.NotFound) {
		return noSuchBucket(op, name)
	}
	if err != nil {
		return storeErr(op, fmt.Sprintf("storing the configuration of bucket %q", name), err)
	}
	return nil
}

// checkPolicyResources refuses a bucket policy whose statements name
// another bucket: such a statement could never apply and is a mistake.
func checkPolicyResources(op errs.Op, p *policy.Policy, bucket string) error {
	raw, err := p.MarshalJSON()
	if err != nil {
		return nil
	}
	var doc struct {
		Statement []struct {
			Resource []string
		}
	}
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	for i, st := range doc.Statement {
		for _, r := range st.Resource {
			if r == "*" {
				continue
			}
			rest, ok := strings.CutPrefix(r, "obs:::")
			name, _, _ := strings.Cut(rest, "/")
			if ok && (name == bucket || strings.ContainsAny(name, "*?$")) {
				continue
			}
			return fail(op, CodeMalformedPolicy,
				fmt.Sprintf("invalid policy for bucket %q: Statement[%d].Resource %q is not in this bucket", bucket, i, r),
				fmt.Sprintf("a bucket policy names the bucket (obs:::%[1]s or arn:aws:s3:::%[1]s) and its objects (obs:::%[1]s/prefix/*)", bucket))
		}
	}
	return nil
}
