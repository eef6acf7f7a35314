package s3

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime/multipart"
	"strings"
	"testing"
	"time"
)

func TestParsePostPolicy(t *testing.T) {
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := []struct {
		name, doc string
		conds     []string // String() of each condition
		lo, hi    int64    // content-length-range; hi 0 for none
	}{
		{"boto3", `{"expiration": "2030-01-02T03:04:05Z", "conditions": [{"bucket": "b"}, ["starts-with", "$key", "up/"]]}`,
			[]string{`["eq", "$bucket", "b"]`, `["starts-with", "$key", "up/"]`}, 0, 0},
		{"minio milliseconds", `{"expiration":"2030-01-02T03:04:05.000Z","conditions":[["eq","$bucket","b"],["eq","$key","k"],["content-length-range", 1, 100]]}`,
			[]string{`["eq", "$bucket", "b"]`, `["eq", "$key", "k"]`}, 1, 100},
		{"field names lower-cased, op case-insensitive", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["Starts-With","$Content-Type","image/"],{"X-Amz-Meta-Tag":"v"}]}`,
			[]string{`["starts-with", "$Content-Type", "image/"]`, `["eq", "$X-Amz-Meta-Tag", "v"]`}, 0, 0},
		{"simple condition with $", `{"expiration":"2030-01-02T03:04:05Z","conditions":[{"$key":"k"}]}`, []string{`["eq", "$key", "k"]`}, 0, 0},
		{"length bounds as strings, ranges intersect", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["content-length-range","10","1000"],["content-length-range",0,500]]}`,
			nil, 10, 500},
		{"empty prefix", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["starts-with","$key",""]]}`, []string{`["starts-with", "$key", ""]`}, 0, 0},
		{"no conditions", `{"expiration":"2030-01-02T03:04:05Z","conditions":[]}`, nil, 0, 0},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParsePostPolicy([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !p.Expiration.Equal(exp) {
				t.Errorf("expiration %v", p.Expiration)
			}
			var got []string
			for _, pc := range p.Conditions {
				got = append(got, pc.String())
			}
			if strings.Join(got, " ") != strings.Join(c.conds, " ") {
				t.Errorf("conditions %q, want %q", got, c.conds)
			}
			if p.LengthRange != (c.hi > 0) || p.MinLength != c.lo || p.MaxLength != c.hi {
				t.Errorf("length range %v %d-%d", p.LengthRange, p.MinLength, p.MaxLength)
			}
			if len(p.Conditions) > 0 && p.Conditions[0].Field != strings.ToLower(p.Conditions[0].Field) {
				t.Errorf("field %q is not lower case", p.Conditions[0].Field)
			}
		})
	}
	bad := []struct{ name, doc, msg string }{
		{"not JSON", `{"expiration"`, "Invalid Policy: Invalid JSON."},
		{"not an object", `[]`, "Invalid Policy: Invalid JSON."},
		{"trailing data", `{"expiration":"2030-01-02T03:04:05Z","conditions":[]} {}`, "more after the policy"},
		{"no expiration", `{"conditions":[]}`, "Invalid Policy: Policy missing expiration."},
		{"bad expiration", `{"expiration":"tomorrow","conditions":[]}`, "Invalid Policy: Invalid 'expiration' value: 'tomorrow'."},
		{"expiration a number", `{"expiration":5,"conditions":[]}`, "Invalid 'expiration' value: 5"},
		{"no conditions", `{"expiration":"2030-01-02T03:04:05Z"}`, "Invalid Policy: Policy missing conditions."},
		{"conditions an object", `{"expiration":"2030-01-02T03:04:05Z","conditions":{}}`, "Invalid 'conditions' value: must be a List."},
		{"unknown field", `{"expiration":"2030-01-02T03:04:05Z","conditions":[],"x":1}`, `Unexpected field "x"`},
		{"two properties", `{"expiration":"2030-01-02T03:04:05Z","conditions":[{"a":"1","b":"2"}]}`,
			"Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have exactly one property specified."},
		{"repeated property", `{"expiration":"2030-01-02T03:04:05Z","conditions":[{"key":"1","key":"2"}]}`, "exactly one property"},
		{"no property", `{"expiration":"2030-01-02T03:04:05Z","conditions":[{}]}`, "exactly one property"},
		{"number value", `{"expiration":"2030-01-02T03:04:05Z","conditions":[{"key":1}]}`, "Invalid Simple-Condition: value must be a string."},
		{"condition a string", `{"expiration":"2030-01-02T03:04:05Z","conditions":["key"]}`, "a condition is an object or a list"},
		{"empty list", `{"expiration":"2030-01-02T03:04:05Z","conditions":[[]]}`, "an empty list"},
		{"unknown op", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["ends-with","$key","x"]]}`, `unknown operation "ends-with"`},
		{"no $", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["eq","key","x"]]}`, "starts with '$'"},
		{"two elements", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["starts-with","$key"]]}`, "Invalid starts-with condition"},
		{"number in eq", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["eq","$key",1]]}`, "are strings"},
		{"range reversed", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["content-length-range",10,1]]}`, "min <= max"},
		{"range negative", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["content-length-range",-1,1]]}`, "min <= max"},
		{"range fraction", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["content-length-range",0,1.5]]}`, "min <= max"},
		{"range short", `{"expiration":"2030-01-02T03:04:05Z","conditions":[["content-length-range",0]]}`, "Invalid content-length-range"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePostPolicy([]byte(c.doc))
			e, ok := err.(*Error)
			if !ok || e.Code != InvalidPolicyDocument || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %v, want InvalidPolicyDocument with %q", err, c.msg)
			}
		})
	}
	if _, err := DecodePostPolicy("not base64!"); err == nil || !strings.Contains(err.Error(), "Base64") {
		t.Errorf("bad base64: %v", err)
	}
	if _, err := DecodePostPolicy(base64.StdEncoding.EncodeToString(make([]byte, MaxPostPolicy+1))); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("long policy: %v", err)
	}
}

func TestPostPolicyCheck(t *testing.T) {
	now := time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)
	policy := func(conds string) *PostPolicy {
		p, err := ParsePostPolicy([]byte(`{"expiration":"2030-01-01T00:00:00Z","conditions":[` + conds + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := `{"bucket":"b"},["starts-with","$key","up/"],{"x-amz-algorithm":"AWS4-HMAC-SHA256"}`
	fields := func(kv ...string) map[string]string {
		m := map[string]string{"key": "up/${filename}", "x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-signature": "s", "policy": "p"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "-" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	cases := []struct {
		name   string
		conds  string
		bucket string
		key    string
		fields map[string]string
		now    time.Time
		msg    string // "" for success
	}{
		{"all hold", base, "b", "up/a.txt", fields(), now, ""},
		{"expired", base, "b", "up/a.txt", fields(), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), "Invalid according to Policy: Policy expired."},
		{"bucket differs", base, "c", "up/a.txt", fields(), now, `Invalid according to Policy: Policy Condition failed: ["eq", "$bucket", "b"]`},
		{"key outside prefix", base, "b", "down/a.txt", fields(), now, `Policy Condition failed: ["starts-with", "$key", "up/"]`},
		{"key prefix is case-sensitive", base, "b", "UP/a.txt", fields(), now, `["starts-with", "$key", "up/"]`},
		{"exact key", `{"bucket":"b"},{"key":"k"},{"x-amz-algorithm":"AWS4-HMAC-SHA256"}`, "b", "k", fields(), now, ""},
		{"exact key differs", `{"bucket":"b"},{"key":"k"},{"x-amz-algorithm":"AWS4-HMAC-SHA256"}`, "b", "k2", fields(), now, `["eq", "$key", "k"]`},
		{"eq list form", `["eq","$bucket","b"],["eq","$key","k"],["eq","$x-amz-algorithm","AWS4-HMAC-SHA256"]`, "b", "k", fields(), now, ""},
		{"value case-sensitive", base, "b", "up/a", fields("x-amz-algorithm", "aws4-hmac-sha256"), now, `["eq", "$x-amz-algorithm", "AWS4-HMAC-SHA256"]`},
		{"field name case-insensitive", base + `,{"Content-Type":"text/plain"}`, "b", "up/a", fields("content-type", "text/plain"), now, ""},
		{"starts-with field", base + `,["starts-with","$Content-Type","image/"]`, "b", "up/a", fields("content-type", "image/png"), now, ""},
		{"starts-with fails", base + `,["starts-with","$Content-Type","image/"]`, "b", "up/a", fields("content-type", "text/html"), now, `["starts-with", "$Content-Type", "image/"]`},
		{"empty prefix matches anything", base + `,["starts-with","$x-amz-meta-note",""]`, "b", "up/a", fields("x-amz-meta-note", "anything at all"), now, ""},
		{"empty prefix matches an absent field", base + `,["starts-with","$x-amz-meta-note",""]`, "b", "up/a", fields(), now, ""},
		{"condition on an absent field", base + `,{"success_action_status":"201"}`, "b", "up/a", fields(), now, `["eq", "$success_action_status", "201"]`},
		{"field without condition", base, "b", "up/a", fields("content-type", "text/plain"), now, "Invalid according to Policy: Extra input fields: content-type"},
		{"several fields without conditions", base, "b", "up/a", fields("x-amz-meta-b", "1", "acl", "private"), now, "Extra input fields: acl, x-amz-meta-b"},
		{"excluded fields need none", base, "b", "up/a", fields("file", "f", "x-ignore-foo", "1", "signature", "s", "awsaccesskeyid", "ak"), now, ""},
		{"bucket field covered by the bucket condition", base, "b", "up/a", fields("bucket", "b"), now, ""},
		{"conditions checked before coverage", base, "b", "x", fields("content-type", "t"), now, "Policy Condition failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := policy(c.conds).Check(c.now, c.bucket, c.key, c.fields)
			if c.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			e, ok := err.(*Error)
			if !ok || e.Code != AccessDenied || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %v, want AccessDenied with %q", err, c.msg)
			}
		})
	}
}

// form builds a multipart/form-data body: fields, then the file, then more
// fields.
func form(t testing.TB, fields [][2]string, fileName string, file []byte, after ...[2]string) ([]byte, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if file != nil {
		fw, err := w.CreateFormFile("file", fileName)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(file)
	}
	for _, f := range after {
		w.WriteField(f[0], f[1])
	}
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

func TestReadPostForm(t *testing.T) {
	body, ct := form(t, [][2]string{{"Key", "up/${filename}"}, {"X-Amz-Meta-A", "1"}}, "a.txt", []byte("data"), [2]string{"acl", "public-read"})
	f, err := ReadPostForm(bytes.NewReader(body), ct)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(f.File)
	if string(data) != "data" || f.FileName != "a.txt" || f.Fields["x-amz-meta-a"] != "1" || len(f.Fields) != 2 {
		t.Fatalf("%+v %q", f, data)
	}
	if k, err := f.Key(); err != nil || k != "up/a.txt" {
		t.Errorf("key %q %v", k, err)
	}

	code := func(err error) ErrorCode {
		if e, ok := err.(*Error); ok {
			return e.Code
		}
		return ""
	}
	read := func(body []byte, ct string) error {
		_, err := ReadPostForm(bytes.NewReader(body), ct)
		return err
	}
	if err := read([]byte("a=b"), "application/x-www-form-urlencoded"); code(err) != PreconditionFailed {
		t.Errorf("urlencoded: %v", err)
	}
	if err := read(body, "multipart/form-data"); code(err) != MalformedPOSTRequest {
		t.Errorf("no boundary: %v", err)
	}
	if err := read([]byte("garbage"), ct); code(err) != MalformedPOSTRequest {
		t.Errorf("garbage: %v", err)
	}
	nofile, ct2 := form(t, [][2]string{{"key", "k"}}, "", nil)
	if err := read(nofile, ct2); code(err) != IncorrectNumberOfFilesInPostRequest {
		t.Errorf("no file: %v", err)
	}
	dup, ct3 := form(t, [][2]string{{"key", "k"}, {"KEY", "j"}}, "f", []byte("x"))
	if err := read(dup, ct3); code(err) != InvalidArgument {
		t.Errorf("duplicate: %v", err)
	}
	// One field too large, many fields too large together, and headers
	// alone too large: all before the file is read.
	big, ct4 := form(t, [][2]string{{"x-amz-meta-a", strings.Repeat("a", MaxPostPreData)}}, "f", []byte("x"))
	if err := read(big, ct4); code(err) != MaxPostPreDataLengthExceeded {
		t.Errorf("big field: %v", err)
	}
	var many [][2]string
	for i := range 100 {
		many = append(many, [2]string{"x-amz-meta-" + itoa(int64(i)), strings.Repeat("b", 700)})
	}
	manyBody, ct5 := form(t, many, "f", []byte("x"))
	if err := read(manyBody, ct5); code(err) != MaxPostPreDataLengthExceeded {
		t.Errorf("many fields: %v", err)
	}
	hdr := "--B\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: " + strings.Repeat("p", MaxPostPreData+postPreDataSlack) + "\r\n\r\nv\r\n--B--\r\n"
	if err := read([]byte(hdr), "multipart/form-data; boundary=B"); code(err) != MaxPostPreDataLengthExceeded {
		t.Errorf("big part header: %v", err)
	}
	// Just under the limit is accepted.
	fits, ct6 := form(t, [][2]string{{"x-amz-meta-a", strings.Repeat("a", MaxPostPreData-len("x-amz-meta-a"))}}, "f", []byte("x"))
	if err := read(fits, ct6); err != nil {
		t.Errorf("fields at the limit: %v", err)
	}
	// The file is streamed: a huge file is not read by ReadPostForm.
	huge := io.MultiReader(bytes.NewReader(body[:bytes.Index(body, []byte("\r\n\r\ndata"))+4]), &endless{})
	f, err = ReadPostForm(huge, ct)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.CopyN(io.Discard, f.File, 10<<20)
	if n != 10<<20 {
		t.Errorf("read %d bytes of the file", n)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'z'
	}
	return len(p), nil
}

func TestLengthRange(t *testing.T) {
	for _, c := range []struct {
		size, lo, hi int64
		code         ErrorCode
	}{
		{10, 0, 10, ""}, {11, 0, 10, EntityTooLarge}, {0, 0, 0, ""}, {1, 0, 0, EntityTooLarge},
		{4, 5, 10, EntityTooSmall}, {5, 5, 10, ""}, {1 << 20, 0, 1<<20 - 1, EntityTooLarge},
	} {
		l := &lengthRange{r: io.LimitReader(endless{}, c.size), min: c.lo, max: c.hi}
		n, err := io.Copy(io.Discard, l)
		var got ErrorCode
		if e, ok := err.(*Error); ok {
			got = e.Code
		} else if err != nil {
			got = "?"
		}
		if got != c.code {
			t.Errorf("%d bytes in %d-%d: %v", c.size, c.lo, c.hi, err)
		}
		if c.code == EntityTooLarge && n > c.hi {
			t.Errorf("%d bytes in %d-%d: passed on %d bytes", c.size, c.lo, c.hi, n)
		}
	}
}

func FuzzParsePostPolicy(f *testing.F) {
	for _, s := range []string{
		`{"expiration":"2030-01-02T03:04:05Z","conditions":[{"bucket":"b"},["starts-with","$key","up/"],["content-length-range",0,10]]}`,
		`{"expiration":"2030-01-02T03:04:05.000Z","conditions":[["eq","$key","k"],{"a":"1","b":"2"}]}`,
		`{"conditions":[[]]}`, `[]`, `{"expiration":1}`,
	} {
		f.Add([]byte(s), "b", "up/a")
	}
	f.Fuzz(func(t *testing.T, doc []byte, bucket, key string) {
		p, err := ParsePostPolicy(doc)
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Code != InvalidPolicyDocument {
				t.Fatalf("error %v is not InvalidPolicyDocument", err)
			}
			return
		}
		if p.LengthRange && (p.MinLength < 0 || p.MaxLength < 0) {
			t.Fatalf("negative bound %d %d", p.MinLength, p.MaxLength)
		}
		for _, c := range p.Conditions {
			if c.Field == "" || c.Field != strings.ToLower(c.Field) || (c.Op != "eq" && c.Op != "starts-with") {
				t.Fatalf("condition %+v", c)
			}
		}
		fields := map[string]string{"key": key}
		err = p.Check(p.Expiration.Add(-time.Second), bucket, key, fields)
		if e, ok := err.(*Error); err != nil && (!ok || e.Code != AccessDenied) {
			t.Fatalf("check: %v", err)
		}
		if err := p.Check(p.Expiration, bucket, key, fields); err == nil {
			t.Fatal("an expired policy passed")
		}
	})
}

// FuzzReadPostForm: any body gives a form or an S3 error, reading at most
// the pre-file bound before the file, and fields within it.
func FuzzReadPostForm(f *testing.F) {
	body, ct := form(f, [][2]string{{"key", "k"}, {"policy", "p"}}, "a", []byte("data"), [2]string{"x", "y"})
	f.Add(body, ct[len("multipart/form-data; boundary="):])
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nx\r\n--B--"), "B")
	f.Fuzz(func(t *testing.T, body []byte, boundary string) {
		r := &countingReader{r: bytes.NewReader(body)}
		form, err := ReadPostForm(r, "multipart/form-data; boundary=\""+strings.ReplaceAll(boundary, `"`, "")+"\"")
		if r.n > MaxPostPreData+postPreDataSlack {
			t.Fatalf("read %d bytes before the file", r.n)
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %v is not an S3 error", err)
			}
			return
		}
		size := 0
		for k, v := range form.Fields {
			size += len(k) + len(v)
			if k != strings.ToLower(k) || k == "file" {
				t.Fatalf("field %q", k)
			}
		}
		if size > MaxPostPreData {
			t.Fatalf("fields of %d bytes", size)
		}
		io.Copy(io.Discard, form.File)
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
