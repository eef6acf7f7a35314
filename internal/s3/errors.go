package s3

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// ErrorCode is an S3 error code, the <Code> of an error response.
type ErrorCode string

// The S3 error codes Atelier answers. Their HTTP statuses and default
// messages are in Status and DefaultMessage.
const (
	AccessDenied                       ErrorCode = "AccessDenied"
	AccessForbidden                    ErrorCode = "AccessForbidden"
	AccountProblem                     ErrorCode = "AccountProblem"
	AuthorizationHeaderMalformed       ErrorCode = "AuthorizationHeaderMalformed"
	AuthorizationQueryParametersError  ErrorCode = "AuthorizationQueryParametersError"
	BadDigest                          ErrorCode = "BadDigest"
	BadRequest                         ErrorCode = "BadRequest"
	ConditionalRequestConflict         ErrorCode = "ConditionalRequestConflict"
	BucketAlreadyExists                ErrorCode = "BucketAlreadyExists"
	BucketAlreadyOwnedByYou            ErrorCode = "BucketAlreadyOwnedByYou"
	BucketNotEmpty                     ErrorCode = "BucketNotEmpty"
	EntityTooLarge                     ErrorCode = "EntityTooLarge"
	EntityTooSmall                     ErrorCode = "EntityTooSmall"
	ExpiredToken                       ErrorCode = "ExpiredToken"
	IllegalLocationConstraintException ErrorCode = "IllegalLocationConstraintException"
	IllegalVersioningConfiguration     ErrorCode = "IllegalVersioningConfigurationException"
	IncompleteBody                     ErrorCode = "IncompleteBody"
	InsufficientStorage                ErrorCode = "InsufficientStorage"
	InternalError                      ErrorCode = "InternalError"
	InvalidAccessKeyID                 ErrorCode = "InvalidAccessKeyId"
	InvalidArgument                    ErrorCode = "InvalidArgument"
	InvalidBucketName                  ErrorCode = "InvalidBucketName"
	InvalidDigest                      ErrorCode = "InvalidDigest"
	InvalidLocationConstraint          ErrorCode = "InvalidLocationConstraint"
	InvalidPart                        ErrorCode = "InvalidPart"
	InvalidPartNumber                  ErrorCode = "InvalidPartNumber"
	InvalidPartOrder                   ErrorCode = "InvalidPartOrder"
	InvalidStorageClass                ErrorCode = "InvalidStorageClass"
	InvalidTag                         ErrorCode = "InvalidTag"
	InvalidRange                       ErrorCode = "InvalidRange"
	InvalidRequest                     ErrorCode = "InvalidRequest"
	InvalidToken                       ErrorCode = "InvalidToken"
	InvalidURI                         ErrorCode = "InvalidURI"
	KeyTooLongError                    ErrorCode = "KeyTooLongError"
	MalformedPolicy                    ErrorCode = "MalformedPolicy"
	MalformedTrailerError              ErrorCode = "MalformedTrailerError"
	MalformedXML                       ErrorCode = "MalformedXML"
	MetadataTooLarge                   ErrorCode = "MetadataTooLarge"
	MethodNotAllowed                   ErrorCode = "MethodNotAllowed"
	MissingContentLength               ErrorCode = "MissingContentLength"
	MissingRequestBodyError            ErrorCode = "MissingRequestBodyError"
	MissingSecurityHeader              ErrorCode = "MissingSecurityHeader"
	NoSuchBucket                       ErrorCode = "NoSuchBucket"
	NoSuchBucketPolicy                 ErrorCode = "NoSuchBucketPolicy"
	NoSuchCORSConfiguration            ErrorCode = "NoSuchCORSConfiguration"
	NoSuchKey                          ErrorCode = "NoSuchKey"
	NoSuchLifecycleConfiguration       ErrorCode = "NoSuchLifecycleConfiguration"
	NoSuchTagSet                       ErrorCode = "NoSuchTagSet"
	NoSuchUpload                       ErrorCode = "NoSuchUpload"
	NoSuchVersion                      ErrorCode = "NoSuchVersion"
	NotImplemented                     ErrorCode = "NotImplemented"
	NotModified                        ErrorCode = "NotModified"
	OperationAborted                   ErrorCode = "OperationAborted"
	PreconditionFailed                 ErrorCode = "PreconditionFailed"
	RequestTimeout                     ErrorCode = "RequestTimeout"
	RequestTimeTooSkewed               ErrorCode = "RequestTimeTooSkewed"
	ServiceUnavailable                 ErrorCode = "ServiceUnavailable"
	SignatureDoesNotMatch              ErrorCode = "SignatureDoesNotMatch"
	SlowDown                           ErrorCode = "SlowDown"
	UserKeyMustBeSpecified             ErrorCode = "UserKeyMustBeSpecified"
	XAmzContentSHA256Mismatch          ErrorCode = "XAmzContentSHA256Mismatch"

	// Browser-form (POST Object) uploads.
	AccessControlListNotSupported       ErrorCode = "AccessControlListNotSupported"
	IncorrectNumberOfFilesInPostRequest ErrorCode = "IncorrectNumberOfFilesInPostRequest"
	InvalidPolicyDocument               ErrorCode = "InvalidPolicyDocument"
	MalformedPOSTRequest                ErrorCode = "MalformedPOSTRequest"
	MaxPostPreDataLengthExceeded        ErrorCode = "MaxPostPreDataLengthExceeded"

	// ACLs, ownership controls and public access blocks.
	InvalidBucketACLWithObjectOwnership  ErrorCode = "InvalidBucketAclWithObjectOwnership"
	MalformedACLError                    ErrorCode = "MalformedACLError"
	NoSuchPublicAccessBlockConfiguration ErrorCode = "NoSuchPublicAccessBlockConfiguration"
	OwnershipControlsNotFoundError       ErrorCode = "OwnershipControlsNotFoundError"
	UnexpectedContent                    ErrorCode = "UnexpectedContent"

	// Object lock.
	InvalidBucketState                   ErrorCode = "InvalidBucketState"
	NoSuchObjectLockConfiguration        ErrorCode = "NoSuchObjectLockConfiguration"
	ObjectLockConfigurationNotFoundError ErrorCode = "ObjectLockConfigurationNotFoundError"
)

// errorInfo is the HTTP status and default message of an error code.
type errorInfo struct {
	status int
	msg    string
}

// errorTable is the S3 error table. Statuses follow the S3 API reference;
// messages are Atelier's defaults, used when an error carries none.
var errorTable = map[ErrorCode]errorInfo{
	AccessDenied:                       {http.StatusForbidden, "Access Denied."},
	AccountProblem:                     {http.StatusForbidden, "There is a problem with your account that prevents the operation from completing."},
	AuthorizationHeaderMalformed:       {http.StatusBadRequest, "The authorization header is malformed."},
	AuthorizationQueryParametersError:  {http.StatusBadRequest, "The X-Amz-* query parameters of the presigned URL are malformed."},
	BadDigest:                          {http.StatusBadRequest, "The Content-MD5 or checksum you specified did not match what we received."},
	AccessForbidden:                    {http.StatusForbidden, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec."},
	BadRequest:                         {http.StatusBadRequest, "Bad Request."},
	ConditionalRequestConflict:         {http.StatusConflict, "The conditional request cannot succeed due to a conflicting operation against this resource."},
	BucketAlreadyExists:                {http.StatusConflict, "The requested bucket name is not available. Bucket names are shared by all users of this server; choose another name."},
	BucketAlreadyOwnedByYou:            {http.StatusConflict, "The bucket you tried to create already exists, and you own it."},
	BucketNotEmpty:                     {http.StatusConflict, "The bucket you tried to delete is not empty."},
	EntityTooLarge:                     {http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed size."},
	EntityTooSmall:                     {http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed object size."},
	ExpiredToken:                       {http.StatusBadRequest, "The provided token has expired."},
	IllegalLocationConstraintException: {http.StatusBadRequest, "The location constraint is not this server's region."},
	IllegalVersioningConfiguration:     {http.StatusBadRequest, "The versioning configuration specified in the request is invalid."},
	IncompleteBody:                     {http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."},
	InsufficientStorage:                {http.StatusInsufficientStorage, "The server's storage is full. Deleting objects frees space; deletes keep working."},
	InternalError:                      {http.StatusInternalServerError, "We encountered an internal error. Please try again."},
	InvalidAccessKeyID:                 {http.StatusForbidden, "The access key ID you provided does not exist in our records."},
	InvalidArgument:                    {http.StatusBadRequest, "Invalid Argument."},
	InvalidBucketName:                  {http.StatusBadRequest, "The specified bucket is not valid."},
	InvalidDigest:                      {http.StatusBadRequest, "The Content-MD5 or checksum you specified is not valid."},
	InvalidLocationConstraint:          {http.StatusBadRequest, "The specified location constraint is not valid."},
	InvalidPart:                        {http.StatusBadRequest, "One or more of the specified parts could not be found. The part might not have been uploaded, or the specified ETag might not have matched the part's ETag."},
	InvalidPartNumber:                  {http.StatusRequestedRangeNotSatisfiable, "The requested part number is not satisfiable."},
	InvalidStorageClass:                {http.StatusBadRequest, "The storage class you specified is not valid."},
	InvalidTag:                         {http.StatusBadRequest, "The tag provided was not a valid tag."},
	InvalidPartOrder:                   {http.StatusBadRequest, "The list of parts was not in ascending order. Parts must be ordered by part number."},
	InvalidRange:                       {http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable."},
	InvalidRequest:                     {http.StatusBadRequest, "Invalid Request."},
	InvalidToken:                       {http.StatusBadRequest, "The provided token is malformed or otherwise invalid."},
	InvalidURI:                         {http.StatusBadRequest, "Couldn't parse the specified URI."},
	KeyTooLongError:                    {http.StatusBadRequest, "Your key is too long."},
	MalformedPolicy:                    {http.StatusBadRequest, "The bucket policy is not valid."},
	MalformedTrailerError:              {http.StatusBadRequest, "The request contained trailing data that was not well-formed or did not conform to our published schema."},
	MalformedXML:                       {http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."},
	MetadataTooLarge:                   {http.StatusBadRequest, "Your metadata headers exceed the maximum allowed metadata size."},
	MethodNotAllowed:                   {http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."},
	MissingContentLength:               {http.StatusLengthRequired, "You must provide the Content-Length HTTP header."},
	MissingRequestBodyError:            {http.StatusBadRequest, "Request body is empty."},
	MissingSecurityHeader:              {http.StatusBadRequest, "Your request is missing a required header."},
	NoSuchBucket:                       {http.StatusNotFound, "The specified bucket does not exist."},
	NoSuchBucketPolicy:                 {http.StatusNotFound, "The bucket policy does not exist."},
	NoSuchCORSConfiguration:            {http.StatusNotFound, "The CORS configuration does not exist."},
	NoSuchKey:                          {http.StatusNotFound, "The specified key does not exist."},
	NoSuchLifecycleConfiguration:       {http.StatusNotFound, "The lifecycle configuration does not exist."},
	NoSuchTagSet:                       {http.StatusNotFound, "The TagSet does not exist."},
	NoSuchUpload:                       {http.StatusNotFound, "The specified multipart upload does not exist. The upload ID might be invalid, or the multipart upload might have been aborted or completed."},
	NoSuchVersion:                      {http.StatusNotFound, "The specified version does not exist."},
	NotImplemented:                     {http.StatusNotImplemented, "A header or parameter you provided implies functionality that Atelier does not offer."},
	NotModified:                        {http.StatusNotModified, "Not Modified."},
	OperationAborted:                   {http.StatusConflict, "A conflicting operation is in progress against this resource. Please try again."},
	PreconditionFailed:                 {http.StatusPreconditionFailed, "At least one of the preconditions you specified did not hold."},
	RequestTimeout:                     {http.StatusBadRequest, "Your socket connection to the server was not read from or written to within the timeout period."},
	RequestTimeTooSkewed:               {http.StatusForbidden, "The difference between the request time and the server's time is too large."},
	ServiceUnavailable:                 {http.StatusServiceUnavailable, "The service cannot handle the request now. Please try again."},
	SignatureDoesNotMatch:              {http.StatusForbidden, "The request signature we calculated does not match the signature you provided. Check your key and signing method."},
	SlowDown:                           {http.StatusServiceUnavailable, "Please reduce your request rate."},
	UserKeyMustBeSpecified:             {http.StatusBadRequest, "An object key must be specified."},
	XAmzContentSHA256Mismatch:          {http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."},

	AccessControlListNotSupported:       {http.StatusBadRequest, "The bucket does not allow ACLs."},
	IncorrectNumberOfFilesInPostRequest: {http.StatusBadRequest, "POST requires exactly one file upload per request."},
	InvalidPolicyDocument:               {http.StatusBadRequest, "The content of the form does not meet the conditions specified in the policy document."},
	MalformedPOSTRequest:                {http.StatusBadRequest, "The body of your POST request is not well-formed multipart/form-data."},
	MaxPostPreDataLengthExceeded:        {http.StatusBadRequest, "Your POST request fields preceding the upload file were too large."},

	InvalidBucketACLWithObjectOwnership:  {http.StatusBadRequest, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting."},
	MalformedACLError:                    {http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."},
	NoSuchPublicAccessBlockConfiguration: {http.StatusNotFound, "The public access block configuration was not found."},
	OwnershipControlsNotFoundError:       {http.StatusNotFound, "The bucket ownership controls were not found."},
	UnexpectedContent:                    {http.StatusBadRequest, "This request does not support content."},

	InvalidBucketState:                   {http.StatusConflict, "The request is not valid with the current state of the bucket."},
	NoSuchObjectLockConfiguration:        {http.StatusNotFound, "The specified object does not have a ObjectLock configuration"},
	ObjectLockConfigurationNotFoundError: {http.StatusNotFound, "Object Lock configuration does not exist for this bucket"},
}

// Status is the HTTP status of the code; 500 for a code not in the table.
func (c ErrorCode) Status() int {
	if i, ok := errorTable[c]; ok {
		return i.status
	}
	return http.StatusInternalServerError
}

// DefaultMessage is the message of the code when an error carries none.
func (c ErrorCode) DefaultMessage() string {
	if i, ok := errorTable[c]; ok {
		return i.msg
	}
	return errorTable[InternalError].msg
}

// Known reports whether the code is in the error table.
func (c ErrorCode) Known() bool {
	_, ok := errorTable[c]
	return ok
}

// Error is an S3 API error: what WriteError sends as an XML <Error>.
type Error struct {
	Code     ErrorCode
	Message  string // "" means Code's default message
	Resource string // the bucket or object, "/bucket/key"; "" means the request path
	Bucket   string // sent as <BucketName> when set
	Key      string // sent as <Key> when set
	Region   string // sent as <Region> and x-amz-bucket-region when set
	Hint     string // what to do about it; sent as <Hint> (an Atelier extension) when set
	Err      error  // the cause, for logs; never sent
}

// Error is "Code: message".
func (e *Error) Error() string { return string(e.Code) + ": " + e.message() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Status is the HTTP status of the error.
func (e *Error) Status() int { return e.Code.Status() }

func (e *Error) message() string {
	if e.Message != "" {
		return e.Message
	}
	return e.Code.DefaultMessage()
}

// NewError returns an error of the code with a message ("" for the code's
// default message).
func NewError(code ErrorCode, msg string) *Error { return &Error{Code: code, Message: msg} }

// Errorf returns an error of the code with a formatted message.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithHint sets the hint and returns e.
func (e *Error) WithHint(hint string) *Error { e.Hint = hint; return e }

// ResourceName is the policy resource of a bucket or object:
// "obs:::bucket/key", "obs:::bucket", or "*" when bucket is "".
func ResourceName(bucket, key string) string {
	switch {
	case bucket == "":
		return "*"
	case key == "":
		return "obs:::" + bucket
	default:
		return "obs:::" + bucket + "/" + key
	}
}

// ErrAccessDenied is the AccessDenied error of a principal (a user name; ""
// for an anonymous request) that may not take action (e.g.
// "obs:GetObject", see Op.Action) on a bucket or object. It names all four,
// as users need to fix a policy.
func ErrAccessDenied(principal, action, bucket, key string) *Error {
	who := "anonymous requests"
	if principal != "" {
		who = fmt.Sprintf("user %q", principal)
	}
	res := ResourceName(bucket, key)
	hint := fmt.Sprintf("ask an admin to attach a policy that allows %s on %s", action, res)
	if bucket != "" {
		hint += ", or add a statement to the bucket policy of " + bucket
	}
	if principal == "" {
		hint = "sign the request with an access key, or add a bucket policy statement that allows " + action + " on " + res + " for Principal \"*\""
	}
	return &Error{
		Code:    AccessDenied,
		Message: fmt.Sprintf("%s may not %s on %s", who, action, res),
		Bucket:  bucket,
		Key:     key,
		Hint:    hint,
	}
}

// ErrNoSuchBucket is the NoSuchBucket error of a bucket.
func ErrNoSuchBucket(bucket string) *Error {
	return &Error{Code: NoSuchBucket, Bucket: bucket,
		Message: fmt.Sprintf("the bucket %q does not exist", bucket),
		Hint:    "list your buckets with `atelier obs ls`; bucket names are case-sensitive"}
}

// ErrNoSuchKey is the NoSuchKey error of an object.
func ErrNoSuchKey(bucket, key string) *Error {
	return &Error{Code: NoSuchKey, Bucket: bucket, Key: key,
		Message: fmt.Sprintf("the object %q does not exist in bucket %q", key, bucket),
		Hint:    fmt.Sprintf("keys are case-sensitive; list the bucket with `atelier obs ls obs://%s/`", bucket)}
}

// ErrNoSuchUpload is the NoSuchUpload error of a multipart upload.
func ErrNoSuchUpload(bucket, key, uploadID string) *Error {
	return &Error{Code: NoSuchUpload, Bucket: bucket, Key: key,
		Message: fmt.Sprintf("there is no multipart upload %q of object %q in bucket %q; it may have been completed or aborted", uploadID, key, bucket),
		Hint:    "start a new upload with CreateMultipartUpload (POST ?uploads)"}
}

// ErrBucketNotEmpty is the BucketNotEmpty error of a bucket.
func ErrBucketNotEmpty(bucket string) *Error {
	return &Error{Code: BucketNotEmpty, Bucket: bucket,
		Message: fmt.Sprintf("the bucket %q is not empty: it holds objects or multipart uploads in progress", bucket),
		Hint:    fmt.Sprintf("delete its objects first (`atelier obs rm -r obs://%s/`) and abort its multipart uploads", bucket)}
}

// ErrBucketAlreadyOwnedByYou is the error of creating a bucket the caller
// already owns.
func ErrBucketAlreadyOwnedByYou(bucket string) *Error {
	return &Error{Code: BucketAlreadyOwnedByYou, Bucket: bucket,
		Message: fmt.Sprintf("you already own the bucket %q", bucket)}
}

// ErrBucketAlreadyExists is the error of creating a bucket another user owns.
func ErrBucketAlreadyExists(bucket string) *Error {
	return &Error{Code: BucketAlreadyExists, Bucket: bucket,
		Message: fmt.Sprintf("the bucket name %q is taken by another user; bucket names are shared by all users of this server", bucket),
		Hint:    "choose another name, e.g. with your user name or project as a prefix"}
}

// ErrNoSuchBucketPolicy is the error of reading or deleting a policy a
// bucket does not have.
func ErrNoSuchBucketPolicy(bucket string) *Error {
	return &Error{Code: NoSuchBucketPolicy, Bucket: bucket,
		Message: fmt.Sprintf("the bucket %q has no bucket policy", bucket)}
}

// ErrNoSuchLifecycleConfiguration is the error of reading a lifecycle
// configuration a bucket does not have.
func ErrNoSuchLifecycleConfiguration(bucket string) *Error {
	return &Error{Code: NoSuchLifecycleConfiguration, Bucket: bucket,
		Message: fmt.Sprintf("the bucket %q has no lifecycle configuration", bucket)}
}

// ErrNoSuchCORSConfiguration is the error of reading a CORS configuration a
// bucket does not have.
func ErrNoSuchCORSConfiguration(bucket string) *Error {
	return &Error{Code: NoSuchCORSConfiguration, Bucket: bucket,
		Message: fmt.Sprintf("the bucket %q has no CORS configuration", bucket)}
}

// ErrInvalidPart is the error of a CompleteMultipartUpload part that was not
// uploaded or whose ETag differs (uploaded is "" when no such part exists).
func ErrInvalidPart(partNumber int, etag, uploaded string) *Error {
	msg := fmt.Sprintf("part %d was not uploaded", partNumber)
	if uploaded != "" {
		msg = fmt.Sprintf("part %d has ETag %s, not %s", partNumber, QuoteETag(uploaded), QuoteETag(etag))
	}
	return &Error{Code: InvalidPart, Message: msg,
		Hint: "list the uploaded parts with ListParts (GET ?uploadId=…) and send their part numbers and ETags"}
}

// ErrEntityTooSmall is the error of a part other than the last that is
// smaller than min bytes.
func ErrEntityTooSmall(partNumber int, size, min int64) *Error {
	return &Error{Code: EntityTooSmall,
		Message: fmt.Sprintf("part %d is %d bytes; every part but the last must be at least %d bytes", partNumber, size, min),
		Hint:    "upload larger parts, or upload a small object with a single PUT"}
}

// ErrNotImplemented is the NotImplemented error of a feature Atelier does not
// offer: "Atelier does not implement <what>" (e.g. what = "tagging
// (?tagging)"), with a hint at an alternative ("" for none).
func ErrNotImplemented(what, hint string) *Error {
	return &Error{Code: NotImplemented, Message: "Atelier does not implement " + what, Hint: hint}
}

// HostID is the x-amz-id-2 value (the <HostId> of errors) of a request id:
// an opaque token derived from it, so that either finds the request in logs.
func HostID(requestID string) string {
	sum := sha256.Sum256([]byte("atelier-s3/" + requestID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// SetRequestID sets the x-amz-request-id and x-amz-id-2 response headers.
func SetRequestID(h http.Header, requestID string) {
	if requestID == "" {
		return
	}
	h.Set("x-amz-request-id", requestID)
	h.Set("x-amz-id-2", HostID(requestID))
}

// ErrorResponse is the XML body of an error response (S3 sends it without
// a namespace). Hint is an Atelier extension that S3 clients ignore.
type ErrorResponse struct {
	XMLName    xml.Name  `xml:"Error"`
	Code       ErrorCode `xml:"Code"`
	Message    string    `xml:"Message"`
	BucketName string    `xml:"BucketName,omitempty"`
	Key        string    `xml:"Key,omitempty"`
	Region     string    `xml:"Region,omitempty"`
	Resource   string    `xml:"Resource,omitempty"`
	RequestID  string    `xml:"RequestId"`
	HostID     string    `xml:"HostId"`
	Hint       string    `xml:"Hint,omitempty"`
}

// Generic messages of errors whose text must not reach the client.
const (
	msgInternal = "We encountered an internal error. Please try again; if it persists, give the request id to your administrator."
)

// ToError maps any error to the S3 error to send:
//   - an *Error (anywhere in the chain) as is;
//   - a failure that carries its S3 code (an *s3code.Error: a signature or
//     a checksum that does not match) by that code, with its message and the
//     hint of the *errs.Error around it;
//   - an *errs.Error by kind: NotFound → NoSuchKey (handlers that know better
//     return ErrNoSuchBucket or ErrNoSuchUpload), PermissionDenied →
//     AccessDenied, Unauthenticated → AccessDenied, InvalidAccessKeyId,
//     ExpiredToken or InvalidToken by code, TooLarge → EntityTooLarge,
//     Invalid → InvalidArgument, Unsupported → NotImplemented, Exists and
//     Conflict → OperationAborted, Unavailable → ServiceUnavailable, NoSpace
//     → InsufficientStorage (507), with the error's user message and hint;
//   - anything else → InternalError with a generic message (the cause is
//     kept in Err for the log).
//
// ToError(nil) is nil.
func ToError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	hint := string(errs.HintOf(err))
	var se *s3code.Error
	if errors.As(err, &se) {
		return &Error{Code: ErrorCode(se.Code), Message: se.Msg, Hint: hint, Err: err}
	}
	msg := userMessage(err)
	var code ErrorCode
	switch errs.KindOf(err) {
	case errs.NotFound:
		code = NoSuchKey
	case errs.PermissionDenied:
		code = AccessDenied
	case errs.Unauthenticated:
		switch errs.CodeOf(err) {
		case auth.CodeKeyDisabled:
			code = InvalidAccessKeyID
		case auth.CodeTempExpired, auth.CodeTokenExpired:
			code = ExpiredToken
		case auth.CodeBadSessionToken, auth.CodeBadToken, auth.CodeTokenRevoked:
			code = InvalidToken
		default:
			code = AccessDenied
		}
	case errs.TooLarge:
		code = EntityTooLarge
	case errs.Invalid:
		code = InvalidArgument
	case errs.Unsupported:
		code = NotImplemented
	case errs.Exists, errs.Conflict:
		code = OperationAborted
	case errs.Unavailable:
		code = ServiceUnavailable
	case errs.NoSpace:
		code = InsufficientStorage
	default:
		return &Error{Code: InternalError, Message: msgInternal, Err: err}
	}
	return &Error{Code: code, Message: msg, Hint: hint, Err: err}
}

// userMessage joins the messages of the *errs.Errors in err's chain, never
// the text of a foreign cause (which may carry internal detail); "" when
// there are none.
func userMessage(err error) string {
	var parts []string
	for err != nil {
		var e *errs.Error
		if !errors.As(err, &e) {
			break
		}
		if e.Msg != "" {
			parts = append(parts, e.Msg)
		}
		err = e.Err
	}
	return strings.Join(parts, ": ")
}

// WriteError writes err as an S3 error response (see ToError for the
// mapping), with the x-amz-request-id and x-amz-id-2 headers. A HEAD request
// and a 304 get the status and headers only. It must be called before
// anything else is written.
func WriteError(w http.ResponseWriter, r *http.Request, err error, requestID string) {
	e := ToError(err)
	if e == nil {
		e = &Error{Code: InternalError, Message: msgInternal}
	}
	status := e.Status()
	h := w.Header()
	SetRequestID(h, requestID)
	if e.Region != "" {
		h.Set("x-amz-bucket-region", e.Region)
	}
	if r.Method == http.MethodHead || status == http.StatusNotModified {
		h.Del("Content-Type")
		h.Del("Content-Length")
		w.WriteHeader(status)
		return
	}
	resource := e.Resource
	if resource == "" && r.URL != nil {
		resource = r.URL.Path
	}
	body := ErrorResponse{
		Code:       e.Code,
		Message:    e.message(),
		BucketName: e.Bucket,
		Key:        e.Key,
		Region:     e.Region,
		Resource:   resource,
		RequestID:  requestID,
		HostID:     HostID(requestID),
		Hint:       e.Hint,
	}
	if requestID == "" {
		body.HostID = ""
	}
	if werr := WriteXML(w, status, body); werr != nil {
		// Cannot happen: ErrorResponse always marshals. Send the status alone.
		w.WriteHeader(status)
	}
}
