package obs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// ACL permissions, as S3 names them.
const (
	PermFullControl = "FULL_CONTROL"
	PermRead        = "READ"
	PermWrite       = "WRITE"
	PermReadACP     = "READ_ACP"
	PermWriteACP    = "WRITE_ACP"
)

// The grantee groups of S3 ACLs.
const (
	GroupAllUsers           = "http://acs.amazonaws.com/groups/global/AllUsers"
	GroupAuthenticatedUsers = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
)

// Object ownership settings (?ownershipControls).
const (
	OwnershipBucketOwnerEnforced  = "BucketOwnerEnforced"
	OwnershipBucketOwnerPreferred = "BucketOwnerPreferred"
	OwnershipObjectWriter         = "ObjectWriter"
)

// Canned ACLs (x-amz-acl).
const (
	CannedPrivate                = "private"
	CannedPublicRead             = "public-read"
	CannedPublicReadWrite        = "public-read-write"
	CannedAuthenticatedRead      = "authenticated-read"
	CannedBucketOwnerRead        = "bucket-owner-read"
	CannedBucketOwnerFullControl = "bucket-owner-full-control"
)

// ACL actions, as policies name them.
const (
	ActionGetBucketACL               = "obs:GetBucketAcl"
	ActionPutBucketACL               = "obs:PutBucketAcl"
	ActionGetObjectACL               = "obs:GetObjectAcl"
	ActionPutObjectACL               = "obs:PutObjectAcl"
	ActionGetObjectVersionACL        = "obs:GetObjectVersionAcl"
	ActionPutObjectVersionACL        = "obs:PutObjectVersionAcl"
	ActionGetBucketOwnershipControls = "obs:GetBucketOwnershipControls"
	ActionPutBucketOwnershipControls = "obs:PutBucketOwnershipControls"
	ActionGetBucketPublicAccessBlock = "obs:GetBucketPublicAccessBlock"
	ActionPutBucketPublicAccessBlock = "obs:PutBucketPublicAccessBlock"
	ActionGetBucketPolicyStatus      = "obs:GetBucketPolicyStatus"
)

// Grant gives a grantee one permission. The grantee is a user (ID, the
// Atelier user id) or a group (URI: GroupAllUsers, GroupAuthenticatedUsers).
type Grant struct {
	ID         string `json:"ID,omitempty"`
	URI        string `json:"URI,omitempty"`
	Permission string `json:"Permission"`
}

// public reports whether the grant is to everyone or to every signed-in user.
func (g Grant) public() bool { return g.URI == GroupAllUsers || g.URI == GroupAuthenticatedUsers }

// ACL is an access control list: its owner (a user id) and its grants.
type ACL struct {
	Owner  string
	Grants []Grant
	Names  map[string]string // display names of the user ids in Owner and Grants
}

// named fills in the display names of a's users.
func (s *Service) named(ctx context.Context, a *ACL) *ACL {
	a.Names = map[string]string{}
	s.userName(ctx, a.Names, a.Owner)
	for _, g := range a.Grants {
		if g.ID != "" {
			s.userName(ctx, a.Names, g.ID)
		}
	}
	return a
}

// ACLRequest is the ACL a request asks for: a canned ACL (x-amz-acl),
// grants (x-amz-grant-* headers, or an AccessControlPolicy body, whose
// owner is Owner), or nothing (the zero value: the default, private).
type ACLRequest struct {
	Canned string
	Grants []Grant
	Owner  string // the Owner ID of an AccessControlPolicy body; "" for headers
	Body   bool   // the grants come from an AccessControlPolicy body
}

func (r ACLRequest) empty() bool { return r.Canned == "" && r.Grants == nil && !r.Body }

// PublicAccessBlock is a bucket's public access block configuration.
type PublicAccessBlock struct {
	BlockPublicAcls       bool
	IgnorePublicAcls      bool
	BlockPublicPolicy     bool
	RestrictPublicBuckets bool
}

// aclDoc is the stored form of an ACL's grants ("" for the owner alone).
type aclDoc struct {
	Grants []Grant `json:"Grants"`
}

func decodeACL(doc string) []Grant {
	if doc == "" {
		return nil
	}
	var d aclDoc
	if json.Unmarshal([]byte(doc), &d) != nil {
		return nil
	}
	return d.Grants
}

func encodeACL(grants []Grant) string {
	if len(grants) == 0 {
		return ""
	}
	b, _ := json.Marshal(aclDoc{Grants: grants})
	return string(b)
}

// withOwner is the grants of a stored ACL with the owner's FULL_CONTROL
// first, as S3 lists them.
func withOwner(owner string, grants []Grant) []Grant {
	out := []Grant{{ID: owner, Permission: PermFullControl}}
	for _, g := range grants {
		if g.ID == owner && g.Permission == PermFullControl {
			continue
		}
		out = append(out, g)
	}
	return out
}

func decodePAB(doc string) PublicAccessBlock {
	var p PublicAccessBlock
	if doc != "" {
		_ = json.Unmarshal([]byte(doc), &p)
	}
	return p
}

// aclsEnabled reports whether the bucket's ownership setting leaves ACLs in
// force (anything but BucketOwnerEnforced; buckets made before ownership
// controls have none, which is ObjectWriter).
func aclsEnabled(b *meta.Bucket) bool { return b.Ownership != OwnershipBucketOwnerEnforced }

// ownershipOf is the bucket's setting as S3 reports it ("" when none is set).
func ownershipOf(b *meta.Bucket) string { return b.Ownership }

// aclPermission is the ACL permission that grants action, and whether it
// is looked up in the object's ACL (true) or the bucket's (false); "" when
// no ACL permission grants the action.
func aclPermission(action string, onObject bool) (perm string, objectACL bool) {
	n, err := policy.NormalizeAction(action)
	if err != nil {
		return "", false
	}
	is := func(a string) bool { return strings.EqualFold(n, a) }
	switch {
	case onObject && (is(ActionGetObject) || is(ActionGetObjectVersion)):
		return PermRead, true
	case onObject && (is(ActionGetObjectACL) || is(ActionGetObjectVersionACL)):
		return PermReadACP, true
	case onObject && (is(ActionPutObjectACL) || is(ActionPutObjectVersionACL)):
		return PermWriteACP, true
	case is(ActionPutObject), is(ActionDeleteObject), is(ActionAbortMultipartUpload):
		return PermWrite, false
	case !onObject && (is(ActionListBucket) || is(ActionListBucketVersions) || is(ActionListBucketMultipartUploads)):
		return PermRead, false
	case !onObject && is(ActionGetBucketACL):
		return PermReadACP, false
	case !onObject && is(ActionPutBucketACL):
		return PermWriteACP, false
	}
	return "", false
}

// aclAllows reports whether a grant gives the caller (userID, "" for
// anonymous) perm; public grants are skipped when ignorePublic.
func aclAllows(grants []Grant, userID, perm string, ignorePublic bool) bool {
	if perm == "" {
		return false
	}
	for _, g := range grants {
		if g.Permission != perm && g.Permission != PermFullControl {
			continue
		}
		switch {
		case g.public() && ignorePublic:
		case g.URI == GroupAllUsers:
			return true
		case g.URI == GroupAuthenticatedUsers && userID != "":
			return true
		case g.ID != "" && g.ID == userID:
			return true
		}
	}
	return false
}

// UserResolver resolves a grantee id of an ACL — an Atelier user id or
// user name — to the user id (auth.Service has it). Without one, ids are
// taken as they are.
type UserResolver interface {
	UserID(ctx context.Context, idOrName string) (string, bool)
}

// cannedGrants is the grants of a canned ACL for an owner in a bucket owned
// by bucketOwner (besides the owner's FULL_CONTROL).
func cannedGrants(op errs.Op, canned, owner, bucketOwner string) ([]Grant, error) {
	switch canned {
	case CannedPrivate:
		return nil, nil
	case CannedPublicRead:
		return []Grant{{URI: GroupAllUsers, Permission: PermRead}}, nil
	case CannedPublicReadWrite:
		return []Grant{{URI: GroupAllUsers, Permission: PermRead}, {URI: GroupAllUsers, Permission: PermWrite}}, nil
	case CannedAuthenticatedRead:
		return []Grant{{URI: GroupAuthenticatedUsers, Permission: PermRead}}, nil
	case CannedBucketOwnerRead:
		if bucketOwner == owner {
			return nil, nil
		}
		return []Grant{{ID: bucketOwner, Permission: PermRead}}, nil
	case CannedBucketOwnerFullControl:
		if bucketOwner == owner {
			return nil, nil
		}
		return []Grant{{ID: bucketOwner, Permission: PermFullControl}}, nil
	}
	return nil, fail(op, CodeBadACL, fmt.Sprintf("x-amz-acl %q is not a canned ACL Atelier offers", canned),
		"use private, public-read, public-read-write, authenticated-read, bucket-owner-read or bucket-owner-full-control")
}

// ParseGrantHeader parses the value of an x-amz-grant-<perm> header, e.g.
// `id="alice", uri="http://acs.amazonaws.com/groups/global/AllUsers"`.
// Grantees by emailAddress are refused (Atelier users have no e-mail
// identity).
func ParseGrantHeader(perm, value string) ([]Grant, error) {
	const op errs.Op = "obs.ParseGrantHeader"
	var out []Grant
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if !ok || v == "" {
			return nil, fail(op, CodeBadACL, fmt.Sprintf("grantee %q of the %s grant is not type=\"value\"", item, perm),
				`name grantees as id="user id or name" or uri="http://acs.amazonaws.com/groups/global/AllUsers"`)
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "id":
			out = append(out, Grant{ID: v, Permission: perm})
		case "uri":
			if v != GroupAllUsers && v != GroupAuthenticatedUsers {
				return nil, fail(op, CodeBadACL, fmt.Sprintf("group %q is not one Atelier knows", v),
					"the groups are "+GroupAllUsers+" and "+GroupAuthenticatedUsers)
			}
			out = append(out, Grant{URI: v, Permission: perm})
		case "emailaddress":
			return nil, fail(op, CodeBadACL, fmt.Sprintf("grantee %q: Atelier does not grant by e-mail address", item),
				`grant to the user's id or name: id="alice"`)
		default:
			return nil, fail(op, CodeBadACL, fmt.Sprintf("grantee type %q of the %s grant is not id or uri", k, perm), "")
		}
	}
	return out, nil
}

// validPermission reports whether p is an S3 ACL permission.
func validPermission(p string) bool {
	return slices.Contains([]string{PermFullControl, PermRead, PermWrite, PermReadACP, PermWriteACP}, p)
}

// resolveACL turns what a request asks for into the stored ACL document of
// a resource owned by owner in bucket b, applying the bucket's ownership
// setting and public access block. onObject: the ACL of an object.
func (s *Service) resolveACL(ctx context.Context, op errs.Op, b *meta.Bucket, owner string, r ACLRequest, onObject bool) (string, error) {
	if r.empty() {
		return "", nil
	}
	if r.Canned != "" && (r.Grants != nil || r.Body) {
		return "", fail(op, CodeBadACLRequest, "the request gives both a canned ACL (x-amz-acl) and grants",
			"give either x-amz-acl, or x-amz-grant-* headers, or an AccessControlPolicy body")
	}
	var grants []Grant
	if r.Canned != "" {
		g, err := cannedGrants(op, r.Canned, owner, b.OwnerID)
		if err != nil {
			return "", err
		}
		grants = g
	} else {
		if r.Body && r.Owner != "" && r.Owner != owner {
			if id, ok := s.resolveUser(ctx, r.Owner); !ok || id != owner {
				return "", fail(op, CodeBadACL, fmt.Sprintf("the Owner ID %q of the AccessControlPolicy is not the owner", r.Owner),
					"read the ACL with GET ?acl and send its Owner back unchanged")
			}
		}
		for _, g := range r.Grants {
			if !validPermission(g.Permission) {
				return "", fail(op, CodeBadACL, fmt.Sprintf("permission %q is not an ACL permission", g.Permission),
					"permissions are FULL_CONTROL, READ, WRITE, READ_ACP and WRITE_ACP")
			}
			if g.ID != "" {
				id, ok := s.resolveUser(ctx, g.ID)
				if !ok {
					return "", fail(op, CodeBadACL, fmt.Sprintf("grantee id %q is not a user of this server", g.ID),
						"grant to a user's id or name (`atelier user list`)")
				}
				g.ID = id
			} else if g.URI != GroupAllUsers && g.URI != GroupAuthenticatedUsers {
				return "", fail(op, CodeBadACL, fmt.Sprintf("grantee %q is neither a user id nor a group Atelier knows", g.URI),
					"the groups are "+GroupAllUsers+" and "+GroupAuthenticatedUsers)
			}
			if !slices.Contains(grants, g) {
				grants = append(grants, g)
			}
		}
		grants = slices.DeleteFunc(grants, func(g Grant) bool { return g.ID == owner && g.Permission == PermFullControl })
	}
	if !aclsEnabled(b) {
		// With ACLs disabled only ACLs that give the bucket owner full
		// control are accepted, and they change nothing.
		if ownerOnly(grants, b.OwnerID) {
			return "", nil
		}
		return "", fail(op, CodeACLNotSupported, fmt.Sprintf("bucket %q has ObjectOwnership BucketOwnerEnforced: ACLs are disabled", b.Name),
			"grant access with a bucket policy, or enable ACLs with PUT ?ownershipControls (BucketOwnerPreferred or ObjectWriter)")
	}
	if slices.ContainsFunc(grants, Grant.public) && decodePAB(b.PublicAccessBlock).BlockPublicAcls {
		what := "bucket"
		if onObject {
			what = "object"
		}
		return "", fail(op, CodeAccessDenied, fmt.Sprintf("access denied: the public access block of bucket %q (BlockPublicAcls) refuses a public %s ACL", b.Name, what),
			"grant to users by id, or have the owner change the block (PUT ?publicAccessBlock)")
	}
	return encodeACL(grants), nil
}

// ownerOnly reports whether grants give no one but bucketOwner anything.
func ownerOnly(grants []Grant, bucketOwner string) bool {
	for _, g := range grants {
		if g.ID != bucketOwner {
			return false
		}
	}
	return true
}

func (s *Service) resolveUser(ctx context.Context, idOrName string) (string, bool) {
	if r, ok := s.users.(UserResolver); ok && r != nil {
		return r.UserID(ctx, idOrName)
	}
	return idOrName, true
}

// aclOf is the ACL of a resource owned by owner with the stored doc, as
// GET ?acl reports it: with ACLs disabled, the bucket owner's full control.
func aclOf(b *meta.Bucket, owner, doc string) *ACL {
	if !aclsEnabled(b) {
		return &ACL{Owner: b.OwnerID, Grants: withOwner(b.OwnerID, nil)}
	}
	return &ACL{Owner: owner, Grants: withOwner(owner, decodeACL(doc))}
}

// GetBucketACL returns the bucket's ACL.
func (s *Service) GetBucketACL(ctx context.Context, c *Caller, bucket string) (*ACL, error) {
	const op errs.Op = "obs.GetBucketAcl"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionGetBucketACL, "", nil); err != nil {
		return nil, err
	}
	return s.named(ctx, aclOf(b, b.OwnerID, b.ACL)), nil
}

// PutBucketACL replaces the bucket's ACL.
func (s *Service) PutBucketACL(ctx context.Context, c *Caller, bucket string, r ACLRequest) error {
	const op errs.Op = "obs.PutBucketAcl"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketACL, "", nil); err != nil {
		return err
	}
	if r.empty() {
		return fail(op, CodeBadACLRequest, "PUT ?acl needs an x-amz-acl header, x-amz-grant-* headers or an AccessControlPolicy body", "")
	}
	doc, err := s.resolveACL(ctx, op, b, b.OwnerID, r, false)
	if err != nil {
		return err
	}
	return s.setConfig(ctx, op, bucket, meta.BucketACL, doc)
}

// GetObjectACL returns the object's ACL.
func (s *Service) GetObjectACL(ctx context.Context, c *Caller, bucket, key string) (*ACL, error) {
	a, _, err := s.GetObjectVersionACL(ctx, c, bucket, key, "")
	return a, err
}

// GetObjectVersionACL returns the ACL of a version (version as S3 shows
// it; "" for the latest, with obs:GetObjectAcl; else
// obs:GetObjectVersionAcl) and the id of the version read ("" in a
// never-versioned bucket). Each version has its own ACL.
func (s *Service) GetObjectVersionACL(ctx context.Context, c *Caller, bucket, key, version string) (*ACL, string, error) {
	const op errs.Op = "obs.GetObjectAcl"
	action := ActionGetObjectACL
	if version != "" {
		action = ActionGetObjectVersionACL
	}
	b, o, err := s.aclObject(ctx, op, c, bucket, key, version, action)
	if err != nil {
		return nil, "", err
	}
	return s.named(ctx, aclOf(b, o.OwnerID, o.ACL)), shownVersion(o), nil
}

// PutObjectACL replaces the object's ACL.
func (s *Service) PutObjectACL(ctx context.Context, c *Caller, bucket, key string, r ACLRequest) error {
	_, err := s.PutObjectVersionACL(ctx, c, bucket, key, "", r)
	return err
}

// PutObjectVersionACL is PutObjectACL of a version ("" for the latest;
// else obs:PutObjectVersionAcl); it returns the version's id ("" in a
// never-versioned bucket). The other versions' ACLs do not change.
func (s *Service) PutObjectVersionACL(ctx context.Context, c *Caller, bucket, key, version string, r ACLRequest) (string, error) {
	const op errs.Op = "obs.PutObjectAcl"
	action := ActionPutObjectACL
	if version != "" {
		action = ActionPutObjectVersionACL
	}
	b, o, err := s.aclObject(ctx, op, c, bucket, key, version, action)
	if err != nil {
		return "", err
	}
	if r.empty() {
		return "", fail(op, CodeBadACLRequest, "PUT ?acl needs an x-amz-acl header, x-amz-grant-* headers or an AccessControlPolicy body", "")
	}
	doc, err := s.resolveACL(ctx, op, b, o.OwnerID, r, true)
	if err != nil {
		return "", err
	}
	if version == "" {
		_, err = s.store.SetObjectACL(ctx, bucket, key, doc)
	} else {
		_, err = s.store.SetObjectVersionACL(ctx, bucket, key, o.VersionID, doc)
	}
	switch {
	case errs.Is(err, errs.NotFound) && version != "":
		return "", noSuchVersion(op, bucket, key, version)
	case errs.Is(err, errs.NotFound):
		return "", noSuchKey(op, bucket, key)
	case err != nil:
		return "", storeErr(op, fmt.Sprintf("storing the ACL of object %q in bucket %q", key, bucket), err)
	}
	return shownVersion(o), nil
}

// aclObject loads the bucket and the version of the object that version
// names ("" for the latest) and authorizes action on it (that version's
// own ACL counts), then answers NoSuchKey, NoSuchVersion or, for a
// delete marker, MethodNotAllowed, as checkVersion does.
func (s *Service) aclObject(ctx context.Context, op errs.Op, c *Caller, bucket, key, version, action string) (*meta.Bucket, *meta.Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, nil, err
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, nil, err
	}
	o, err := s.findVersion(ctx, op, b, key, version)
	if err != nil {
		return nil, nil, err
	}
	var marker *meta.Object
	if o != nil && o.DeleteMarker {
		marker, o = o, nil
	}
	if err := s.checkWithObject(op, c, b, action, key, o, tagContext(nil, o, nil)); err != nil {
		return nil, nil, err
	}
	switch {
	case marker != nil:
		return nil, nil, markerError(op, bucket, key, version, marker)
	case o == nil && version != "":
		return nil, nil, noSuchVersion(op, bucket, key, version)
	case o == nil:
		return nil, nil, noSuchKey(op, bucket, key)
	}
	return b, o, nil
}

// GetBucketOwnershipControls returns the bucket's ObjectOwnership;
// OwnershipControlsNotFoundError when it has none.
func (s *Service) GetBucketOwnershipControls(ctx context.Context, c *Caller, bucket string) (string, error) {
	const op errs.Op = "obs.GetBucketOwnershipControls"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return "", err
	}
	if err := s.check(op, c, b, ActionGetBucketOwnershipControls, "", nil); err != nil {
		return "", err
	}
	if ownershipOf(b) == "" {
		return "", fail(op, CodeNoOwnershipControls, fmt.Sprintf("bucket %q has no ownership controls", bucket),
			"without them ACLs are enabled and the writer owns each object (ObjectWriter)")
	}
	return ownershipOf(b), nil
}

// PutBucketOwnershipControls sets the bucket's ObjectOwnership. Disabling
// ACLs (BucketOwnerEnforced) is refused while the bucket's ACL grants
// anyone but the owner.
func (s *Service) PutBucketOwnershipControls(ctx context.Context, c *Caller, bucket, ownership string) error {
	const op errs.Op = "obs.PutBucketOwnershipControls"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketOwnershipControls, "", nil); err != nil {
		return err
	}
	if err := ValidateOwnership(ownership); err != nil {
		return err
	}
	if ownership == OwnershipBucketOwnerEnforced && !ownerOnly(decodeACL(b.ACL), b.OwnerID) {
		return fail(op, CodeACLWithOwnership, fmt.Sprintf("bucket %q has an ACL that grants others access: ACLs cannot be disabled", bucket),
			"reset the bucket's ACL first (PUT ?acl with x-amz-acl: private)")
	}
	return s.setConfig(ctx, op, bucket, meta.BucketOwnership, ownership)
}

// ValidateOwnership checks an ObjectOwnership value.
func ValidateOwnership(ownership string) error {
	switch ownership {
	case OwnershipBucketOwnerEnforced, OwnershipBucketOwnerPreferred, OwnershipObjectWriter:
		return nil
	}
	return fail("obs.ValidateOwnership", CodeBadOwnership, fmt.Sprintf("ObjectOwnership %q is not valid", ownership),
		"it is BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter")
}

// DeleteBucketOwnershipControls removes the bucket's ownership controls:
// ACLs are enabled and the writer owns each object.
func (s *Service) DeleteBucketOwnershipControls(ctx context.Context, c *Caller, bucket string) error {
	const op errs.Op = "obs.DeleteBucketOwnershipControls"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketOwnershipControls, "", nil); err != nil {
		return err
	}
	return s.setConfig(ctx, op, bucket, meta.BucketOwnership, "")
}

// GetPublicAccessBlock returns the bucket's public access block;
// NoSuchPublicAccessBlockConfiguration when it has none.
func (s *Service) GetPublicAccessBlock(ctx context.Context, c *Caller, bucket string) (PublicAccessBlock, error) {
	const op errs.Op = "obs.GetPublicAccessBlock"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return PublicAccessBlock{}, err
	}
	if err := s.check(op, c, b, ActionGetBucketPublicAccessBlock, "", nil); err != nil {
		return PublicAccessBlock{}, err
	}
	if b.PublicAccessBlock == "" {
		return PublicAccessBlock{}, fail(op, CodeNoPublicAccessBlock, fmt.Sprintf("bucket %q has no public access block", bucket),
			"set one with PUT ?publicAccessBlock")
	}
	return decodePAB(b.PublicAccessBlock), nil
}

// PutPublicAccessBlock replaces the bucket's public access block.
func (s *Service) PutPublicAccessBlock(ctx context.Context, c *Caller, bucket string, p PublicAccessBlock) error {
	const op errs.Op = "obs.PutPublicAccessBlock"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketPublicAccessBlock, "", nil); err != nil {
		return err
	}
	doc, _ := json.Marshal(p)
	return s.setConfig(ctx, op, bucket, meta.BucketPublicAccessBlock, string(doc))
}

// DeletePublicAccessBlock removes the bucket's public access block.
func (s *Service) DeletePublicAccessBlock(ctx context.Context, c *Caller, bucket string) error {
	const op errs.Op = "obs.DeletePublicAccessBlock"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketPublicAccessBlock, "", nil); err != nil {
		return err
	}
	return s.setConfig(ctx, op, bucket, meta.BucketPublicAccessBlock, "")
}

// GetBucketPolicyStatus reports whether the bucket's policy is public (see
// PolicyIsPublic); a bucket without a policy is not public.
func (s *Service) GetBucketPolicyStatus(ctx context.Context, c *Caller, bucket string) (bool, error) {
	const op errs.Op = "obs.GetBucketPolicyStatus"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return false, err
	}
	if err := s.check(op, c, b, ActionGetBucketPolicyStatus, "", nil); err != nil {
		return false, err
	}
	if b.Policy == "" {
		return false, fail(op, CodeNoSuchBucketPolicy, fmt.Sprintf("bucket %q has no policy", bucket), "")
	}
	p, err := s.policies.get(b.Name, b.Policy)
	if err != nil {
		return false, nil
	}
	return PolicyIsPublic(p), nil
}

// fixedKeys are the condition keys whose fixed values make an Allow to
// everyone non-public, as S3 decides it ("The meaning of public" in the
// S3 user guide): the statement then grants only to requests from known
// sources or of known principals.
var fixedKeys = map[string]bool{
	"aws:sourceip": true, "aws:sourcearn": true, "aws:sourcevpc": true, "aws:sourcevpce": true,
	"aws:sourceowner": true, "aws:sourceaccount": true, "aws:userid": true, "aws:username": true,
	"atelier:username": true, "aws:principalarn": true, "aws:principalaccount": true, "aws:principalorgid": true,
	"s3:x-amz-server-side-encryption-aws-kms-key-id": true,
}

// PolicyIsPublic reports whether p is public as S3 decides it: some Allow
// statement grants to a wildcard principal ("*") without a condition that
// pins one of the fixed-value keys (aws:SourceIp with a CIDR block no wider
// than /8 for IPv4 or /32 for IPv6, aws:SourceArn, aws:SourceVpc(e),
// aws:SourceOwner, aws:SourceAccount, aws:userid, aws:PrincipalArn, …) to
// values without wildcards; NotPrincipal in an Allow is public too.
func PolicyIsPublic(p *policy.Policy) bool {
	if p == nil {
		return false
	}
	raw, err := p.MarshalJSON()
	if err != nil {
		return false
	}
	var doc struct {
		Statement []struct {
			Effect       string
			Principal    json.RawMessage
			NotPrincipal json.RawMessage
			Condition    map[string]map[string][]string
		}
	}
	if json.Unmarshal(raw, &doc) != nil {
		return false
	}
	for _, st := range doc.Statement {
		if st.Effect != "Allow" {
			continue
		}
		if len(st.NotPrincipal) == 0 && !strings.Contains(string(st.Principal), `"*"`) {
			continue
		}
		if !pinned(st.Condition) {
			return true
		}
	}
	return false
}

// pinned reports whether a condition block restricts a fixed-value key to
// values without wildcards.
func pinned(cond map[string]map[string][]string) bool {
	for operator, keys := range cond {
		o := strings.ToLower(operator)
		if strings.Contains(o, "not") || strings.HasSuffix(o, "ifexists") || strings.Contains(o, "null") {
			continue
		}
		for key, values := range keys {
			if !fixedKeys[strings.ToLower(key)] || len(values) == 0 {
				continue
			}
			ok := true
			for _, v := range values {
				if strings.ContainsAny(v, "*?") || (strings.ToLower(key) == "aws:sourceip" && !narrowCIDR(v)) {
					ok = false
				}
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// narrowCIDR reports whether v is an address or a block of at least /8
// (IPv4) or /32 (IPv6).
func narrowCIDR(v string) bool {
	if a, err := netip.ParseAddr(v); err == nil {
		return a.IsValid()
	}
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return false
	}
	if p.Addr().Is4() {
		return p.Bits() >= 8
	}
	return p.Bits() >= 32
}
