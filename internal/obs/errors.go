package obs

import (
	"net/http"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of object storage. Each maps to an S3 error code and HTTP
// status (see S3Error) and is listed in docs/api.md.
const (
	CodeNoSuchBucket         errs.Code = "ATL.OBS.0001"
	CodeNoSuchKey            errs.Code = "ATL.OBS.0002"
	CodeNoSuchUpload         errs.Code = "ATL.OBS.0003"
	CodeAccessDenied         errs.Code = "ATL.OBS.0004"
	CodeInvalidBucketName    errs.Code = "ATL.OBS.0005"
	CodeBucketExists         errs.Code = "ATL.OBS.0006"
	CodeBucketOwnedByYou     errs.Code = "ATL.OBS.0007"
	CodeBucketNotEmpty       errs.Code = "ATL.OBS.0008"
	CodeWrongRegion          errs.Code = "ATL.OBS.0009"
	CodeKeyTooLong           errs.Code = "ATL.OBS.0010"
	CodeBadKey               errs.Code = "ATL.OBS.0011"
	CodeMetadataTooLarge     errs.Code = "ATL.OBS.0012"
	CodeBadStorageClass      errs.Code = "ATL.OBS.0013"
	CodeInvalidDigest        errs.Code = "ATL.OBS.0014"
	CodeBadDigest            errs.Code = "ATL.OBS.0015"
	CodeBadChecksum          errs.Code = "ATL.OBS.0016"
	CodeBadChecksumAlgo      errs.Code = "ATL.OBS.0017"
	CodeIncompleteBody       errs.Code = "ATL.OBS.0018"
	CodeEntityTooLarge       errs.Code = "ATL.OBS.0019"
	CodeInvalidRange         errs.Code = "ATL.OBS.0020"
	CodeNotModified          errs.Code = "ATL.OBS.0021"
	CodePreconditionFailed   errs.Code = "ATL.OBS.0022"
	CodeCopyToItself         errs.Code = "ATL.OBS.0023"
	CodeBadDirective         errs.Code = "ATL.OBS.0024"
	CodeBadListArgument      errs.Code = "ATL.OBS.0025"
	CodeBadContinuationToken errs.Code = "ATL.OBS.0026"
	CodeMalformedRequest     errs.Code = "ATL.OBS.0027"
	CodeBadPartNumber        errs.Code = "ATL.OBS.0028"
	CodeInvalidPartOrder     errs.Code = "ATL.OBS.0029"
	CodeInvalidPart          errs.Code = "ATL.OBS.0030"
	CodeEntityTooSmall       errs.Code = "ATL.OBS.0031"
	CodeBadCopyRange         errs.Code = "ATL.OBS.0032"
	CodeNoSuchPart           errs.Code = "ATL.OBS.0033"
	CodeMalformedPolicy      errs.Code = "ATL.OBS.0034"
	CodeNoSuchBucketPolicy   errs.Code = "ATL.OBS.0035"
	CodeBadLifecycle         errs.Code = "ATL.OBS.0036"
	CodeNoSuchLifecycle      errs.Code = "ATL.OBS.0037"
	CodeBadCORS              errs.Code = "ATL.OBS.0038"
	CodeNoSuchCORS           errs.Code = "ATL.OBS.0039"
	CodeKeyNotArchivable     errs.Code = "ATL.OBS.0040"
	CodeInconsistent         errs.Code = "ATL.OBS.0041"
	CodeTooManyDeleteKeys    errs.Code = "ATL.OBS.0042"
	CodeStorageFull          errs.Code = "ATL.OBS.0043"
	CodeInvalidTag           errs.Code = "ATL.OBS.0044"
	CodeTooManyTags          errs.Code = "ATL.OBS.0045"
	CodeNoSuchTagSet         errs.Code = "ATL.OBS.0046"
	CodeConditionalConflict  errs.Code = "ATL.OBS.0047"
	CodeBadTagging           errs.Code = "ATL.OBS.0048"
	CodeBadWriteCondition    errs.Code = "ATL.OBS.0049"
	CodeNoSuchVersion        errs.Code = "ATL.OBS.0050"
	CodeBadVersionID         errs.Code = "ATL.OBS.0051"
	CodeDeleteMarker         errs.Code = "ATL.OBS.0052"
	CodeBadVersioning        errs.Code = "ATL.OBS.0053"
	CodeMFADelete            errs.Code = "ATL.OBS.0054"
	CodeCopyFromMarker       errs.Code = "ATL.OBS.0055"
	// ACLs, ownership controls, public access blocks.
	CodeBadACL              errs.Code = "ATL.OBS.0060"
	CodeBadACLRequest       errs.Code = "ATL.OBS.0061"
	CodeACLNotSupported     errs.Code = "ATL.OBS.0062"
	CodeACLWithOwnership    errs.Code = "ATL.OBS.0063"
	CodeNoOwnershipControls errs.Code = "ATL.OBS.0064"
	CodeNoPublicAccessBlock errs.Code = "ATL.OBS.0065"
	CodeBadOwnership        errs.Code = "ATL.OBS.0066"
	// Object lock.
	CodeObjectLocked       errs.Code = "ATL.OBS.0070"
	CodeNoLockConfig       errs.Code = "ATL.OBS.0071"
	CodeNoObjectLock       errs.Code = "ATL.OBS.0072"
	CodeLockNotEnabled     errs.Code = "ATL.OBS.0073"
	CodeInvalidBucketState errs.Code = "ATL.OBS.0074"
	CodeBadLock            errs.Code = "ATL.OBS.0075"
	CodeBadLockConfig      errs.Code = "ATL.OBS.0076"
	CodeLockNeedsIntegrity errs.Code = "ATL.OBS.0077"
)

// hintFull is the hint of CodeStorageFull.
const hintFull = "delete objects you no longer need (deletes keep working when the storage is full), " +
	"or ask the administrator to free or add space under the server's data directory; " +
	"the server keeps storage_reserve free there for its metadata and for deletes"

// codeInfo is what a code means to the front ends: the kind of error (which
// decides the REST status), the S3 error code and the S3 HTTP status.
type codeInfo struct {
	kind   errs.Kind
	s3     string
	status int
}

// infoOf is the table of ATL.OBS codes.
func infoOf(c errs.Code) (codeInfo, bool) {
	switch c {
	case CodeNoSuchBucket:
		return codeInfo{errs.NotFound, "NoSuchBucket", http.StatusNotFound}, true
	case CodeNoSuchKey:
		return codeInfo{errs.NotFound, "NoSuchKey", http.StatusNotFound}, true
	case CodeNoSuchUpload:
		return codeInfo{errs.NotFound, "NoSuchUpload", http.StatusNotFound}, true
	case CodeAccessDenied:
		return codeInfo{errs.PermissionDenied, "AccessDenied", http.StatusForbidden}, true
	case CodeInvalidBucketName:
		return codeInfo{errs.Invalid, "InvalidBucketName", http.StatusBadRequest}, true
	case CodeBucketExists:
		return codeInfo{errs.Exists, "BucketAlreadyExists", http.StatusConflict}, true
	case CodeBucketOwnedByYou:
		return codeInfo{errs.Exists, "BucketAlreadyOwnedByYou", http.StatusConflict}, true
	case CodeBucketNotEmpty:
		return codeInfo{errs.Conflict, "BucketNotEmpty", http.StatusConflict}, true
	case CodeWrongRegion:
		return codeInfo{errs.Invalid, "IllegalLocationConstraintException", http.StatusBadRequest}, true
	case CodeKeyTooLong:
		return codeInfo{errs.Invalid, "KeyTooLongError", http.StatusBadRequest}, true
	case CodeBadKey, CodeBadChecksumAlgo, CodeBadDirective, CodeBadListArgument,
		CodeBadContinuationToken, CodeBadPartNumber, CodeBadCopyRange, CodeBadLifecycle,
		CodeBadCORS, CodeKeyNotArchivable:
		return codeInfo{errs.Invalid, "InvalidArgument", http.StatusBadRequest}, true
	case CodeMetadataTooLarge:
		return codeInfo{errs.TooLarge, "MetadataTooLarge", http.StatusBadRequest}, true
	case CodeBadStorageClass:
		return codeInfo{errs.Invalid, "InvalidStorageClass", http.StatusBadRequest}, true
	case CodeInvalidDigest:
		return codeInfo{errs.Invalid, "InvalidDigest", http.StatusBadRequest}, true
	case CodeBadDigest, CodeBadChecksum:
		return codeInfo{errs.Invalid, "BadDigest", http.StatusBadRequest}, true
	case CodeIncompleteBody:
		return codeInfo{errs.Invalid, "IncompleteBody", http.StatusBadRequest}, true
	case CodeEntityTooLarge:
		return codeInfo{errs.TooLarge, "EntityTooLarge", http.StatusBadRequest}, true
	case CodeInvalidRange:
		return codeInfo{errs.Invalid, "InvalidRange", http.StatusRequestedRangeNotSatisfiable}, true
	case CodeNotModified:
		return codeInfo{errs.Conflict, "NotModified", http.StatusNotModified}, true
	case CodePreconditionFailed:
		return codeInfo{errs.Conflict, "PreconditionFailed", http.StatusPreconditionFailed}, true
	case CodeCopyToItself:
		return codeInfo{errs.Invalid, "InvalidRequest", http.StatusBadRequest}, true
	case CodeMalformedRequest, CodeTooManyDeleteKeys:
		return codeInfo{errs.Invalid, "MalformedXML", http.StatusBadRequest}, true
	case CodeInvalidPartOrder:
		return codeInfo{errs.Invalid, "InvalidPartOrder", http.StatusBadRequest}, true
	case CodeInvalidPart:
		return codeInfo{errs.Invalid, "InvalidPart", http.StatusBadRequest}, true
	case CodeEntityTooSmall:
		return codeInfo{errs.Invalid, "EntityTooSmall", http.StatusBadRequest}, true
	case CodeNoSuchPart:
		return codeInfo{errs.Invalid, "InvalidPartNumber", http.StatusRequestedRangeNotSatisfiable}, true
	case CodeMalformedPolicy:
		return codeInfo{errs.Invalid, "MalformedPolicy", http.StatusBadRequest}, true
	case CodeNoSuchBucketPolicy:
		return codeInfo{errs.NotFound, "NoSuchBucketPolicy", http.StatusNotFound}, true
	case CodeNoSuchLifecycle:
		return codeInfo{errs.NotFound, "NoSuchLifecycleConfiguration", http.StatusNotFound}, true
	case CodeNoSuchCORS:
		return codeInfo{errs.NotFound, "NoSuchCORSConfiguration", http.StatusNotFound}, true
	case CodeInconsistent:
		return codeInfo{errs.Internal, "InternalError", http.StatusInternalServerError}, true
	case CodeStorageFull:
		return codeInfo{errs.NoSpace, "InsufficientStorage", http.StatusInsufficientStorage}, true
	case CodeInvalidTag:
		return codeInfo{errs.Invalid, "InvalidTag", http.StatusBadRequest}, true
	case CodeTooManyTags:
		return codeInfo{errs.Invalid, "BadRequest", http.StatusBadRequest}, true
	case CodeNoSuchTagSet:
		return codeInfo{errs.NotFound, "NoSuchTagSet", http.StatusNotFound}, true
	case CodeConditionalConflict:
		return codeInfo{errs.Conflict, "ConditionalRequestConflict", http.StatusConflict}, true
	case CodeBadTagging:
		return codeInfo{errs.Invalid, "InvalidArgument", http.StatusBadRequest}, true
	case CodeBadWriteCondition, CodeMFADelete:
		return codeInfo{errs.Unsupported, "NotImplemented", http.StatusNotImplemented}, true
	case CodeNoSuchVersion:
		return codeInfo{errs.NotFound, "NoSuchVersion", http.StatusNotFound}, true
	case CodeBadVersionID:
		return codeInfo{errs.Invalid, "InvalidArgument", http.StatusBadRequest}, true
	case CodeDeleteMarker:
		return codeInfo{errs.Invalid, "MethodNotAllowed", http.StatusMethodNotAllowed}, true
	case CodeBadVersioning:
		return codeInfo{errs.Invalid, "IllegalVersioningConfigurationException", http.StatusBadRequest}, true
	case CodeCopyFromMarker:
		return codeInfo{errs.Invalid, "InvalidRequest", http.StatusBadRequest}, true
	case CodeBadACL:
		return codeInfo{errs.Invalid, "InvalidArgument", http.StatusBadRequest}, true
	case CodeBadACLRequest:
		return codeInfo{errs.Invalid, "InvalidRequest", http.StatusBadRequest}, true
	case CodeACLNotSupported:
		return codeInfo{errs.Invalid, "AccessControlListNotSupported", http.StatusBadRequest}, true
	case CodeACLWithOwnership:
		return codeInfo{errs.Invalid, "InvalidBucketAclWithObjectOwnership", http.StatusBadRequest}, true
	case CodeNoOwnershipControls:
		return codeInfo{errs.NotFound, "OwnershipControlsNotFoundError", http.StatusNotFound}, true
	case CodeNoPublicAccessBlock:
		return codeInfo{errs.NotFound, "NoSuchPublicAccessBlockConfiguration", http.StatusNotFound}, true
	case CodeBadOwnership:
		return codeInfo{errs.Invalid, "MalformedXML", http.StatusBadRequest}, true
	case CodeObjectLocked:
		return codeInfo{errs.PermissionDenied, "AccessDenied", http.StatusForbidden}, true
	case CodeNoLockConfig:
		return codeInfo{errs.NotFound, "ObjectLockConfigurationNotFoundError", http.StatusNotFound}, true
	case CodeNoObjectLock:
		return codeInfo{errs.NotFound, "NoSuchObjectLockConfiguration", http.StatusNotFound}, true
	case CodeLockNotEnabled, CodeLockNeedsIntegrity:
		return codeInfo{errs.Invalid, "InvalidRequest", http.StatusBadRequest}, true
	case CodeInvalidBucketState:
		return codeInfo{errs.Conflict, "InvalidBucketState", http.StatusConflict}, true
	case CodeBadLock:
		return codeInfo{errs.Invalid, "InvalidArgument", http.StatusBadRequest}, true
	case CodeBadLockConfig:
		return codeInfo{errs.Invalid, "MalformedXML", http.StatusBadRequest}, true
	}
	return codeInfo{}, false
}

// S3Error returns the S3 error code and HTTP status the S3 front end answers
// for err. ok reports whether err carries an ATL.OBS code; when it does not,
// code and status still hold a fallback chosen by the error's kind
// (InternalError 500, ServiceUnavailable 503, AccessDenied 403, …), so a
// front end may use them or apply its own table first.
func S3Error(err error) (code string, status int, ok bool) {
	if err == nil {
		return "", http.StatusOK, false
	}
	if in, found := infoOf(errs.CodeOf(err)); found {
		return in.s3, in.status, true
	}
	switch errs.KindOf(err) {
	case errs.Invalid:
		return "InvalidArgument", http.StatusBadRequest, false
	case errs.NotFound:
		return "NoSuchKey", http.StatusNotFound, false
	case errs.Exists, errs.Conflict:
		return "OperationAborted", http.StatusConflict, false
	case errs.Unauthenticated:
		return "InvalidAccessKeyId", http.StatusForbidden, false
	case errs.PermissionDenied:
		return "AccessDenied", http.StatusForbidden, false
	case errs.TooLarge:
		return "EntityTooLarge", http.StatusBadRequest, false
	case errs.Unavailable:
		return "ServiceUnavailable", http.StatusServiceUnavailable, false
	case errs.Unsupported:
		return "NotImplemented", http.StatusNotImplemented, false
	case errs.NoSpace:
		return "InsufficientStorage", http.StatusInsufficientStorage, false
	}
	return "InternalError", http.StatusInternalServerError, false
}

// fail builds an error with an ATL.OBS code; the kind comes from the code's
// row in the table.
func fail(op errs.Op, code errs.Code, msg string, hint string, cause ...error) error {
	in, _ := infoOf(code)
	args := []any{in.kind, code, msg}
	if hint != "" {
		args = append(args, errs.Hint(hint))
	}
	for _, c := range cause {
		args = append(args, c)
	}
	return errs.E(op, args...)
}

// storeErr wraps a failure of the metadata or byte store, keeping its kind;
// a full store is CodeStorageFull.
func storeErr(op errs.Op, what string, err error) error {
	if errs.Is(err, errs.NoSpace) {
		return fail(op, CodeStorageFull, what+": the server's storage is full", hintFull, err)
	}
	if errs.KindOf(err) == errs.Other {
		return errs.E(op, errs.Internal, what, err)
	}
	return errs.E(op, what, err)
}
