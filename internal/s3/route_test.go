package s3

import (
	"bufio"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// readRequest parses a request the way net/http's server does, from a raw
// request line, so that the URL's Path/RawPath are what Route sees live.
func readRequest(t testing.TB, method, target, host string, headers ...string) *http.Request {
	t.Helper()
	var b strings.Builder
	b.WriteString(method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n")
	for i := 0; i+1 < len(headers); i += 2 {
		b.WriteString(headers[i] + ": " + headers[i+1] + "\r\n")
	}
	b.WriteString("\r\n")
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(b.String())))
	if err != nil {
		t.Fatalf("ReadRequest(%s %s): %v", method, target, err)
	}
	return r
}

func codeOf(err error) ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestRouteOps(t *testing.T) {
	copySrc := []string{"x-amz-copy-source", "/src/k"}
	tests := []struct {
		method, target string
		headers        []string
		op             Op
		bucket, key    string
		code           ErrorCode
	}{
		{"GET", "/", nil, OpListBuckets, "", "", ""},
		{"GET", "/?x-id=ListBuckets", nil, OpListBuckets, "", "", ""},
		{"PUT", "/", nil, OpNone, "", "", MethodNotAllowed},
		{"HEAD", "/", nil, OpNone, "", "", MethodNotAllowed},
		{"OPTIONS", "/", nil, OpOptions, "", "", ""},

		{"PUT", "/bk1", nil, OpCreateBucket, "bk1", "", ""},
		{"PUT", "/bk1/", nil, OpCreateBucket, "bk1", "", ""},
		{"DELETE", "/bk1", nil, OpDeleteBucket, "bk1", "", ""},
		{"HEAD", "/bk1", nil, OpHeadBucket, "bk1", "", ""},
		{"GET", "/bk1?location", nil, OpGetBucketLocation, "bk1", "", ""},
		{"GET", "/bk1", nil, OpListObjects, "bk1", "", ""},
		{"GET", "/bk1?prefix=a&delimiter=/&max-keys=10", nil, OpListObjects, "bk1", "", ""},
		{"GET", "/bk1?list-type=2&prefix=a", nil, OpListObjectsV2, "bk1", "", ""},
		{"GET", "/bk1?list-type=3", nil, OpNone, "bk1", "", InvalidArgument},
		{"GET", "/bk1?uploads", nil, OpListMultipartUploads, "bk1", "", ""},
		{"GET", "/bk1?uploads=&prefix=x", nil, OpListMultipartUploads, "bk1", "", ""},
		{"GET", "/bk1?policy", nil, OpGetBucketPolicy, "bk1", "", ""},
		{"PUT", "/bk1?policy", nil, OpPutBucketPolicy, "bk1", "", ""},
		{"DELETE", "/bk1?policy", nil, OpDeleteBucketPolicy, "bk1", "", ""},
		{"GET", "/bk1?lifecycle", nil, OpGetBucketLifecycle, "bk1", "", ""},
		{"PUT", "/bk1?lifecycle", nil, OpPutBucketLifecycle, "bk1", "", ""},
		{"DELETE", "/bk1?lifecycle", nil, OpDeleteBucketLifecycle, "bk1", "", ""},
		{"GET", "/bk1?cors", nil, OpGetBucketCors, "bk1", "", ""},
		{"PUT", "/bk1?cors", nil, OpPutBucketCors, "bk1", "", ""},
		{"DELETE", "/bk1?cors", nil, OpDeleteBucketCors, "bk1", "", ""},
		{"POST", "/bk1?delete", nil, OpDeleteObjects, "bk1", "", ""},
		{"POST", "/bk1?delete=", nil, OpDeleteObjects, "bk1", "", ""},
		{"OPTIONS", "/bk1", nil, OpOptions, "bk1", "", ""},
		{"POST", "/bk1", nil, OpPostObject, "bk1", "", ""},
		{"GET", "/bk1?delete", nil, OpNone, "bk1", "", MethodNotAllowed},
		{"HEAD", "/bk1?location", nil, OpNone, "bk1", "", MethodNotAllowed},
		{"DELETE", "/bk1?uploadId=u", nil, OpNone, "bk1", "", InvalidRequest},
		{"GET", "/bk1?policy&cors", nil, OpNone, "bk1", "", InvalidRequest},
		{"GET", "/bk1?versioning", nil, OpGetBucketVersioning, "bk1", "", ""},
		{"PUT", "/bk1?versioning", nil, OpPutBucketVersioning, "bk1", "", ""},
		{"DELETE", "/bk1?versioning", nil, OpNone, "bk1", "", MethodNotAllowed},
		{"GET", "/bk1?versions", nil, OpListObjectVersions, "bk1", "", ""},
		{"GET", "/bk1?versions&prefix=a&key-marker=b&version-id-marker=null", nil, OpListObjectVersions, "bk1", "", ""},
		{"GET", "/bk1/k?versions", nil, OpNone, "bk1", "k", InvalidRequest},
		{"GET", "/bk1/k?versionId=null", nil, OpGetObject, "bk1", "k", ""},
		{"DELETE", "/bk1/k?versionId=x", nil, OpDeleteObject, "bk1", "k", ""},
		{"GET", "/bk1?acl", nil, OpGetBucketACL, "bk1", "", ""},
		{"PUT", "/bk1?acl", nil, OpPutBucketACL, "bk1", "", ""},
		{"DELETE", "/bk1?acl", nil, OpNone, "bk1", "", MethodNotAllowed},
		{"GET", "/bk1?ownershipControls", nil, OpGetBucketOwnershipControls, "bk1", "", ""},
		{"PUT", "/bk1?ownershipControls", nil, OpPutBucketOwnershipControls, "bk1", "", ""},
		{"DELETE", "/bk1?ownershipControls", nil, OpDeleteBucketOwnershipControls, "bk1", "", ""},
		{"GET", "/bk1?publicAccessBlock", nil, OpGetPublicAccessBlock, "bk1", "", ""},
		{"PUT", "/bk1?publicAccessBlock", nil, OpPutPublicAccessBlock, "bk1", "", ""},
		{"DELETE", "/bk1?publicAccessBlock", nil, OpDeletePublicAccessBlock, "bk1", "", ""},
		{"GET", "/bk1?policyStatus", nil, OpGetBucketPolicyStatus, "bk1", "", ""},
		{"PUT", "/bk1?policyStatus", nil, OpNone, "bk1", "", MethodNotAllowed},
		{"GET", "/bk1/k?ownershipControls", nil, OpNone, "bk1", "k", InvalidRequest},
		{"GET", "/bk1/k?acl&versionId=v", nil, OpGetObjectACL, "bk1", "k", ""},
		{"PUT", "/bk1/k?acl&versionId=null", nil, OpPutObjectACL, "bk1", "k", ""},
		{"PUT", "/bk1?website", nil, OpNone, "bk1", "", NotImplemented},
		{"PUT", "/bk1?tagging", nil, OpPutBucketTagging, "bk1", "", ""},
		{"GET", "/bk1?tagging", nil, OpGetBucketTagging, "bk1", "", ""},
		{"DELETE", "/bk1?tagging", nil, OpDeleteBucketTagging, "bk1", "", ""},
		{"POST", "/bk1?tagging", nil, OpNone, "bk1", "", MethodNotAllowed},
		{"GET", "/bk1?attributes", nil, OpNone, "bk1", "", InvalidRequest},
		{"GET", "/bk1?policy&acl", nil, OpNone, "bk1", "", InvalidRequest},
		{"GET", "/bk1?object-lock", nil, OpGetObjectLockConfiguration, "bk1", "", ""},
		{"PUT", "/bk1?object-lock", nil, OpPutObjectLockConfiguration, "bk1", "", ""},
		{"DELETE", "/bk1?object-lock", nil, OpNone, "bk1", "", MethodNotAllowed},
		{"GET", "/bk1/k?object-lock", nil, OpNone, "bk1", "k", InvalidRequest},
		{"GET", "/bk1/k?retention", nil, OpGetObjectRetention, "bk1", "k", ""},
		{"PUT", "/bk1/k?retention&versionId=null", nil, OpPutObjectRetention, "bk1", "k", ""},
		{"DELETE", "/bk1/k?retention", nil, OpNone, "bk1", "k", MethodNotAllowed},
		{"GET", "/bk1/k?legal-hold&versionId=v", nil, OpGetObjectLegalHold, "bk1", "k", ""},
		{"PUT", "/bk1/k?legal-hold", nil, OpPutObjectLegalHold, "bk1", "k", ""},
		{"POST", "/bk1/k?legal-hold", nil, OpNone, "bk1", "k", MethodNotAllowed},
		{"GET", "/bk1?retention", nil, OpNone, "bk1", "", InvalidRequest},
		{"GET", "/bk1?legal-hold", nil, OpNone, "bk1", "", InvalidRequest},
		{"GET", "/bk1/k?retention&legal-hold", nil, OpNone, "bk1", "k", InvalidRequest},

		{"PUT", "/bk1/k", nil, OpPutObject, "bk1", "k", ""},
		{"PUT", "/bk1/k", copySrc, OpCopyObject, "bk1", "k", ""},
		{"GET", "/bk1/k", nil, OpGetObject, "bk1", "k", ""},
		{"GET", "/bk1/k?partNumber=2&response-content-type=text/plain", nil, OpGetObject, "bk1", "k", ""},
		{"GET", "/bk1/k?versionId=null", nil, OpGetObject, "bk1", "k", ""},
		{"HEAD", "/bk1/k", nil, OpHeadObject, "bk1", "k", ""},
		{"DELETE", "/bk1/k", nil, OpDeleteObject, "bk1", "k", ""},
		{"POST", "/bk1/k?uploads", nil, OpCreateMultipartUpload, "bk1", "k", ""},
		{"PUT", "/bk1/k?partNumber=1&uploadId=u", nil, OpUploadPart, "bk1", "k", ""},
		{"PUT", "/bk1/k?uploadId=u&partNumber=1", copySrc, OpUploadPartCopy, "bk1", "k", ""},
		{"POST", "/bk1/k?uploadId=u", nil, OpCompleteMultipartUpload, "bk1", "k", ""},
		{"DELETE", "/bk1/k?uploadId=u", nil, OpAbortMultipartUpload, "bk1", "k", ""},
		{"GET", "/bk1/k?uploadId=u", nil, OpListParts, "bk1", "k", ""},
		{"GET", "/bk1/k?uploadId=u&max-parts=10&part-number-marker=3", nil, OpListParts, "bk1", "k", ""},
		{"OPTIONS", "/bk1/k?uploads", nil, OpOptions, "bk1", "k", ""},
		{"PUT", "/bk1/k?uploadId=u", nil, OpNone, "bk1", "k", InvalidRequest},
		{"PUT", "/bk1/k?partNumber=1", nil, OpNone, "bk1", "k", InvalidRequest},
		{"HEAD", "/bk1/k?uploadId=u", nil, OpNone, "bk1", "k", MethodNotAllowed},
		{"GET", "/bk1/k?uploads", nil, OpNone, "bk1", "k", MethodNotAllowed},
		{"POST", "/bk1/k", nil, OpNone, "bk1", "k", MethodNotAllowed},
		{"GET", "/bk1/k?location", nil, OpNone, "bk1", "k", InvalidRequest},
		{"POST", "/bk1/k?delete", nil, OpNone, "bk1", "k", InvalidRequest},
		{"GET", "/bk1/k?acl", nil, OpGetObjectACL, "bk1", "k", ""},
		{"PUT", "/bk1/k?acl", nil, OpPutObjectACL, "bk1", "k", ""},
		{"PUT", "/bk1/k?tagging", nil, OpPutObjectTagging, "bk1", "k", ""},
		{"GET", "/bk1/k?tagging", nil, OpGetObjectTagging, "bk1", "k", ""},
		{"DELETE", "/bk1/k?tagging", nil, OpDeleteObjectTagging, "bk1", "k", ""},
		{"GET", "/bk1/k?attributes", nil, OpGetObjectAttributes, "bk1", "k", ""},
		{"HEAD", "/bk1/k?attributes", nil, OpNone, "bk1", "k", MethodNotAllowed},
		{"GET", "/bk1/k?tagging&attributes", nil, OpNone, "bk1", "k", InvalidRequest},
		{"POST", "/bk1/k?restore", nil, OpNone, "bk1", "k", NotImplemented},
		{"POST", "/bk1/k?select&select-type=2", nil, OpNone, "bk1", "k", NotImplemented},
		{"PATCH", "/bk1/k", nil, OpNone, "", "", MethodNotAllowed},
		{"TRACE", "/", nil, OpNone, "", "", MethodNotAllowed},

		{"GET", "/My_Bucket/k", nil, OpNone, "My_Bucket", "k", InvalidBucketName},
		{"GET", "/ab", nil, OpNone, "ab", "", InvalidBucketName},
		{"GET", "//k", nil, OpNone, "", "k", InvalidBucketName},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			r := readRequest(t, tc.method, tc.target, "127.0.0.1:9000", tc.headers...)
			got, err := Route(r, "s3.example.com")
			if tc.code != "" {
				if codeOf(err) != tc.code {
					t.Fatalf("Route = %+v, %v; want error %s", got, err, tc.code)
				}
				if e := ToError(err); e.Message == "" || e.Status() == http.StatusInternalServerError {
					t.Errorf("error %v has no message or a 500 status", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Route: %v", err)
			}
			want := Target{Op: tc.op, Bucket: tc.bucket, Key: tc.key}
			if got != want {
				t.Fatalf("Route = %+v, want %+v", got, want)
			}
		})
	}
}

func TestRouteNotImplementedNamesSubresource(t *testing.T) {
	for _, sub := range []string{"website", "notification", "inventory"} {
		_, err := Route(readRequest(t, "GET", "/bucket?"+sub, "h"), "")
		if err == nil || !strings.Contains(ToError(err).Message, "?"+sub) {
			t.Errorf("?%s: error %v does not name the sub-resource", sub, err)
		}
	}
}

func TestRouteKeysExact(t *testing.T) {
	tests := []struct{ target, key string }{
		{"/bkt/a%2Fb", "a/b"},
		{"/bkt/a%252Fb", "a%2Fb"},
		{"/bkt/a+b", "a+b"},
		{"/bkt/a%2Bb", "a+b"},
		{"/bkt/a%20b", "a b"},
		{"/bkt/../x", "../x"},
		{"/bkt/./x/../y", "./x/../y"},
		{"/bkt/dir/", "dir/"},
		{"/bkt/dir//", "dir//"},
		{"/bkt//x", "/x"},
		{"/bkt/%E4%B8%AD%E6%96%87/%E6%96%87%E4%BB%B6.txt", "中文/文件.txt"},
		{"/bkt/中文", "中文"},
		{"/bkt/中%2F文", "中/文"},
		{"/bkt/%25", "%"},
		{"/bkt/a;b=c,d:e@f$g&h'i(j)k*l!", "a;b=c,d:e@f$g&h'i(j)k*l!"},
		{"/bkt/%3Fq%3Dx%23frag", "?q=x#frag"},
		{"/bkt/~user/%7Efile", "~user/~file"},
		{"/bkt/tab%09nl%0A", "tab\tnl\n"},
		{"/bkt/" + strings.Repeat("k", 1024), strings.Repeat("k", 1024)},
	}
	for _, tc := range tests {
		got, err := Route(readRequest(t, "GET", tc.target, "127.0.0.1:9000"), "")
		if err != nil {
			t.Errorf("%s: %v", tc.target, err)
			continue
		}
		if got.Bucket != "bkt" || got.Key != tc.key || got.Op != OpGetObject {
			t.Errorf("%s: got %+v, want key %q", tc.target, got, tc.key)
		}
		// The same key addressed virtual-host-style.
		vt := "/" + strings.TrimPrefix(tc.target, "/bkt/")
		vgot, err := Route(readRequest(t, "GET", vt, "bkt.s3.example.com"), "s3.example.com")
		if err != nil || vgot.Key != tc.key || vgot.Bucket != "bkt" || !vgot.VirtualHost {
			t.Errorf("virtual host %s: got %+v, %v; want key %q", vt, vgot, err, tc.key)
		}
	}
}

func TestRouteBadKeys(t *testing.T) {
	tests := []struct {
		target string
		code   ErrorCode
	}{
		{"/bkt/" + strings.Repeat("k", 1025), KeyTooLongError},
		{"/bkt/%E4%B8%AD" + strings.Repeat("k", 1022), KeyTooLongError},
		{"/bkt/a%00b", InvalidArgument},
		{"/bkt/%FF%FE", InvalidArgument},
	}
	for _, tc := range tests {
		_, err := Route(readRequest(t, "PUT", tc.target, "h"), "")
		if codeOf(err) != tc.code {
			t.Errorf("%.40s: error %v, want %s", tc.target, err, tc.code)
		}
		var e *Error
		if errors.As(err, &e) && e.Bucket != "bkt" {
			t.Errorf("%.40s: error does not name the bucket: %+v", tc.target, e)
		}
	}
}

// TestRouteStaleRawPath: a URL whose RawPath no longer matches Path (changed
// by a middleware) is routed by Path.
func TestRouteStaleRawPath(t *testing.T) {
	r := readRequest(t, "GET", "/bkt/a%2Fb", "h")
	r.URL.Path = "/bkt/c"
	got, err := Route(r, "")
	if err != nil || got.Key != "c" {
		t.Fatalf("got %+v, %v; want key c", got, err)
	}
}

func TestRouteVirtualHost(t *testing.T) {
	tests := []struct {
		host, domain, target string
		bucket, key          string
		virtual              bool
		code                 ErrorCode
	}{
		{"mybucket.s3.example.com", "s3.example.com", "/k", "mybucket", "k", true, ""},
		{"mybucket.s3.example.com:9000", "s3.example.com", "/a/b", "mybucket", "a/b", true, ""},
		{"MyBucket.S3.Example.COM", "s3.example.com", "/k", "mybucket", "k", true, ""},
		{"my.dotted.bucket.s3.example.com", "s3.example.com", "/k", "my.dotted.bucket", "k", true, ""},
		{"mybucket.s3.example.com.", "s3.example.com", "/", "mybucket", "", true, ""},
		{"mybucket.s3.example.com", "s3.example.com.", "/", "mybucket", "", true, ""},
		{"s3.example.com", "s3.example.com", "/bkt/k", "bkt", "k", false, ""},
		{"s3.example.com:9000", "s3.example.com", "/bkt/k", "bkt", "k", false, ""},
		{"127.0.0.1:9000", "s3.example.com", "/bkt/k", "bkt", "k", false, ""},
		{"[::1]:9000", "s3.example.com", "/bkt/k", "bkt", "k", false, ""},
		{"mybucket.other.com", "s3.example.com", "/bkt/k", "bkt", "k", false, ""},
		{"mybucket.s3.example.com", "", "/bkt/k", "bkt", "k", false, ""},
		{"xs3.example.com", "s3.example.com", "/bkt/k", "bkt", "k", false, ""},
		{"bad_bucket.s3.example.com", "s3.example.com", "/k", "", "", true, InvalidBucketName},
	}
	for _, tc := range tests {
		got, err := Route(readRequest(t, "GET", tc.target, tc.host), tc.domain)
		if tc.code != "" {
			if codeOf(err) != tc.code {
				t.Errorf("%s %s: error %v, want %s", tc.host, tc.target, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", tc.host, tc.target, err)
			continue
		}
		if got.Bucket != tc.bucket || got.Key != tc.key || got.VirtualHost != tc.virtual {
			t.Errorf("%s %s: got %+v, want %s/%s virtual=%v", tc.host, tc.target, got, tc.bucket, tc.key, tc.virtual)
		}
	}
}

func TestOpNamesAndActions(t *testing.T) {
	seen := map[string]bool{}
	for o := OpNone + 1; o < numOps; o++ {
		if o.String() == "" || seen[o.String()] {
			t.Errorf("op %d has an empty or repeated name %q", o, o.String())
		}
		seen[o.String()] = true
		if o != OpOptions && !strings.HasPrefix(o.Action(), "obs:") {
			t.Errorf("%v has action %q", o, o.Action())
		}
	}
	if OpGetObject.String() != "GetObject" || OpHeadBucket.Action() != "obs:ListBucket" ||
		OpListBuckets.Action() != "obs:ListAllMyBuckets" || Op(99).String() != "Op(99)" || Op(-1).Action() != "" {
		t.Error("unexpected op names or actions")
	}
}

func TestParseCopySource(t *testing.T) {
	tests := []struct {
		h, bucket, key, version string
		code                    ErrorCode
	}{
		{"/src/key", "src", "key", "", ""},
		{"src/key", "src", "key", "", ""},
		{"src/dir/a%20b%2Bc", "src", "dir/a b+c", "", ""},
		{"src%2Fdir%2Fkey", "src", "dir/key", "", ""},
		{"/src/%E4%B8%AD%E6%96%87", "src", "中文", "", ""},
		{"/src/a+b", "src", "a+b", "", ""},
		{"/src/k%3FversionId%3Dx", "src", "k?versionId=x", "", ""},
		{"/src/key?versionId=abc", "src", "key", "abc", ""},
		{"/src/key?versionId=null", "src", "key", "null", ""},
		{"/src/what?.txt", "src", "what?.txt", "", ""},
		{"/src/dir/", "src", "dir/", "", ""},
		{"/src//x", "src", "/x", "", ""},
		{"", "", "", "", InvalidArgument},
		{"/", "", "", "", InvalidArgument},
		{"/src", "", "", "", InvalidArgument},
		{"/src/", "", "", "", InvalidArgument},
		{"/src/key?versionId=", "", "", "", InvalidArgument},
		{"/src/%zz", "", "", "", InvalidArgument},
		{"/Src/key", "", "", "", InvalidBucketName},
		{"/src/" + strings.Repeat("k", 1025), "", "", "", KeyTooLongError},
		{"/src/a%00", "", "", "", InvalidArgument},
	}
	for _, tc := range tests {
		b, k, v, err := ParseCopySource(tc.h)
		if tc.code != "" {
			if codeOf(err) != tc.code {
				t.Errorf("ParseCopySource(%.40q) error %v, want %s", tc.h, err, tc.code)
			}
			continue
		}
		if err != nil || b != tc.bucket || k != tc.key || v != tc.version {
			t.Errorf("ParseCopySource(%q) = %q, %q, %q, %v; want %q, %q, %q", tc.h, b, k, v, err, tc.bucket, tc.key, tc.version)
		}
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		h             string
		size          int64
		start, length int64
		ok            bool
		code          ErrorCode
	}{
		{"", 100, 0, 0, false, ""},
		{"bytes=0-9", 100, 0, 10, true, ""},
		{"bytes=0-0", 100, 0, 1, true, ""},
		{"bytes=99-99", 100, 99, 1, true, ""},
		{"bytes=90-", 100, 90, 10, true, ""},
		{"bytes=0-", 100, 0, 100, true, ""},
		{"bytes=-10", 100, 90, 10, true, ""},
		{"bytes=-100", 100, 0, 100, true, ""},
		{"bytes=-200", 100, 0, 100, true, ""},
		{"bytes=50-500", 100, 50, 50, true, ""},
		{"bytes=50-99999999999999999999999", 100, 50, 50, true, ""},
		{"BYTES=1-2", 100, 1, 2, true, ""},
		{" bytes = 1 - 2 ", 100, 1, 2, true, ""},
		{"bytes=100-", 100, 0, 0, false, InvalidRange},
		{"bytes=100-200", 100, 0, 0, false, InvalidRange},
		{"bytes=99999999999999999999-", 100, 0, 0, false, InvalidRange},
		{"bytes=-0", 100, 0, 0, false, InvalidRange},
		{"bytes=0-", 0, 0, 0, false, InvalidRange},
		{"bytes=0-0", 0, 0, 0, false, InvalidRange},
		{"bytes=-5", 0, 0, 0, false, InvalidRange},
		{"bytes=0-1,3-4", 100, 0, 0, false, ""},
		{"bytes=5-1", 100, 0, 0, false, ""},
		{"items=0-1", 100, 0, 0, false, ""},
		{"bytes=a-b", 100, 0, 0, false, ""},
		{"bytes=0", 100, 0, 0, false, ""},
		{"bytes=-", 100, 0, 0, false, ""},
		{"bytes=+1-2", 100, 0, 0, false, ""},
		{"bytes=1--2", 100, 0, 0, false, ""},
		{"bytes 0-1", 100, 0, 0, false, ""},
		{"", 0, 0, 0, false, ""},
	}
	for _, tc := range tests {
		start, length, ok, err := ParseRange(tc.h, tc.size)
		if tc.code != "" {
			if codeOf(err) != tc.code || ToError(err).Status() != http.StatusRequestedRangeNotSatisfiable {
				t.Errorf("ParseRange(%q, %d) error %v, want %s", tc.h, tc.size, err, tc.code)
			}
			continue
		}
		if err != nil || start != tc.start || length != tc.length || ok != tc.ok {
			t.Errorf("ParseRange(%q, %d) = %d, %d, %v, %v; want %d, %d, %v", tc.h, tc.size, start, length, ok, err, tc.start, tc.length, tc.ok)
		}
	}
}

func TestParsePartNumber(t *testing.T) {
	for s, want := range map[string]int{"1": 1, "10000": 10000, "42": 42} {
		if n, err := ParsePartNumber(s); err != nil || n != want {
			t.Errorf("ParsePartNumber(%q) = %d, %v", s, n, err)
		}
	}
	for _, s := range []string{"", "0", "10001", "-1", "1.5", "x", "99999999999999999999"} {
		if _, err := ParsePartNumber(s); codeOf(err) != InvalidArgument {
			t.Errorf("ParsePartNumber(%q) error %v, want InvalidArgument", s, err)
		}
	}
}
