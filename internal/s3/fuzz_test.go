package s3

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
)

// checkError fails unless err is an *Error with a known code and a message.
func checkError(t *testing.T, what string, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T) is not an *s3.Error", what, err, err)
	}
	if !e.Code.Known() || e.message() == "" {
		t.Fatalf("%s: error %+v has an unknown code or no message", what, e)
	}
}

// FuzzParseXMLDocuments parses and validates each request document. It
// checks that nothing panics, errors are S3 errors, and a document that
// validates still validates after a marshal/parse round trip.
func FuzzParseXMLDocuments(f *testing.F) {
	seeds := []string{
		`<Delete><Quiet>true</Quiet><Object><Key>a</Key><VersionId>null</VersionId></Object></Delete>`,
		`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a&amp;b</Key></Object></Delete>`,
		`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"x"</ETag><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part></CompleteMultipartUpload>`,
		`<CreateBucketConfiguration><LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>`,
		`<LifecycleConfiguration><Rule><ID>r</ID><Filter><And><Prefix>p/</Prefix></And></Filter><Status>Enabled</Status><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule></LifecycleConfiguration>`,
		`<LifecycleConfiguration><Rule><Prefix></Prefix><Status>Disabled</Status><Expiration><Days>5</Days></Expiration></Rule></LifecycleConfiguration>`,
		`<LifecycleConfiguration><Rule><Filter><And><Prefix>p/</Prefix><Tag><Key>a</Key><Value>b</Value></Tag><Tag><Key>c</Key><Value></Value></Tag><ObjectSizeGreaterThan>1</ObjectSizeGreaterThan><ObjectSizeLessThan>99</ObjectSizeLessThan></And></Filter><Status>Enabled</Status><Expiration><Date>2030-01-01</Date></Expiration><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule></LifecycleConfiguration>`,
		`<LifecycleConfiguration><Rule><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule><Rule><Filter><ObjectSizeLessThan>10</ObjectSizeLessThan></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>`,
		`<CORSConfiguration><CORSRule><ID>x</ID><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedHeader>x-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>10</MaxAgeSeconds></CORSRule></CORSConfiguration>`,
		`<!DOCTYPE x [<!ENTITY a "b">]><Delete/>`,
		`<?xml version="1.0" encoding="UTF-8"?><Delete><Object><Key>&#x10FFFF;&#xD;</Key></Object></Delete>`,
		``,
	}
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	f.Fuzz(func(t *testing.T, kind uint8, doc string) {
		type document struct {
			v        any
			validate func() error
		}
		var (
			del  Delete
			cmu  CompleteMultipartUpload
			cbc  CreateBucketConfiguration
			lc   LifecycleConfiguration
			cors CORSConfiguration
		)
		docs := []document{
			{&del, func() error { return ValidateDelete(&del) }},
			{&cmu, func() error { return ValidateCompleteMultipartUpload(&cmu) }},
			{&cbc, func() error { return ValidateCreateBucketConfiguration(&cbc, "us-east-1") }},
			{&lc, func() error { return ValidateLifecycle(&lc) }},
			{&cors, func() error { return ValidateCORS(&cors) }},
		}
		d := docs[int(kind)%len(docs)]
		const max = 1 << 16
		if err := ParseXML(strings.NewReader(doc), max, d.v); err != nil {
			checkError(t, "ParseXML", err)
			return
		}
		if len(doc) > max {
			t.Fatalf("a document of %d bytes parsed with a limit of %d", len(doc), max)
		}
		if err := d.validate(); err != nil {
			checkError(t, "validate", err)
			return
		}
		if d.v == &lc {
			// What S3 accepts, obs stores (or refuses with its own code),
			// and stores as given.
			rules := make([]obs.LifecycleRule, len(lc.Rules))
			for i := range lc.Rules {
				rules[i] = LifecycleRuleOf(&lc.Rules[i], i)
			}
			if _, err := obs.ValidateLifecycle(rules); err != nil && errs.CodeOf(err) != obs.CodeBadLifecycle {
				t.Fatalf("obs.ValidateLifecycle: %v", err)
			}
		}
		var out bytes.Buffer
		w := &recorder{header: http.Header{}, body: &out}
		if err := WriteXML(w, 200, d.v); err != nil {
			t.Fatalf("WriteXML: %v", err)
		}
		fresh := []document{
			{&Delete{}, nil}, {&CompleteMultipartUpload{}, nil}, {&CreateBucketConfiguration{}, nil},
			{&LifecycleConfiguration{}, nil}, {&CORSConfiguration{}, nil},
		}
		v := fresh[int(kind)%len(fresh)].v
		written := out.String()
		if err := ParseXML(&out, 4*max, v); err != nil {
			t.Fatalf("our own document does not parse: %v\n%s", err, written)
		}
		var err error
		switch v := v.(type) {
		case *Delete:
			err = ValidateDelete(v)
		case *CompleteMultipartUpload:
			err = ValidateCompleteMultipartUpload(v)
		case *CreateBucketConfiguration:
			err = ValidateCreateBucketConfiguration(v, "us-east-1")
		case *LifecycleConfiguration:
			err = ValidateLifecycle(v)
		case *CORSConfiguration:
			err = ValidateCORS(v)
		}
		if err != nil {
			t.Fatalf("our own document does not validate: %v", err)
		}
	})
}

// recorder is a minimal http.ResponseWriter (httptest's checks headers in
// ways a fuzzer need not exercise).
type recorder struct {
	header http.Header
	body   *bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(int)             {}

// FuzzRoute routes random request targets and hosts. Nothing may panic;
// errors are S3 errors; a path-style route, re-addressed with the key
// escaped by EncodeKey, gives the same bucket, key and operation, and so
// does the virtual-host form of it.
func FuzzRoute(f *testing.F) {
	seeds := []struct {
		method uint8
		target string
		host   string
	}{
		{0, "/bucket/a%2Fb+c%20d/../x/", "127.0.0.1:9000"},
		{0, "/bucket/%E4%B8%AD%E6%96%87?uploadId=u", "h"},
		{1, "/bucket/k?partNumber=1&uploadId=x", "bucket.s3.example.com:9000"},
		{2, "/bucket?delete", "h"},
		{3, "/?acl", "s3.example.com"},
		{4, "//x", "h"},
		{5, "/bucket/%00", "h"},
		{0, "/b/" + strings.Repeat("k", 1030), "h"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.host, false)
	}
	methods := []string{"GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "PATCH"}
	const domain = "s3.example.com"
	f.Fuzz(func(t *testing.T, m uint8, target, host string, copySource bool) {
		method := methods[int(m)%len(methods)]
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		r := &http.Request{Method: method, URL: u, Host: host, Header: http.Header{}}
		if copySource {
			r.Header.Set("x-amz-copy-source", "/src/key")
		}
		got, err := Route(r, domain)
		if err != nil {
			checkError(t, "Route", err)
			return
		}
		if !utf8.ValidString(got.Key) || len(got.Key) > MaxKeyLength || strings.IndexByte(got.Key, 0) >= 0 {
			t.Fatalf("Route accepted the key %q", got.Key)
		}
		if got.Bucket != "" && ValidateBucketName(got.Bucket) != nil {
			t.Fatalf("Route accepted the bucket %q", got.Bucket)
		}
		if got.Bucket == "" {
			return
		}
		query := ""
		if u.RawQuery != "" {
			query = "?" + u.RawQuery
		}
		check := func(form, target, host string) {
			u2, err := url.ParseRequestURI(target)
			if err != nil {
				t.Fatalf("%s target %q does not parse: %v", form, target, err)
			}
			r2 := &http.Request{Method: method, URL: u2, Host: host, Header: r.Header}
			again, err := Route(r2, domain)
			if err != nil {
				t.Fatalf("%s %q: %v (first: %+v)", form, target, err, got)
			}
			if again.Bucket != got.Bucket || again.Key != got.Key || again.Op != got.Op {
				t.Fatalf("%s %q routes to %+v, first %+v", form, target, again, got)
			}
		}
		check("path-style", "/"+got.Bucket+"/"+EncodeKey(got.Key)+query, "127.0.0.1")
		check("virtual-host", "/"+EncodeKey(got.Key)+query, got.Bucket+"."+domain)
	})
}

// FuzzParseRange checks that a parsed range lies inside the object and that
// errors are InvalidRange.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=-5", "bytes=5-", "bytes=9-1", "bytes=0-1,2-3", "bytes=-0", "BYTES = 1 - 2", "bytes=99999999999999999999-"} {
		f.Add(s, int64(10))
	}
	f.Add("bytes=0-", int64(0))
	f.Fuzz(func(t *testing.T, h string, size int64) {
		start, length, ok, err := ParseRange(h, size)
		if err != nil {
			if codeOf(err) != InvalidRange || ok {
				t.Fatalf("ParseRange(%q, %d): error %v, ok %v", h, size, err, ok)
			}
			return
		}
		if !ok {
			if start != 0 || length != 0 {
				t.Fatalf("ParseRange(%q, %d) = %d, %d without ok", h, size, start, length)
			}
			return
		}
		if start < 0 || length <= 0 || start >= size || length > size-start {
			t.Fatalf("ParseRange(%q, %d) = %d, %d: outside the object", h, size, start, length)
		}
	})
}

// FuzzObjectLockXML parses and validates the object lock documents
// (ObjectLockConfiguration, Retention, LegalHold). Nothing may panic;
// errors are S3 errors; a document that validates, written out again as
// the server writes its answers, parses and validates to the same value.
func FuzzObjectLockXML(f *testing.F) {
	seeds := []string{
		`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>`,
		`<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>30</Days></DefaultRetention></Rule></ObjectLockConfiguration>`,
		`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>100</Years></DefaultRetention></Rule></ObjectLockConfiguration>`,
		`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Days>0</Days><Years>-1</Years></DefaultRetention></Rule></ObjectLockConfiguration>`,
		`<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>`,
		`<Retention xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Mode>COMPLIANCE</Mode><RetainUntilDate>2030-01-01T00:00:00.123456+02:00</RetainUntilDate></Retention>`,
		`<Retention/>`,
		`<Retention><RetainUntilDate>2030-01-01</RetainUntilDate></Retention>`,
		`<LegalHold><Status>ON</Status></LegalHold>`,
		`<LegalHold xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>OFF</Status><X/></LegalHold>`,
		``,
	}
	for i, s := range seeds {
		f.Add(uint8(i%3), s)
	}
	f.Fuzz(func(t *testing.T, kind uint8, doc string) {
		// validate parses doc as document kind and validates it; its
		// result is what the server would act on.
		validate := func(doc string) (any, error) {
			switch kind % 3 {
			case 0:
				var c ObjectLockConfiguration
				if err := ParseXML(strings.NewReader(doc), MaxObjectLockXML, &c); err != nil {
					return nil, err
				}
				cfg, err := ValidateObjectLockConfiguration(&c)
				if err == nil {
					return NewObjectLockConfiguration(cfg), nil
				}
				return cfg, err
			case 1:
				var r Retention
				if err := ParseXML(strings.NewReader(doc), MaxObjectLockXML, &r); err != nil {
					return nil, err
				}
				l, err := ValidateRetention(&r)
				if err == nil {
					return NewRetention(l), nil
				}
				return l, err
			}
			var h LegalHold
			if err := ParseXML(strings.NewReader(doc), MaxObjectLockXML, &h); err != nil {
				return nil, err
			}
			s, err := ValidateLegalHold(&h)
			return LegalHold{Status: s}, err
		}
		v, err := validate(doc)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) && !func() bool { _, _, ok := obs.S3Error(err); return ok }() {
				t.Fatalf("error %v (%T) is neither an S3 nor an obs error", err, err)
			}
			if errors.As(err, &e) {
				checkError(t, "validate", err)
			}
			return
		}
		var out bytes.Buffer
		w := &recorder{header: http.Header{}, body: &out}
		if err := WriteXML(w, 200, v); err != nil {
			t.Fatalf("WriteXML: %v", err)
		}
		again, err := validate(out.String())
		if err != nil {
			t.Fatalf("our own document does not validate: %v\n%s", err, out.String())
		}
		if !reflect.DeepEqual(normLockDoc(again), normLockDoc(v)) {
			t.Fatalf("round trip changed the document:\n%+v\n%+v", again, v)
		}
	})
}

// normLockDoc drops what a round trip may change of a document and not
// of its meaning: the time zone of a retention's date.
func normLockDoc(v any) any {
	if r, ok := v.(Retention); ok && r.RetainUntilDate != nil {
		t := Time{r.RetainUntilDate.UTC()}
		r.RetainUntilDate = &t
		return r
	}
	return v
}
