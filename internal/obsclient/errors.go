package obsclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsurl"
)

// Hints shared by several errors.
const (
	hintCredentials errs.Hint = "check access_key and secret_key of the client config (`atelier configure`) or ATELIER_ACCESS_KEY and ATELIER_SECRET_KEY"
	hintRecursive   errs.Hint = "add -r to work on everything under it"
)

// S3Error turns an S3 error answer into an errs value: code is the S3
// error code (kept as the errs.Code), message the server's message, bucket
// and key what the request named (key may be empty). Unknown codes are
// errors of kind errs.IO carrying the server's message.
func S3Error(code, message, bucket, key string) error {
	const op errs.Op = "obsclient.S3"
	where := obsurl.Format(bucket, key)
	withMsg := func(s string) string {
		if message == "" {
			return s
		}
		return s + ": " + message
	}
	var (
		kind errs.Kind
		msg  string
		hint errs.Hint
	)
	switch code {
	case "NoSuchBucket":
		kind, msg = errs.NotFound, fmt.Sprintf("bucket %q does not exist", bucket)
		hint = errs.Hint(fmt.Sprintf("list your buckets with `atelier obs ls`; create this one with `atelier obs mb obs://%s`", bucket))
	case "NoSuchKey":
		kind, msg = errs.NotFound, where+" does not exist"
	case "NoSuchUpload":
		kind, msg = errs.NotFound, "the multipart upload of "+where+" does not exist (it was completed or aborted)"
	case "BucketAlreadyOwnedByYou":
		kind, msg = errs.Exists, fmt.Sprintf("bucket %q already exists and is yours", bucket)
	case "BucketAlreadyExists":
		kind, msg = errs.Exists, fmt.Sprintf("bucket %q already exists", bucket)
		hint = "bucket names are shared by all users; choose another name"
	case "BucketNotEmpty":
		kind, msg = errs.Conflict, fmt.Sprintf("bucket %q is not empty", bucket)
		hint = errs.Hint(fmt.Sprintf("delete its objects first, or use `atelier obs rb --force obs://%s`", bucket))
	case "AccessDenied", "AllAccessDisabled":
		kind, msg = errs.PermissionDenied, withMsg("access to "+where+" denied")
		hint = "ask an administrator for a policy that allows the action (`atelier policy attach`)"
		if strings.Contains(message, "object lock") {
			hint = errs.Hint(fmt.Sprintf("the version is under a retention or a legal hold: `atelier obs retention %s` and `atelier obs legal-hold %s` show them; "+
				"a GOVERNANCE retention is removed with `atelier obs retention --clear --bypass-governance` by a user allowed s3:BypassGovernanceRetention, a COMPLIANCE one by no one", where, where))
		}
	case "ObjectLockConfigurationNotFoundError":
		kind, msg = errs.NotFound, fmt.Sprintf("bucket %q does not have object lock", bucket)
		hint = errs.Hint(fmt.Sprintf("enable it with `atelier obs lock set obs://%s` (its versioning must be Enabled), or make a new bucket with `atelier obs mb --object-lock`", bucket))
	case "NoSuchObjectLockConfiguration":
		kind, msg = errs.NotFound, withMsg(where+" has none")
	case "InvalidBucketState":
		kind, msg = errs.Conflict, withMsg(fmt.Sprintf("bucket %q is not in a state that allows this", bucket))
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
		kind, msg, hint = errs.Unauthenticated, withMsg("the S3 endpoint rejected the credentials"), hintCredentials
	case "RequestTimeTooSkewed":
		kind, msg = errs.Unauthenticated, withMsg("the S3 endpoint rejected the request time")
		hint = "this machine's clock is off; synchronise it (e.g. with NTP)"
	case "AuthorizationHeaderMalformed":
		kind, msg = errs.Unauthenticated, withMsg("the S3 endpoint rejected the signature")
	case "InvalidBucketName":
		kind, msg = errs.Invalid, withMsg(fmt.Sprintf("invalid bucket name %q", bucket))
	case "EntityTooLarge":
		kind, msg = errs.TooLarge, withMsg(where+" is too large")
	case "EntityTooSmall", "InvalidPart", "InvalidPartOrder", "InvalidArgument", "InvalidRequest", "InvalidRange", "MalformedXML":
		kind, msg = errs.Invalid, withMsg(fmt.Sprintf("the S3 endpoint refused the request for %s (%s)", where, code))
	case "BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch":
		kind, msg = errs.IO, withMsg("the data of "+where+" was corrupted in transit")
		hint = "run the command again"
	case "PreconditionFailed":
		kind, msg = errs.Conflict, where+" changed since it was listed (its ETag is no longer the one listed)"
		hint = "run the command again; a dataset version whose object changed must be made again"
	case "NotImplemented":
		kind, msg = errs.Unsupported, withMsg("the S3 endpoint does not implement this request for "+where)
	case "InsufficientStorage":
		kind, msg = errs.NoSpace, withMsg("the server's storage is full: it refused "+where)
		hint = "delete objects you no longer need (`atelier obs rm`; deletes keep working) or ask the administrator for more space, then run the command again"
	case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout":
		kind, msg = errs.Unavailable, withMsg("the S3 endpoint failed the request for "+where)
		hint = "run the command again; copies resume where they stopped"
	default:
		kind, msg = errs.IO, withMsg("request for "+where+" failed")
	}
	return errs.E(op, kind, errs.Code(code), msg, hint)
}

// isCanceled reports whether err is a context's cancellation or deadline.
func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// isFatal reports whether err makes every other transfer of a run fail too,
// so the run should stop: bad credentials, an unreachable endpoint, a
// missing bucket, a full server.
func isFatal(err error) bool {
	switch errs.KindOf(err) {
	case errs.Unauthenticated, errs.Unavailable, errs.NoSpace:
		return true
	}
	return errs.CodeOf(err) == "NoSuchBucket"
}
