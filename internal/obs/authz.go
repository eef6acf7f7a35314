package obs

import (
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Storage actions, as policies name them.
const (
	ActionCreateBucket               = "obs:CreateBucket"
	ActionDeleteBucket               = "obs:DeleteBucket"
	ActionListBucket                 = "obs:ListBucket"
	ActionListAllMyBuckets           = "obs:ListAllMyBuckets"
	ActionGetBucketLocation          = "obs:GetBucketLocation"
	ActionGetBucketPolicy            = "obs:GetBucketPolicy"
	ActionPutBucketPolicy            = "obs:PutBucketPolicy"
	ActionDeleteBucketPolicy         = "obs:DeleteBucketPolicy"
	ActionGetLifecycleConfiguration  = "obs:GetLifecycleConfiguration"
	ActionPutLifecycleConfiguration  = "obs:PutLifecycleConfiguration"
	ActionGetBucketCORS              = "obs:GetBucketCORS"
	ActionPutBucketCORS              = "obs:PutBucketCORS"
	ActionGetObject                  = "obs:GetObject"
	ActionPutObject                  = "obs:PutObject"
	ActionDeleteObject               = "obs:DeleteObject"
	ActionAbortMultipartUpload       = "obs:AbortMultipartUpload"
	ActionListMultipartUploadParts   = "obs:ListMultipartUploadParts"
	ActionListBucketMultipartUploads = "obs:ListBucketMultipartUploads"
	ActionGetObjectTagging           = "obs:GetObjectTagging"
	ActionPutObjectTagging           = "obs:PutObjectTagging"
	ActionDeleteObjectTagging        = "obs:DeleteObjectTagging"
	ActionGetBucketTagging           = "obs:GetBucketTagging"
	ActionPutBucketTagging           = "obs:PutBucketTagging"
	ActionGetObjectAttributes        = "obs:GetObjectAttributes"
	ActionPutBucketVersioning        = "obs:PutBucketVersioning"
	ActionGetBucketVersioning        = "obs:GetBucketVersioning"
	ActionListBucketVersions         = "obs:ListBucketVersions"
	ActionGetObjectVersion           = "obs:GetObjectVersion"
	ActionDeleteObjectVersion        = "obs:DeleteObjectVersion"
	ActionGetObjectVersionTagging    = "obs:GetObjectVersionTagging"
	ActionPutObjectVersionTagging    = "obs:PutObjectVersionTagging"
	ActionDeleteObjectVersionTagging = "obs:DeleteObjectVersionTagging"
	ActionGetObjectVersionAttributes = "obs:GetObjectVersionAttributes"
)

// Caller is who makes a request: an authenticated principal, or nobody
// (anonymous), and where the request came from. A nil *Caller is an
// anonymous caller of unknown address.
type Caller struct {
	Principal *auth.Principal // nil: anonymous
	SourceIP  string          // for aws:SourceIp; "" falls back to Principal.SourceIP
	Secure    bool            // the request came over TLS (aws:SecureTransport)
}

// Anonymous is an unauthenticated caller from sourceIP ("" if unknown).
func Anonymous(sourceIP string) *Caller { return &Caller{SourceIP: sourceIP} }

// As is the caller p (nil: anonymous).
func As(p *auth.Principal) *Caller {
	if p == nil {
		return &Caller{}
	}
	return &Caller{Principal: p, SourceIP: p.SourceIP}
}

func (c *Caller) anonymous() bool {
	return c == nil || c.Principal == nil || c.Principal.User == nil
}

// userID is the caller's user id, "" when anonymous.
func (c *Caller) userID() string {
	if c.anonymous() {
		return ""
	}
	return c.Principal.User.ID
}

// String names the caller in messages.
func (c *Caller) String() string {
	if c.anonymous() {
		return "anonymous caller"
	}
	return fmt.Sprintf("user %q", c.Principal.User.Name)
}

func (c *Caller) subject() *auth.Subject {
	if c.anonymous() {
		return nil
	}
	s := c.Principal.Subject
	if s.Name == "" {
		s.Name = c.Principal.User.Name
	}
	if c.Principal.User.Admin {
		s.Admin = true
	}
	return &s
}

// context builds the condition context of a request by c, plus extra keys.
func (c *Caller) context(extra map[string][]string) map[string][]string {
	ctx := map[string][]string{"aws:securetransport": {"false"}}
	if c != nil {
		if c.Secure {
			ctx["aws:securetransport"] = []string{"true"}
		}
		ip := c.SourceIP
		if ip == "" && c.Principal != nil {
			ip = c.Principal.SourceIP
		}
		if ip != "" {
			ctx["aws:sourceip"] = []string{ip}
		}
	}
	if c.anonymous() {
		ctx["aws:principaltype"] = []string{"Anonymous"}
	} else {
		u := c.Principal.User
		ctx["aws:username"] = []string{u.Name}
		ctx["atelier:username"] = []string{u.Name}
		ctx["aws:userid"] = []string{u.ID}
		ctx["aws:principaltype"] = []string{"User"}
	}
	for k, v := range extra {
		ctx[k] = v
	}
	return ctx
}

// AuthzInput is everything the authorization decision looks at.
type AuthzInput struct {
	Subject      *auth.Subject // the caller's name, admin flag, attached and session policies; nil: anonymous
	UserID       string        // the caller's user id; "" when anonymous
	BucketOwner  string        // owner id of the bucket acted on; for CreateBucket and ListAllMyBuckets, the caller's own id
	BucketPolicy *policy.Policy
	Action       string              // e.g. "obs:GetObject"
	Resource     string              // "obs:::bucket" or "obs:::bucket/key"; "" for actions without a resource
	Context      map[string][]string // condition keys (aws:SourceIp, s3:prefix, …)

	// ACLs, where the bucket has them enabled (nil otherwise): the grants
	// of the bucket's ACL and, for an action on an object, of the object's
	// (its owner's FULL_CONTROL included).
	BucketACL, ObjectACL []Grant
	// IgnorePublicACLs skips grants to AllUsers and AuthenticatedUsers (the
	// public access block's IgnorePublicAcls).
	IgnorePublicACLs bool
	// RestrictPublicPolicy: the bucket policy is public and the public
	// access block's RestrictPublicBuckets is set, so the policy's Allows
	// grant nothing (its Denys still apply); only the owner and admins
	// keep access.
	RestrictPublicPolicy bool
}

// Reason says which rule made a Decision.
type Reason int

// Reasons of decisions, in the order the rules are applied.
const (
	ReasonNoGrant            Reason = iota // denied: nothing grants the action
	ReasonBucketPolicyDeny                 // denied: an explicit Deny in the bucket policy
	ReasonIdentityPolicyDeny               // denied: an explicit Deny in a policy attached to the user
	ReasonSessionPolicy                    // denied: the session policy of temporary credentials does not allow it
	ReasonAdmin                            // allowed: the caller is an admin
	ReasonOwner                            // allowed: the caller owns the bucket
	ReasonIdentityPolicy                   // allowed: a policy attached to the user
	ReasonBucketPolicy                     // allowed: the bucket policy
	ReasonACL                              // allowed: a grant of the bucket's or the object's ACL
)

func (r Reason) String() string {
	switch r {
	case ReasonNoGrant:
		return "no policy grants it"
	case ReasonBucketPolicyDeny:
		return "the bucket policy denies it"
	case ReasonIdentityPolicyDeny:
		return "a policy attached to the user denies it"
	case ReasonSessionPolicy:
		return "the session policy of the temporary credentials does not allow it"
	case ReasonAdmin:
		return "the caller is an admin"
	case ReasonOwner:
		return "the caller owns the bucket"
	case ReasonIdentityPolicy:
		return "a policy attached to the user allows it"
	case ReasonBucketPolicy:
		return "the bucket policy allows it"
	case ReasonACL:
		return "an ACL grant allows it"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Decision is the outcome of Authorize.
type Decision struct {
	Allowed bool
	Reason  Reason
}

// Authorize is the authorization decision for storage, a pure function:
//
//  1. an explicit Deny in the bucket policy wins — except that the bucket
//     owner and admins may always read, replace and delete the bucket
//     policy, so that no policy locks them out of their bucket;
//  2. an explicit Deny in a policy attached to the user wins;
//  3. temporary credentials' session policy must Allow the request;
//  4. admins are allowed;
//  5. the owner of the bucket is allowed on it and its objects (buckets are
//     private by default);
//  6. an Allow in a policy attached to the user, or in the bucket policy for
//     a matching Principal (unless RestrictPublicPolicy), allows it;
//  7. a grant of the ACL that covers the action (see aclPermission: READ,
//     WRITE, READ_ACP, WRITE_ACP or FULL_CONTROL) to the caller, to
//     AuthenticatedUsers (a signed-in caller) or to AllUsers allows it,
//     unless IgnorePublicACLs skips the group grants.
//
// Anonymous callers have no attached policies and own nothing, so only a
// bucket policy granting Principal "*" or an ACL grant to AllUsers lets
// them in.
func Authorize(in AuthzInput) Decision {
	anonymous := in.Subject == nil
	r := policy.Request{Action: in.Action, Resource: in.Resource, Context: in.Context}
	if !anonymous {
		r.Principal = in.Subject.Name
	}
	owner := !anonymous && in.UserID != "" && in.UserID == in.BucketOwner
	admin := !anonymous && in.Subject.Admin

	fromBucket := policy.NotApplicable
	if in.BucketPolicy != nil {
		fromBucket = in.BucketPolicy.Evaluate(r)
	}
	if fromBucket == policy.Deny && !((owner || admin) && isPolicyAction(in.Action)) {
		return Decision{Reason: ReasonBucketPolicyDeny}
	}
	if !anonymous {
		fromIdentity := policy.Evaluate(in.Subject.Policies, r)
		switch {
		case fromIdentity == policy.Deny:
			return Decision{Reason: ReasonIdentityPolicyDeny}
		case in.Subject.Session != nil && in.Subject.Session.Evaluate(r) != policy.Allow:
			return Decision{Reason: ReasonSessionPolicy}
		case admin:
			return Decision{Allowed: true, Reason: ReasonAdmin}
		case owner:
			return Decision{Allowed: true, Reason: ReasonOwner}
		case fromIdentity == policy.Allow:
			return Decision{Allowed: true, Reason: ReasonIdentityPolicy}
		}
	}
	if fromBucket == policy.Allow && !in.RestrictPublicPolicy {
		return Decision{Allowed: true, Reason: ReasonBucketPolicy}
	}
	if in.BucketACL != nil || in.ObjectACL != nil {
		onObject := strings.Contains(in.Resource, "/")
		perm, objectACL := aclPermission(in.Action, onObject)
		grants := in.BucketACL
		if objectACL {
			grants = in.ObjectACL
		}
		if aclAllows(grants, in.UserID, perm, in.IgnorePublicACLs) {
			return Decision{Allowed: true, Reason: ReasonACL}
		}
	}
	return Decision{Reason: ReasonNoGrant}
}

// isPolicyAction reports whether a names one of the bucket-policy actions.
func isPolicyAction(a string) bool {
	n, err := policy.NormalizeAction(a)
	if err != nil {
		return false
	}
	for _, p := range []string{ActionGetBucketPolicy, ActionPutBucketPolicy, ActionDeleteBucketPolicy} {
		if strings.EqualFold(n, p) {
			return true
		}
	}
	return false
}

// resourceOf is the policy resource of a bucket ("" key) or an object.
func resourceOf(bucket, key string) string {
	if bucket == "" {
		return ""
	}
	if key == "" {
		return "obs:::" + bucket
	}
	return "obs:::" + bucket + "/" + key
}

// deniedError is the AccessDenied error of a refused request. It names the
// caller, the action, the bucket and the key, says why, and hints at the fix.
func deniedError(op errs.Op, c *Caller, action, bucket, key string, why Reason) error {
	where := fmt.Sprintf("bucket %q", bucket)
	switch {
	case bucket == "":
		where = "this server"
	case key != "":
		where = fmt.Sprintf("bucket %q, key %q", bucket, key)
	}
	msg := fmt.Sprintf("access denied: %s may not %s on %s: %s", c, action, where, why)
	resource := resourceOf(bucket, key)
	if resource == "" {
		resource = "*"
	}
	var hint string
	switch why {
	case ReasonBucketPolicyDeny:
		hint = fmt.Sprintf("an explicit Deny in the policy of bucket %q wins over every Allow; the bucket owner can change it (`atelier obs` bucket policy commands)", bucket)
	case ReasonIdentityPolicyDeny:
		hint = fmt.Sprintf("an explicit Deny wins over every Allow; `atelier user get %s` lists the attached policies", c.Principal.User.Name)
	case ReasonSessionPolicy:
		hint = "these are temporary credentials (a job's or a service's): they may read the job's inputs and write its outputs only; add the path to the job's inputs or outputs"
	default:
		if c.anonymous() {
			hint = fmt.Sprintf("sign the request with an access key (`atelier configure`); buckets are private unless the owner grants %s on %s to Principal \"*\" in a bucket policy", action, resource)
		} else {
			hint = fmt.Sprintf("the bucket owner can grant it with a bucket policy (Principal {\"AWS\": [\"user/%s\"]}, Action %s, Resource %s), or an admin can attach a policy allowing it",
				c.Principal.User.Name, action, resource)
		}
	}
	return fail(op, CodeAccessDenied, msg, hint)
}
