package s3

import (
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/checksum"
	"github.com/atelier-dev/atelier/internal/obs"
)

// MaxPostPreData bounds the form fields before the file of a POST upload:
// their names and values together. postPreDataSlack is what the part
// headers and the multipart reader's buffer may take on top of it.
const (
	MaxPostPreData   = 64 << 10
	postPreDataSlack = 16 << 10
)

// PostForm is a browser-form upload read up to its file: the fields before
// it by lower-case name, and the file, unread.
type PostForm struct {
	Fields   map[string]string
	FileName string    // the file part's file name (base name), for ${filename}
	File     io.Reader // the file's bytes, streamed from the request body
}

var errPreData = errors.New("the form fields before the file are too large")

// preDataReader bounds the bytes read from the body until the file begins.
type preDataReader struct {
	r         io.Reader
	left      int64
	unlimited bool
}

func (l *preDataReader) Read(p []byte) (int, error) {
	if l.unlimited {
		return l.r.Read(p)
	}
	if l.left <= 0 {
		return 0, errPreData
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func preDataTooLarge() *Error {
	return NewError(MaxPostPreDataLengthExceeded, "Your POST request fields preceding the upload file were too large.").
		WithHint("the fields before the file may hold at most " + strconv.Itoa(MaxPostPreData) + " bytes; send the file field last")
}

// formError maps an error of the multipart reader.
func formError(err error) *Error {
	if errors.Is(err, errPreData) {
		return preDataTooLarge()
	}
	return NewError(MalformedPOSTRequest, "The body of your POST request is not well-formed multipart/form-data.").
		WithHint("send the fields and then the file as multipart/form-data (" + err.Error() + ")")
}

// ReadPostForm reads a multipart/form-data body up to the part named file,
// which it leaves unread in File; parts after the file are never read (S3
// ignores them). Field names are matched case-insensitively; a field may
// appear once. The fields before the file may take at most MaxPostPreData
// bytes (MaxPostPreDataLengthExceeded); a form without a file is
// IncorrectNumberOfFilesInPostRequest, a body that is not multipart
// MalformedPOSTRequest, and a Content-Type other than multipart/form-data
// PreconditionFailed.
func ReadPostForm(body io.Reader, contentType string) (*PostForm, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.EqualFold(mt, "multipart/form-data") {
		return nil, NewError(PreconditionFailed, "Bucket POST must be of the enclosure-type multipart/form-data").
			WithHint("a POST to a bucket is a browser-form upload; upload with PUT otherwise")
	}
	if params["boundary"] == "" {
		return nil, NewError(MalformedPOSTRequest, "The body of your POST request is not well-formed multipart/form-data.").
			WithHint("the Content-Type has no boundary parameter")
	}
	lim := &preDataReader{r: body, left: MaxPostPreData + postPreDataSlack}
	mr := multipart.NewReader(lim, params["boundary"])
	f := &PostForm{Fields: map[string]string{}}
	budget := int64(MaxPostPreData)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, NewError(IncorrectNumberOfFilesInPostRequest, "POST requires exactly one file upload per request.").
				WithHint("add the field named file, last")
		}
		if err != nil {
			return nil, formError(err)
		}
		name := part.FormName()
		if name == "" {
			return nil, NewError(MalformedPOSTRequest, "The body of your POST request is not well-formed multipart/form-data.").
				WithHint("every part needs Content-Disposition: form-data; name=\"…\"")
		}
		lname := strings.ToLower(name)
		if lname == "file" {
			lim.unlimited = true
			f.FileName, f.File = part.FileName(), part
			return f, nil
		}
		budget -= int64(len(name))
		v, err := io.ReadAll(io.LimitReader(part, max(budget, 0)+1))
		if err != nil {
			return nil, formError(err)
		}
		if budget -= int64(len(v)); budget < 0 {
			return nil, preDataTooLarge()
		}
		if _, dup := f.Fields[lname]; dup {
			return nil, Errorf(InvalidArgument, "the form has the field %q more than once", name)
		}
		f.Fields[lname] = string(v)
	}
}

// Key is the object key of the form: its key field with every ${filename}
// replaced by the file's name.
func (f *PostForm) Key() (string, error) {
	k, ok := f.Fields["key"]
	if !ok || k == "" {
		return "", (&Error{Code: InvalidArgument, Message: "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields."}).
			WithHint("the key field must come before the file field")
	}
	k = strings.ReplaceAll(k, "${filename}", f.FileName)
	if k == "" {
		return "", NewError(InvalidArgument, "the key is empty once ${filename} is replaced by the file's name (the file has none)")
	}
	if err := ValidateKey(k); err != nil {
		return "", err
	}
	return k, nil
}

// postObjectFields are the form fields that set the object's attributes as
// the headers of the same names do on PutObject.
var postObjectFields = map[string]bool{
	"content-type": true, "cache-control": true, "content-disposition": true, "content-encoding": true,
	"content-language": true, "expires": true, "content-md5": true, "x-amz-tagging": true, "x-amz-storage-class": true,
	headerLockMode: true, headerLockRetainUntil: true, headerLockLegalHold: true,
}

// header is the request headers the form's fields stand for.
func (f *PostForm) header() http.Header {
	h := http.Header{}
	for name, v := range f.Fields {
		if postObjectFields[name] || strings.HasPrefix(name, "x-amz-meta-") || strings.HasPrefix(name, checksum.HeaderPrefix) {
			h.Set(name, v)
		}
	}
	return h
}

// signature reads the signature fields: ok is false for an anonymous form
// (no policy, no signature).
func (f *PostForm) signature() (sig sigv4.PostSignature, ok bool, err error) {
	has := func(name string) bool { _, ok := f.Fields[name]; return ok }
	v4 := has("x-amz-signature") || has("x-amz-credential") || has("x-amz-algorithm")
	v2 := has("awsaccesskeyid") || has("signature")
	missing := func(name string) error {
		return &Error{Code: InvalidArgument,
			Message: "Bucket POST must contain a field named '" + name + "'.  If it is specified, please check the order of the fields."}
	}
	switch {
	case !has("policy") && !v4 && !v2:
		return sig, false, nil
	case !has("policy"):
		return sig, false, missing("policy")
	case v4 && v2:
		return sig, false, NewError(InvalidArgument, "the form has both Signature Version 4 fields (x-amz-*) and Version 2 fields (AWSAccessKeyId, signature); sign with one")
	case v2:
		for _, n := range [][2]string{{"awsaccesskeyid", "AWSAccessKeyId"}, {"signature", "signature"}} {
			if !has(n[0]) {
				return sig, false, missing(n[1])
			}
		}
		return sigv4.PostSignature{Policy: f.Fields["policy"], AccessKeyID: f.Fields["awsaccesskeyid"], Signature: f.Fields["signature"],
			SecurityToken: f.Fields["x-amz-security-token"], V2: true}, true, nil
	}
	for _, n := range []string{"x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature"} {
		if !has(n) {
			return sig, false, missing(n)
		}
	}
	return sigv4.PostSignature{Policy: f.Fields["policy"], Algorithm: f.Fields["x-amz-algorithm"], Credential: f.Fields["x-amz-credential"],
		Date: f.Fields["x-amz-date"], Signature: f.Fields["x-amz-signature"], SecurityToken: f.Fields["x-amz-security-token"]}, true, nil
}

// lengthRange enforces a policy's content-length-range on the file while
// it streams: a file longer than max is cut off at max+1 bytes, one
// shorter than min refused at its end; either way the write fails and
// nothing is stored.
type lengthRange struct {
	r        io.Reader
	n        int64
	min, max int64
	err      *Error
}

func (l *lengthRange) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if int64(len(p)) > l.max-l.n+1 {
		p = p[:l.max-l.n+1]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		l.err = NewError(EntityTooLarge, "Your proposed upload exceeds the maximum allowed size").
			WithHint("the policy's content-length-range allows at most " + strconv.FormatInt(l.max, 10) + " bytes")
		return 0, l.err
	}
	if err == io.EOF && l.n < l.min {
		l.err = NewError(EntityTooSmall, "Your proposed upload is smaller than the minimum allowed size").
			WithHint("the file is " + strconv.FormatInt(l.n, 10) + " bytes; the policy's content-length-range needs at least " + strconv.FormatInt(l.min, 10))
		return 0, l.err
	}
	return n, err
}

// PostResponse is the document of a POST upload with
// success_action_status 201.
type PostResponse struct {
	XMLName  xml.Name `xml:"PostResponse"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

// postObject serves a browser-form upload: it reads the form up to the
// file, resolves the signer of its policy (or the anonymous caller), checks
// the policy, and stores the file through PutObject as that caller, so a
// POST can do exactly what its signer could do with PUT.
func (s *Server) postObject(q *request) error {
	f, err := ReadPostForm(q.r.Body, q.r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	if b, ok := f.Fields["bucket"]; ok && b != q.t.Bucket {
		return Errorf(InvalidArgument, "the form's bucket field %q is not the bucket of the URL, %q", b, q.t.Bucket)
	}
	key, err := f.Key()
	if err != nil {
		return err
	}
	sig, signed, err := f.signature()
	if err != nil {
		return err
	}
	lr := &lengthRange{r: f.File, max: noLengthLimit}
	if signed {
		p, _, err := s.d.IAM.AuthenticatePost(q.r.Context(), sig, sigv4.Verifier{Region: s.d.Region, Service: "s3"})
		if err != nil {
			return err
		}
		p.SourceIP = auth.ClientIP(q.r.RemoteAddr)
		q.caller = obs.As(p)
		pol, err := DecodePostPolicy(sig.Policy)
		if err != nil {
			return err
		}
		if err := pol.Check(time.Now(), q.t.Bucket, key, f.Fields); err != nil {
			return err
		}
		if pol.LengthRange {
			lr.min, lr.max = pol.MinLength, min(pol.MaxLength, lr.max)
		}
	}
	h := f.header()
	md5sum, err := contentMD5(h)
	if err != nil {
		return err
	}
	a, value, err := checksum.FromHeaders(h)
	if err != nil {
		return err
	}
	ck := obs.Checksum{Algo: string(a), Value: value}
	if algo := f.Fields["x-amz-checksum-algorithm"]; ck.Algo == "" && algo != "" {
		ck.Algo = strings.ToLower(algo)
	}
	tags, err := postTags(f, h)
	if err != nil {
		return err
	}
	lock, err := requestLock(h)
	if err != nil {
		return err
	}
	ct, md, stored := objectAttrs(h)
	o, err := s.d.OBS.PutObject(q.r.Context(), q.caller, q.t.Bucket, key, lr, obs.PutOptions{
		Size: -1, ContentType: ct, Metadata: md, Headers: stored, ContentMD5: md5sum, Checksum: ck,
		StorageClass: f.Fields["x-amz-storage-class"], Tags: tags, ACL: obs.ACLRequest{Canned: f.Fields["acl"]}, Lock: lock})
	if lr.err != nil {
		return lr.err
	}
	if err != nil {
		return err
	}
	etag := QuoteETag(o.ETag)
	hdr := q.w.Header()
	hdr.Set("ETag", etag)
	setChecksumHeaders(hdr, o.Checksums)
	loc := objectURL(q, key)
	redirect := f.Fields["success_action_redirect"]
	if _, ok := f.Fields["success_action_redirect"]; !ok {
		redirect = f.Fields["redirect"]
	}
	if u := redirectURL(redirect, q.t.Bucket, key, etag); u != "" {
		hdr.Set("Location", u)
		q.w.WriteHeader(http.StatusSeeOther)
		return nil
	}
	hdr.Set("Location", loc)
	switch f.Fields["success_action_status"] {
	case "200":
		q.w.WriteHeader(http.StatusOK)
	case "201":
		return WriteXML(q.w, http.StatusCreated, PostResponse{Location: loc, Bucket: q.t.Bucket, Key: key, ETag: etag})
	default:
		q.w.WriteHeader(http.StatusNoContent)
	}
	return nil
}

// noLengthLimit is lengthRange's max without a content-length-range: the
// file is then bounded by the limit of one PUT, which PutObject enforces.
const noLengthLimit = 1<<63 - 2

// postTags reads the tags of a form: the tagging field (a Tagging XML
// document, as S3's POST takes it) or x-amz-tagging (URL-encoded, as the
// header of PutObject); not both.
func postTags(f *PostForm, h http.Header) ([]obs.Tag, error) {
	doc, ok := f.Fields["tagging"]
	if !ok {
		return requestTags(h)
	}
	if _, both := f.Fields["x-amz-tagging"]; both {
		return nil, NewError(InvalidArgument, "the form has both tagging and x-amz-tagging; send one")
	}
	var t Tagging
	if err := ParseXML(strings.NewReader(doc), MaxTaggingXML, &t); err != nil {
		return nil, err
	}
	return ValidateTagging(&t)
}

// objectURL is the URL of the object key of the request's bucket, as the
// client addressed the bucket.
func objectURL(q *request, key string) string {
	scheme := "http"
	if q.r.TLS != nil {
		scheme = "https"
	}
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	path := "/" + strings.Join(segs, "/")
	if !q.t.VirtualHost {
		path = "/" + q.t.Bucket + path
	}
	return scheme + "://" + q.r.Host + path
}

// redirectURL is the URL a successful POST redirects to: the
// success_action_redirect (or redirect) field with bucket, key and etag
// added to its query; "" when there is none or it is not an absolute
// http(s) URL (S3 ignores a field it cannot use).
func redirectURL(field, bucket, key, etag string) string {
	if field == "" {
		return ""
	}
	u, err := url.Parse(field)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	q := "bucket=" + url.QueryEscape(bucket) + "&key=" + url.QueryEscape(key) + "&etag=" + url.QueryEscape(etag)
	if u.RawQuery != "" {
		u.RawQuery += "&" + q
	} else {
		u.RawQuery = q
	}
	return u.String()
}
