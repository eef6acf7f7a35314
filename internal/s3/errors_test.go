package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// TestErrorTable checks the statuses S3 clients rely on (S3 API reference,
// "List of error codes").
func TestErrorTable(t *testing.T) {
	want := map[ErrorCode]int{
		AccessDenied: 403, AccountProblem: 403, AuthorizationHeaderMalformed: 400,
		AuthorizationQueryParametersError: 400, BadDigest: 400, BucketAlreadyExists: 409,
		BucketAlreadyOwnedByYou: 409, BucketNotEmpty: 409, EntityTooLarge: 400, EntityTooSmall: 400,
		ExpiredToken: 400, IllegalLocationConstraintException: 400, IncompleteBody: 400, InsufficientStorage: 507,
		InternalError: 500, InvalidAccessKeyID: 403, InvalidArgument: 400, InvalidBucketName: 400,
		InvalidDigest: 400, InvalidLocationConstraint: 400, InvalidPart: 400, InvalidPartOrder: 400, InvalidPartNumber: 416, InvalidStorageClass: 400, MalformedTrailerError: 400,
		InvalidRange: 416, InvalidRequest: 400, InvalidToken: 400, InvalidURI: 400,
		KeyTooLongError: 400, MalformedXML: 400, MalformedPolicy: 400, MetadataTooLarge: 400,
		MethodNotAllowed: 405, MissingContentLength: 411, MissingRequestBodyError: 400,
		MissingSecurityHeader: 400, NoSuchBucket: 404, NoSuchBucketPolicy: 404,
		NoSuchCORSConfiguration: 404, NoSuchKey: 404, NoSuchLifecycleConfiguration: 404,
		NoSuchUpload: 404, NoSuchVersion: 404, NotImplemented: 501, NotModified: 304,
		OperationAborted: 409, PreconditionFailed: 412, RequestTimeout: 400,
		RequestTimeTooSkewed: 403, ServiceUnavailable: 503, SignatureDoesNotMatch: 403,
		SlowDown: 503, UserKeyMustBeSpecified: 400, XAmzContentSHA256Mismatch: 400,
		BadRequest: 400, ConditionalRequestConflict: 409, InvalidTag: 400, NoSuchTagSet: 404,
		IllegalVersioningConfiguration: 400,
		AccessControlListNotSupported:  400, IncorrectNumberOfFilesInPostRequest: 400, InvalidPolicyDocument: 400,
		MalformedPOSTRequest: 400, MaxPostPreDataLengthExceeded: 400,
		InvalidBucketACLWithObjectOwnership: 400, MalformedACLError: 400, NoSuchPublicAccessBlockConfiguration: 404,
		OwnershipControlsNotFoundError: 404, UnexpectedContent: 400, AccessForbidden: 403,
		InvalidBucketState: 409, NoSuchObjectLockConfiguration: 404, ObjectLockConfigurationNotFoundError: 404,
	}
	if len(want) != len(errorTable) {
		t.Errorf("the table has %d codes, the test %d", len(errorTable), len(want))
	}
	for code, status := range want {
		if got := code.Status(); got != status {
			t.Errorf("%s: status %d, want %d", code, got, status)
		}
		if code.DefaultMessage() == "" || !code.Known() {
			t.Errorf("%s: no default message", code)
		}
	}
	if ErrorCode("Bogus").Status() != 500 || ErrorCode("Bogus").Known() || ErrorCode("Bogus").DefaultMessage() == "" {
		t.Error("an unknown code is not a 500 with a message")
	}
	// Every code SigV4 verification reports is in the table.
	for _, c := range []string{
		sigv4.S3AccessDenied, sigv4.S3AuthorizationHeaderMalformed, sigv4.S3AuthorizationQueryParametersError,
		sigv4.S3EntityTooLarge, sigv4.S3IncompleteBody, sigv4.S3InternalError, sigv4.S3InvalidAccessKeyID,
		sigv4.S3InvalidArgument, sigv4.S3InvalidRequest, sigv4.S3MissingSecurityHeader,
		sigv4.S3RequestTimeTooSkewed, sigv4.S3SignatureDoesNotMatch, sigv4.S3XAmzContentSHA256Mismatch,
	} {
		if !ErrorCode(c).Known() {
			t.Errorf("SigV4 code %s is not in the table", c)
		}
	}
}

func TestToError(t *testing.T) {
	s3err := ErrNoSuchBucket("data")
	sigErr := errs.E("sigv4.Verify", errs.Unauthenticated, errs.Code("ATL.AUTH.0018"),
		"the request signature we calculated does not match", errs.Hint("check the secret key"),
		&s3code.Error{Code: sigv4.S3SignatureDoesNotMatch, Msg: "the request signature we calculated does not match"})
	malformed := errs.E("sigv4.Verify", errs.Invalid, errs.Code("ATL.AUTH.0008"), "wrong region",
		&s3code.Error{Code: sigv4.S3AuthorizationHeaderMalformed, Msg: `the region "eu-west-1" is wrong; expecting "us-east-1"`})
	badDate := errs.E("sigv4.Verify", errs.Invalid, "bad date", &s3code.Error{Code: sigv4.S3AccessDenied, Msg: "X-Amz-Date does not parse"})
	secret := errors.New("open /var/lib/atelier/secret: permission denied")
	tests := []struct {
		name   string
		err    error
		code   ErrorCode
		status int
		msg    string // part of the message
		hint   string
	}{
		{"s3 error", s3err, NoSuchBucket, 404, `"data"`, "atelier obs ls"},
		{"wrapped s3 error", errs.E("obs.Get", errs.NotFound, s3err), NoSuchBucket, 404, `"data"`, ""},
		{"fmt-wrapped s3 error", fmt.Errorf("ctx: %w", s3err), NoSuchBucket, 404, `"data"`, ""},
		{"sigv4 mismatch", sigErr, SignatureDoesNotMatch, 403, "does not match", "check the secret key"},
		{"sigv4 malformed", malformed, AuthorizationHeaderMalformed, 400, `expecting "us-east-1"`, ""},
		{"sigv4 bad date", badDate, AccessDenied, 403, "X-Amz-Date", ""},
		{"not found", errs.E("meta.GetObject", errs.NotFound, `object "k" not found`), NoSuchKey, 404, `object "k" not found`, ""},
		{"permission", errs.E("auth.Authorize", errs.PermissionDenied, `user "bob" may not obs:GetObject on obs:::b/k`, errs.Hint("ask an admin")),
			AccessDenied, 403, `user "bob" may not obs:GetObject`, "ask an admin"},
		{"unauthenticated", errs.E("auth", errs.Unauthenticated, "no credentials"), AccessDenied, 403, "no credentials", ""},
		{"key disabled", errs.E("auth", errs.Unauthenticated, auth.CodeKeyDisabled, "the access key is disabled"), InvalidAccessKeyID, 403, "disabled", ""},
		{"temp expired", errs.E("auth", errs.Unauthenticated, auth.CodeTempExpired, "temporary credentials expired"), ExpiredToken, 400, "expired", ""},
		{"session token", errs.E("auth", errs.Unauthenticated, auth.CodeBadSessionToken, "wrong session token"), InvalidToken, 400, "session token", ""},
		{"too large", errs.E("obs", errs.TooLarge, "the object is larger than 5 GiB"), EntityTooLarge, 400, "5 GiB", ""},
		{"invalid", errs.E("obs", errs.Invalid, "bad max-keys"), InvalidArgument, 400, "max-keys", ""},
		{"unsupported", errs.E("obs", errs.Unsupported, "SSE-C"), NotImplemented, 501, "SSE-C", ""},
		{"conflict", errs.E("obs", errs.Conflict, "busy"), OperationAborted, 409, "busy", ""},
		{"unavailable", errs.E("meta", errs.Unavailable, secret), ServiceUnavailable, 503, "try again", ""},
		{"storage full", errs.E("meta", errs.NoSpace, "the metadata database is full", errs.Hint("delete objects")), InsufficientStorage, 507, "database is full", "delete objects"},
		{"internal", errs.E("blob", errs.Internal, "disk broke", secret), InternalError, 500, "internal error", ""},
		{"io", errs.E("blob", errs.IO, secret), InternalError, 500, "internal error", ""},
		{"foreign", secret, InternalError, 500, "internal error", ""},
	}
	for _, tc := range tests {
		e := ToError(tc.err)
		if e.Code != tc.code || e.Status() != tc.status {
			t.Errorf("%s: %s %d, want %s %d", tc.name, e.Code, e.Status(), tc.code, tc.status)
		}
		if !strings.Contains(e.message(), tc.msg) {
			t.Errorf("%s: message %q does not contain %q", tc.name, e.message(), tc.msg)
		}
		if strings.Contains(e.message(), "/var/lib") {
			t.Errorf("%s: message %q leaks the cause", tc.name, e.message())
		}
		if tc.hint != "" && !strings.Contains(e.Hint, tc.hint) {
			t.Errorf("%s: hint %q does not contain %q", tc.name, e.Hint, tc.hint)
		}
		if tc.code != NoSuchBucket && !errors.Is(e, tc.err) {
			t.Errorf("%s: the cause is not kept", tc.name)
		}
	}
	if ToError(nil) != nil {
		t.Error("ToError(nil) != nil")
	}
}

func TestErrAccessDenied(t *testing.T) {
	e := ErrAccessDenied("bob", OpGetObject.Action(), "datasets", "mnist/train.csv")
	for _, want := range []string{`user "bob"`, "obs:GetObject", "obs:::datasets/mnist/train.csv"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q does not contain %q", e.Message, want)
		}
	}
	if e.Bucket != "datasets" || e.Key != "mnist/train.csv" || e.Status() != 403 || !strings.Contains(e.Hint, "obs:GetObject") {
		t.Errorf("unexpected error %+v", e)
	}
	anon := ErrAccessDenied("", "obs:ListBucket", "datasets", "")
	if !strings.Contains(anon.Message, "anonymous") || !strings.Contains(anon.Message, "obs:::datasets") || !strings.Contains(anon.Hint, `Principal "*"`) {
		t.Errorf("unexpected anonymous error %+v", anon)
	}
	if ResourceName("", "") != "*" {
		t.Error(`ResourceName("", "") != "*"`)
	}
}

func TestErrorConstructors(t *testing.T) {
	tests := []struct {
		e      *Error
		code   ErrorCode
		inMsg  string
		bucket string
	}{
		{ErrNoSuchKey("b", "dir/k"), NoSuchKey, `"dir/k"`, "b"},
		{ErrNoSuchUpload("b", "k", "u-1"), NoSuchUpload, `"u-1"`, "b"},
		{ErrBucketNotEmpty("b"), BucketNotEmpty, `"b"`, "b"},
		{ErrBucketAlreadyOwnedByYou("b"), BucketAlreadyOwnedByYou, `"b"`, "b"},
		{ErrBucketAlreadyExists("b"), BucketAlreadyExists, `"b"`, "b"},
		{ErrNoSuchBucketPolicy("b"), NoSuchBucketPolicy, `"b"`, "b"},
		{ErrNoSuchLifecycleConfiguration("b"), NoSuchLifecycleConfiguration, `"b"`, "b"},
		{ErrNoSuchCORSConfiguration("b"), NoSuchCORSConfiguration, `"b"`, "b"},
		{ErrInvalidPart(3, "abc", ""), InvalidPart, "part 3 was not uploaded", ""},
		{ErrInvalidPart(3, `"abc"`, "def"), InvalidPart, `part 3 has ETag "def", not "abc"`, ""},
		{ErrEntityTooSmall(2, 100, 5<<20), EntityTooSmall, "part 2 is 100 bytes", ""},
		{ErrNotImplemented("SSE-C", ""), NotImplemented, "Atelier does not implement SSE-C", ""},
		{NewError(MalformedXML, ""), MalformedXML, "not well-formed", ""},
		{Errorf(InvalidArgument, "max-keys %d", -1), InvalidArgument, "max-keys -1", ""},
	}
	for _, tc := range tests {
		if tc.e.Code != tc.code || !strings.Contains(tc.e.Error(), tc.inMsg) || tc.e.Bucket != tc.bucket ||
			!strings.HasPrefix(tc.e.Error(), string(tc.code)+": ") {
			t.Errorf("%s: unexpected %+v (Error() = %q)", tc.code, tc.e, tc.e.Error())
		}
	}
}

func TestWriteError(t *testing.T) {
	r := httptest.NewRequest("GET", "/datasets/a%20b", nil)
	w := httptest.NewRecorder()
	e := ErrNoSuchKey("datasets", "a b")
	WriteError(w, r, fmt.Errorf("get: %w", e), "REQ123")
	res := w.Result()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 404 || res.Header.Get("Content-Type") != "application/xml" ||
		res.Header.Get("x-amz-request-id") != "REQ123" || res.Header.Get("x-amz-id-2") != HostID("REQ123") {
		t.Fatalf("status %d, headers %v", res.StatusCode, res.Header)
	}
	if !strings.HasPrefix(string(body), xml.Header) {
		t.Errorf("no XML declaration: %s", body)
	}
	var got ErrorResponse
	if err := xml.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := ErrorResponse{XMLName: xml.Name{Local: "Error"}, Code: NoSuchKey, Message: e.Message, BucketName: "datasets",
		Key: "a b", Resource: "/datasets/a b", RequestID: "REQ123", HostID: HostID("REQ123"), Hint: e.Hint}
	if got != want {
		t.Errorf("body\n%+v\nwant\n%+v", got, want)
	}
	if res.Header.Get("Content-Length") != fmt.Sprint(len(body)) {
		t.Errorf("Content-Length %s, body %d bytes", res.Header.Get("Content-Length"), len(body))
	}

	// HEAD and 304: status only.
	for _, tc := range []struct {
		method string
		err    error
		status int
	}{
		{"HEAD", ErrNoSuchKey("b", "k"), 404},
		{"HEAD", ErrAccessDenied("bob", "obs:GetObject", "b", "k"), 403},
		{"GET", NewError(NotModified, ""), 304},
	} {
		w := httptest.NewRecorder()
		w.Header().Set("Content-Type", "text/plain")
		WriteError(w, httptest.NewRequest(tc.method, "/b/k", nil), tc.err, "R")
		if w.Code != tc.status || w.Body.Len() != 0 || w.Header().Get("x-amz-request-id") != "R" || w.Header().Get("Content-Type") != "" {
			t.Errorf("%s %v: status %d, body %q, headers %v", tc.method, tc.err, w.Code, w.Body.String(), w.Header())
		}
	}

	// Region header, explicit Resource, internal errors without detail.
	w = httptest.NewRecorder()
	WriteError(w, r, &Error{Code: IllegalLocationConstraintException, Region: "us-east-1", Resource: "/x"}, "R")
	if w.Code != 400 || w.Header().Get("x-amz-bucket-region") != "us-east-1" || !strings.Contains(w.Body.String(), "<Resource>/x</Resource>") ||
		!strings.Contains(w.Body.String(), "<Region>us-east-1</Region>") {
		t.Errorf("region error: %d %v %s", w.Code, w.Header(), w.Body)
	}
	w = httptest.NewRecorder()
	WriteError(w, r, errors.New("pq: password authentication failed"), "R")
	if w.Code != 500 || strings.Contains(w.Body.String(), "pq:") || !strings.Contains(w.Body.String(), "<Code>InternalError</Code>") {
		t.Errorf("internal error: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	WriteError(w, r, nil, "")
	if w.Code != 500 || strings.Contains(w.Body.String(), "<HostId>") && !strings.Contains(w.Body.String(), "<HostId></HostId>") {
		t.Errorf("nil error: %d %s", w.Code, w.Body)
	}
}

func TestHostID(t *testing.T) {
	if a, a2 := HostID("a"), HostID("a"); a == HostID("b") || a != a2 || len(a) < 40 {
		t.Error("HostID is not a stable, distinct token")
	}
	h := http.Header{}
	SetRequestID(h, "")
	if len(h) != 0 {
		t.Error("SetRequestID set headers for an empty id")
	}
}
