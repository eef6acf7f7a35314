package s3

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// Namespace is the XML namespace of S3 response documents.
const Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// TimeFormat is the ISO 8601 form of times in S3 XML documents.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Body size limits for ParseXML, per document.
const (
	MaxConfigXML   = 1 << 20 // CreateBucketConfiguration, LifecycleConfiguration, CORSConfiguration
	MaxDeleteXML   = 2 << 20 // Delete: 1000 keys of up to 1024 bytes
	MaxCompleteXML = 4 << 20 // CompleteMultipartUpload: 10000 parts with checksums
)

// Limits of the S3 API.
const (
	MaxKeyLength      = 1024  // bytes of an object key
	MaxDeleteObjects  = 1000  // keys in one DeleteObjects request
	MaxPartNumber     = 10000 // highest part number of a multipart upload
	MaxLifecycleRules = 1000  // rules in a lifecycle configuration
	MaxCORSRules      = 100   // rules in a CORS configuration
	maxRuleID         = 255   // bytes of a lifecycle or CORS rule ID
	maxXMLDepth       = 32    // element nesting ParseXML accepts
)

// Time is a time in an S3 XML document: written in TimeFormat (UTC, with
// milliseconds); read in RFC 3339 with or without fractional seconds, without
// a zone (UTC), or as a date alone.
type Time struct{ time.Time }

// MarshalText writes the time in TimeFormat.
func (t Time) MarshalText() ([]byte, error) {
	return t.UTC().AppendFormat(nil, TimeFormat), nil
}

// UnmarshalText reads an ISO 8601 time.
func (t *Time) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if v, err := time.Parse(layout, s); err == nil {
			t.Time = v.UTC()
			return nil
		}
	}
	return fmt.Errorf("%q is not an ISO 8601 time such as 2006-01-02T15:04:05.000Z", s)
}

// QuoteETag returns the ETag in double quotes, as S3 sends it; an ETag that
// is already quoted is returned as is.
func QuoteETag(etag string) string {
	if len(etag) >= 2 && etag[0] == '"' && etag[len(etag)-1] == '"' {
		return etag
	}
	return `"` + etag + `"`
}

// UnquoteETag strips the double quotes (and surrounding space) clients send
// around ETags, for comparison with stored ETags.
func UnquoteETag(etag string) string {
	etag = strings.TrimSpace(etag)
	if len(etag) >= 2 && etag[0] == '"' && etag[len(etag)-1] == '"' {
		return etag[1 : len(etag)-1]
	}
	return etag
}

// Owner is the owner of a bucket, object or upload (also used as Initiator).
type Owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName,omitempty"`
}

// Checksums are the checksum elements of objects and parts: base64 values.
type Checksums struct {
	ChecksumCRC32     string `xml:"ChecksumCRC32,omitempty"`
	ChecksumCRC32C    string `xml:"ChecksumCRC32C,omitempty"`
	ChecksumCRC64NVME string `xml:"ChecksumCRC64NVME,omitempty"`
	ChecksumSHA1      string `xml:"ChecksumSHA1,omitempty"`
	ChecksumSHA256    string `xml:"ChecksumSHA256,omitempty"`
}

// ListAllMyBucketsResult is the response of ListBuckets.
type ListAllMyBucketsResult struct {
	XMLName           xml.Name   `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListAllMyBucketsResult"`
	Owner             Owner      `xml:"Owner"`
	Buckets           BucketList `xml:"Buckets"`
	ContinuationToken string     `xml:"ContinuationToken,omitempty"`
	Prefix            string     `xml:"Prefix,omitempty"`
}

// BucketList is the <Buckets> of ListAllMyBucketsResult, sent even when
// empty (as S3 does).
type BucketList []BucketInfo

// MarshalXML writes <Buckets> with a <Bucket> per bucket.
func (l BucketList) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return e.EncodeElement(struct {
		Bucket []BucketInfo `xml:"Bucket"`
	}{l}, start)
}

// UnmarshalXML reads <Buckets>.
func (l *BucketList) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var v struct {
		Bucket []BucketInfo `xml:"Bucket"`
	}
	if err := d.DecodeElement(&v, &start); err != nil {
		return err
	}
	*l = v.Bucket
	return nil
}

// BucketInfo is a <Bucket> of ListAllMyBucketsResult.
type BucketInfo struct {
	Name         string `xml:"Name"`
	CreationDate Time   `xml:"CreationDate"`
	BucketRegion string `xml:"BucketRegion,omitempty"`
}

// Object is a <Contents> entry of a list of objects. ETag is quoted (see
// QuoteETag).
type Object struct {
	Key               string `xml:"Key"`
	LastModified      Time   `xml:"LastModified"`
	ETag              string `xml:"ETag"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
	Size              int64  `xml:"Size"`
	StorageClass      string `xml:"StorageClass"`
	Owner             *Owner `xml:"Owner,omitempty"`
}

// CommonPrefix is a <CommonPrefixes> entry of a list.
type CommonPrefix struct {
	Prefix string `xml:"Prefix"`
}

// ListBucketResult is the response of ListObjects (version 1). Marker and
// Prefix are always sent; NextMarker only when truncated with a delimiter.
type ListBucketResult struct {
	XMLName        xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name           string         `xml:"Name"`
	Prefix         string         `xml:"Prefix"`
	Marker         string         `xml:"Marker"`
	NextMarker     string         `xml:"NextMarker,omitempty"`
	MaxKeys        int            `xml:"MaxKeys"`
	Delimiter      string         `xml:"Delimiter,omitempty"`
	EncodingType   string         `xml:"EncodingType,omitempty"`
	IsTruncated    bool           `xml:"IsTruncated"`
	Contents       []Object       `xml:"Contents"`
	CommonPrefixes []CommonPrefix `xml:"CommonPrefixes"`
}

// ListBucketResultV2 is the response of ListObjectsV2. ContinuationToken and
// StartAfter echo the request; Contents carry an Owner only with
// fetch-owner=true.
type ListBucketResultV2 struct {
	XMLName               xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string         `xml:"Name"`
	Prefix                string         `xml:"Prefix"`
	StartAfter            string         `xml:"StartAfter,omitempty"`
	ContinuationToken     string         `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	KeyCount              int            `xml:"KeyCount"`
	MaxKeys               int            `xml:"MaxKeys"`
	Delimiter             string         `xml:"Delimiter,omitempty"`
	EncodingType          string         `xml:"EncodingType,omitempty"`
	IsTruncated           bool           `xml:"IsTruncated"`
	Contents              []Object       `xml:"Contents"`
	CommonPrefixes        []CommonPrefix `xml:"CommonPrefixes"`
}

// CreateBucketConfiguration is the optional request body of CreateBucket.
type CreateBucketConfiguration struct {
	XMLName            xml.Name `xml:"CreateBucketConfiguration"`
	LocationConstraint string   `xml:"LocationConstraint"`
}

// LocationConstraint is the response of GetBucketLocation; see
// NewLocationConstraint.
type LocationConstraint struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LocationConstraint"`
	Region  string   `xml:",chardata"`
}

// NewLocationConstraint is the GetBucketLocation response for a region: S3
// answers an empty constraint for us-east-1.
func NewLocationConstraint(region string) LocationConstraint {
	if region == "us-east-1" {
		region = ""
	}
	return LocationConstraint{Region: region}
}

// CopyObjectResult is the response of CopyObject. ETag is quoted.
type CopyObjectResult struct {
	XMLName      xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyObjectResult"`
	LastModified Time     `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	ChecksumType string   `xml:"ChecksumType,omitempty"`
	Checksums
}

// CopyPartResult is the response of UploadPartCopy. ETag is quoted.
type CopyPartResult struct {
	XMLName      xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyPartResult"`
	LastModified Time     `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	Checksums
}

// InitiateMultipartUploadResult is the response of CreateMultipartUpload.
type InitiateMultipartUploadResult struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ InitiateMultipartUploadResult"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

// CompleteMultipartUpload is the request body of CompleteMultipartUpload;
// see ValidateCompleteMultipartUpload.
type CompleteMultipartUpload struct {
	XMLName xml.Name       `xml:"CompleteMultipartUpload"`
	Parts   []CompletePart `xml:"Part"`
}

// CompletePart is a <Part> of CompleteMultipartUpload. Clients send the ETag
// quoted or not; compare with UnquoteETag.
type CompletePart struct {
	PartNumber int    `xml:"PartNumber"`
	ETag       string `xml:"ETag"`
	Checksums
}

// CompleteMultipartUploadResult is the response of CompleteMultipartUpload.
// ETag is quoted.
type CompleteMultipartUploadResult struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CompleteMultipartUploadResult"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
	Checksums
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

// ListPartsResult is the response of ListParts.
type ListPartsResult struct {
	XMLName              xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListPartsResult"`
	Bucket               string   `xml:"Bucket"`
	Key                  string   `xml:"Key"`
	UploadID             string   `xml:"UploadId"`
	Initiator            Owner    `xml:"Initiator"`
	Owner                Owner    `xml:"Owner"`
	StorageClass         string   `xml:"StorageClass"`
	PartNumberMarker     int      `xml:"PartNumberMarker"`
	NextPartNumberMarker int      `xml:"NextPartNumberMarker"`
	MaxParts             int      `xml:"MaxParts"`
	IsTruncated          bool     `xml:"IsTruncated"`
	Parts                []Part   `xml:"Part"`
	ChecksumAlgorithm    string   `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType         string   `xml:"ChecksumType,omitempty"`
}

// Part is a <Part> of ListPartsResult. ETag is quoted.
type Part struct {
	PartNumber   int    `xml:"PartNumber"`
	LastModified Time   `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	Checksums
}

// ListMultipartUploadsResult is the response of ListMultipartUploads.
type ListMultipartUploadsResult struct {
	XMLName            xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListMultipartUploadsResult"`
	Bucket             string         `xml:"Bucket"`
	KeyMarker          string         `xml:"KeyMarker"`
	UploadIDMarker     string         `xml:"UploadIdMarker"`
	NextKeyMarker      string         `xml:"NextKeyMarker"`
	NextUploadIDMarker string         `xml:"NextUploadIdMarker"`
	Delimiter          string         `xml:"Delimiter,omitempty"`
	Prefix             string         `xml:"Prefix"`
	MaxUploads         int            `xml:"MaxUploads"`
	IsTruncated        bool           `xml:"IsTruncated"`
	Uploads            []Upload       `xml:"Upload"`
	CommonPrefixes     []CommonPrefix `xml:"CommonPrefixes"`
	EncodingType       string         `xml:"EncodingType,omitempty"`
}

// Upload is an <Upload> of ListMultipartUploadsResult.
type Upload struct {
	Key               string `xml:"Key"`
	UploadID          string `xml:"UploadId"`
	Initiator         Owner  `xml:"Initiator"`
	Owner             Owner  `xml:"Owner"`
	StorageClass      string `xml:"StorageClass"`
	Initiated         Time   `xml:"Initiated"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
}

// Delete is the request body of DeleteObjects; see ValidateDelete.
type Delete struct {
	XMLName xml.Name         `xml:"Delete"`
	Quiet   bool             `xml:"Quiet"`
	Objects []ObjectToDelete `xml:"Object"`
}

// ObjectToDelete is an <Object> of Delete. ETag, LastModifiedTime and Size
// are the conditions of a conditional delete.
type ObjectToDelete struct {
	Key              string `xml:"Key"`
	VersionID        string `xml:"VersionId,omitempty"`
	ETag             string `xml:"ETag,omitempty"`
	LastModifiedTime *Time  `xml:"LastModifiedTime,omitempty"`
	Size             *int64 `xml:"Size,omitempty"`
}

// DeleteResult is the response of DeleteObjects (Deleted is empty in quiet
// mode).
type DeleteResult struct {
	XMLName xml.Name        `xml:"http://s3.amazonaws.com/doc/2006-03-01/ DeleteResult"`
	Deleted []DeletedObject `xml:"Deleted"`
	Errors  []DeleteError   `xml:"Error"`
}

// DeletedObject is a <Deleted> of DeleteResult.
type DeletedObject struct {
	Key                   string `xml:"Key"`
	VersionID             string `xml:"VersionId,omitempty"`
	DeleteMarker          bool   `xml:"DeleteMarker,omitempty"`
	DeleteMarkerVersionID string `xml:"DeleteMarkerVersionId,omitempty"`
}

// DeleteError is an <Error> of DeleteResult.
type DeleteError struct {
	Key       string    `xml:"Key"`
	VersionID string    `xml:"VersionId,omitempty"`
	Code      ErrorCode `xml:"Code"`
	Message   string    `xml:"Message"`
}

// NewDeleteError is the DeleteResult entry of a key whose deletion failed
// with err (mapped as ToError maps it).
func NewDeleteError(key, versionID string, err error) DeleteError {
	e := ToError(err)
	return DeleteError{Key: key, VersionID: versionID, Code: e.Code, Message: e.message()}
}

// element is an element a document does not define, caught by an ",any"
// field so that validation can name it.
type element struct {
	XMLName xml.Name
}

// LifecycleConfiguration is the request body of PutBucketLifecycle and the
// response of GetBucketLifecycle; see ValidateLifecycle.
type LifecycleConfiguration struct {
	XMLName xml.Name        `xml:"LifecycleConfiguration"`
	Rules   []LifecycleRule `xml:"Rule"`
	Other   []element       `xml:",any" json:"-"`
}

// MarshalXML writes the document in the S3 namespace.
func (c LifecycleConfiguration) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain LifecycleConfiguration
	start.Name = xml.Name{Space: Namespace, Local: "LifecycleConfiguration"}
	return e.EncodeElement(plain(c), start)
}

// LifecycleRule is a <Rule> of a lifecycle configuration. A rule selects
// objects by Filter or by the deprecated top-level Prefix (or neither: every
// object); see (LifecycleRule).KeyPrefix.
type LifecycleRule struct {
	ID                             string                          `xml:"ID,omitempty"`
	Filter                         *LifecycleFilter                `xml:"Filter,omitempty"`
	Prefix                         *string                         `xml:"Prefix,omitempty"`
	Status                         string                          `xml:"Status"`
	Expiration                     *LifecycleExpiration            `xml:"Expiration,omitempty"`
	NoncurrentVersionExpiration    *NoncurrentVersionExpiration    `xml:"NoncurrentVersionExpiration,omitempty"`
	AbortIncompleteMultipartUpload *AbortIncompleteMultipartUpload `xml:"AbortIncompleteMultipartUpload,omitempty"`
	Other                          []element                       `xml:",any" json:"-"`
}

// NoncurrentVersionExpiration is the action that deletes noncurrent
// versions NoncurrentDays after they became noncurrent, keeping the
// NewerNoncurrentVersions newest.
type NoncurrentVersionExpiration struct {
	NoncurrentDays          *int      `xml:"NoncurrentDays,omitempty"`
	NewerNoncurrentVersions *int      `xml:"NewerNoncurrentVersions,omitempty"`
	Other                   []element `xml:",any" json:"-"`
}

// KeyPrefix is the key prefix the rule applies to ("" for every object).
func (r *LifecycleRule) KeyPrefix() string {
	switch {
	case r.Prefix != nil:
		return *r.Prefix
	case r.Filter == nil:
		return ""
	case r.Filter.Prefix != nil:
		return *r.Filter.Prefix
	case r.Filter.And != nil && r.Filter.And.Prefix != nil:
		return *r.Filter.And.Prefix
	}
	return ""
}

// LifecycleFilter is the <Filter> of a rule: empty, or exactly one of a
// Prefix, a Tag, an ObjectSizeGreaterThan, an ObjectSizeLessThan or an
// And of several of them.
type LifecycleFilter struct {
	Prefix                *string       `xml:"Prefix,omitempty"`
	Tag                   *Tag          `xml:"Tag,omitempty"`
	ObjectSizeGreaterThan *int64        `xml:"ObjectSizeGreaterThan,omitempty"`
	ObjectSizeLessThan    *int64        `xml:"ObjectSizeLessThan,omitempty"`
	And                   *LifecycleAnd `xml:"And,omitempty"`
	Other                 []element     `xml:",any" json:"-"`
}

// LifecycleAnd is the <And> of a filter: a Prefix, Tags and object sizes,
// all of which an object must meet.
type LifecycleAnd struct {
	Prefix                *string   `xml:"Prefix,omitempty"`
	Tags                  []Tag     `xml:"Tag"`
	ObjectSizeGreaterThan *int64    `xml:"ObjectSizeGreaterThan,omitempty"`
	ObjectSizeLessThan    *int64    `xml:"ObjectSizeLessThan,omitempty"`
	Other                 []element `xml:",any" json:"-"`
}

// conditions returns the filter's conditions, wherever they are written:
// the tags and the size bounds (nil when absent).
func (f *LifecycleFilter) conditions() (tags []Tag, gt, lt *int64) {
	if f == nil {
		return nil, nil, nil
	}
	if f.And != nil {
		return f.And.Tags, f.And.ObjectSizeGreaterThan, f.And.ObjectSizeLessThan
	}
	if f.Tag != nil {
		tags = []Tag{*f.Tag}
	}
	return tags, f.ObjectSizeGreaterThan, f.ObjectSizeLessThan
}

// LifecycleExpiration is the <Expiration> action: Days after creation, or a
// Date (midnight UTC), or ExpiredObjectDeleteMarker (delete a delete marker
// that is the only version of its key).
type LifecycleExpiration struct {
	Date                      *Time     `xml:"Date,omitempty"`
	Days                      *int      `xml:"Days,omitempty"`
	ExpiredObjectDeleteMarker *bool     `xml:"ExpiredObjectDeleteMarker,omitempty"`
	Other                     []element `xml:",any" json:"-"`
}

// AbortIncompleteMultipartUpload is the action that aborts uploads started
// more than DaysAfterInitiation days ago.
type AbortIncompleteMultipartUpload struct {
	DaysAfterInitiation *int      `xml:"DaysAfterInitiation,omitempty"`
	Other               []element `xml:",any" json:"-"`
}

// CORSConfiguration is the request body of PutBucketCors and the response of
// GetBucketCors; see ValidateCORS and (*CORSConfiguration).Match.
type CORSConfiguration struct {
	XMLName xml.Name   `xml:"CORSConfiguration"`
	Rules   []CORSRule `xml:"CORSRule"`
	Other   []element  `xml:",any" json:"-"`
}

// MarshalXML writes the document in the S3 namespace.
func (c CORSConfiguration) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain CORSConfiguration
	start.Name = xml.Name{Space: Namespace, Local: "CORSConfiguration"}
	return e.EncodeElement(plain(c), start)
}

// CORSRule is a <CORSRule>.
type CORSRule struct {
	ID             string    `xml:"ID,omitempty"`
	AllowedHeaders []string  `xml:"AllowedHeader"`
	AllowedMethods []string  `xml:"AllowedMethod"`
	AllowedOrigins []string  `xml:"AllowedOrigin"`
	ExposeHeaders  []string  `xml:"ExposeHeader"`
	MaxAgeSeconds  *int      `xml:"MaxAgeSeconds,omitempty"`
	Other          []element `xml:",any" json:"-"`
}

// Match returns the first rule that allows a cross-origin request from
// origin with method and the request headers (for a preflight, the
// Access-Control-Request-Method and -Headers values), or nil. Origins and
// headers may hold one '*' wildcard; headers match case-insensitively.
func (c *CORSConfiguration) Match(origin, method string, headers []string) *CORSRule {
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.allows(origin, method, headers) {
			return r
		}
	}
	return nil
}

func (r *CORSRule) allows(origin, method string, headers []string) bool {
	if !containsFunc(r.AllowedMethods, func(m string) bool { return m == method }) {
		return false
	}
	if !containsFunc(r.AllowedOrigins, func(o string) bool { return wildcardMatch(o, origin) }) {
		return false
	}
	for _, h := range headers {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if !containsFunc(r.AllowedHeaders, func(a string) bool { return wildcardMatch(strings.ToLower(a), h) }) {
			return false
		}
	}
	return true
}

func containsFunc(list []string, f func(string) bool) bool {
	for _, s := range list {
		if f(s) {
			return true
		}
	}
	return false
}

// wildcardMatch matches s against a pattern with at most one '*'.
func wildcardMatch(pattern, s string) bool {
	i := strings.IndexByte(pattern, '*')
	if i < 0 {
		return pattern == s
	}
	pre, suf := pattern[:i], pattern[i+1:]
	return len(s) >= len(pre)+len(suf) && strings.HasPrefix(s, pre) && strings.HasSuffix(s, suf)
}

// ParseXML reads an XML request document of at most max bytes from r into v
// (a pointer to one of the request types). It refuses DTDs (and so entity
// declarations), more than one root element, text outside it, nesting deeper
// than 32 and a root element of another name, with MalformedXML errors that
// say what is wrong. An error reading r is returned as is when it carries an
// S3 code (e.g. a SigV4 payload hash mismatch) or an Atelier kind, and
// otherwise as IncompleteBody.
func ParseXML(r io.Reader, max int64, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			return Errorf(MalformedXML, "the XML document is larger than the %d bytes the server accepts", mb.Limit)
		case s3code.Code(err) != "" || errs.KindOf(err) != errs.Other:
			return err
		}
		return &Error{Code: IncompleteBody, Message: "the request body could not be read to its end", Err: err}
	}
	if int64(len(data)) > max {
		return Errorf(MalformedXML, "the XML document is larger than %d bytes", max)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Errorf(MalformedXML, "the request body is empty; this request needs an XML document")
	}
	if err := checkXML(data); err != nil {
		return err
	}
	if err := xml.Unmarshal(data, v); err != nil {
		return &Error{Code: MalformedXML, Message: "the XML document does not match the schema: " + xmlErrText(err), Err: err}
	}
	return nil
}

// checkXML checks the structure of a document token by token.
func checkXML(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	depth, roots := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &Error{Code: MalformedXML, Message: "the XML document is not well-formed: " + xmlErrText(err), Err: err}
		}
		switch t := tok.(type) {
		case xml.Directive:
			return Errorf(MalformedXML, "the XML document has a <!%s> declaration; DTDs and entity declarations are not accepted", firstWord(t))
		case xml.StartElement:
			if depth == 0 {
				roots++
				if roots > 1 {
					return Errorf(MalformedXML, "the XML document has a second root element <%s>", t.Name.Local)
				}
			}
			depth++
			if depth > maxXMLDepth {
				return Errorf(MalformedXML, "the XML document nests elements more than %d deep", maxXMLDepth)
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return Errorf(MalformedXML, "the XML document has text outside its root element")
			}
		}
	}
	if roots == 0 {
		return Errorf(MalformedXML, "the XML document has no root element")
	}
	return nil
}

func firstWord(b []byte) string {
	s := string(b)
	if i := strings.IndexAny(s, " \t\r\n["); i >= 0 {
		s = s[:i]
	}
	if len(s) > 16 {
		s = s[:16]
	}
	return s
}

// xmlErrText is the text of a decoding error, without Go type names.
func xmlErrText(err error) string {
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("line %d: %s", se.Line, se.Msg)
	}
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return fmt.Sprintf("%q is not a valid number", ne.Num)
	}
	var ue xml.UnmarshalError
	if errors.As(err, &ue) {
		return string(ue)
	}
	return err.Error()
}

// WriteXML writes v as an XML response document with the status, the XML
// declaration, Content-Type application/xml and Content-Length. It marshals
// before writing anything, so on an error the response is still unwritten.
func WriteXML(w http.ResponseWriter, status int, v any) error {
	body, err := xml.Marshal(v)
	if err != nil {
		return errs.E("s3.WriteXML", errs.Internal, err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(xml.Header)+len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(body)
	return nil
}

// ParseEncodingType checks the encoding-type parameter of a list request:
// "" (no encoding) or "url".
func ParseEncodingType(v string) (url bool, err error) {
	switch v {
	case "":
		return false, nil
	case "url":
		return true, nil
	}
	return false, &Error{Code: InvalidArgument,
		Message: fmt.Sprintf("encoding-type %q is not supported; the only encoding type is \"url\"", v)}
}

// EncodeKey URL-encodes a key or prefix as S3 does for encoding-type=url
// (and as object paths are written): every byte but the unreserved
// characters A-Z a-z 0-9 - . _ ~ and '/' becomes %XX.
func EncodeKey(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !keepInKey(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexDigits = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if keepInKey(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return string(b)
}

func keepInKey(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '/'
}

// EncodeURL URL-encodes the keys and prefixes of the result and sets
// EncodingType to "url".
func (l *ListBucketResult) EncodeURL() {
	l.EncodingType = "url"
	l.Prefix, l.Marker, l.NextMarker, l.Delimiter = EncodeKey(l.Prefix), EncodeKey(l.Marker), EncodeKey(l.NextMarker), EncodeKey(l.Delimiter)
	encodeContents(l.Contents, l.CommonPrefixes)
}

// EncodeURL URL-encodes the keys and prefixes of the result and sets
// EncodingType to "url".
func (l *ListBucketResultV2) EncodeURL() {
	l.EncodingType = "url"
	l.Prefix, l.StartAfter, l.Delimiter = EncodeKey(l.Prefix), EncodeKey(l.StartAfter), EncodeKey(l.Delimiter)
	encodeContents(l.Contents, l.CommonPrefixes)
}

// EncodeURL URL-encodes the keys and prefixes of the result and sets
// EncodingType to "url".
func (l *ListMultipartUploadsResult) EncodeURL() {
	l.EncodingType = "url"
	l.Prefix, l.Delimiter = EncodeKey(l.Prefix), EncodeKey(l.Delimiter)
	l.KeyMarker, l.NextKeyMarker = EncodeKey(l.KeyMarker), EncodeKey(l.NextKeyMarker)
	for i := range l.Uploads {
		l.Uploads[i].Key = EncodeKey(l.Uploads[i].Key)
	}
	encodeContents(nil, l.CommonPrefixes)
}

func encodeContents(objs []Object, prefixes []CommonPrefix) {
	for i := range objs {
		objs[i].Key = EncodeKey(objs[i].Key)
	}
	for i := range prefixes {
		prefixes[i].Prefix = EncodeKey(prefixes[i].Prefix)
	}
}

// ValidateCreateBucketConfiguration checks the body of CreateBucket against
// the server's region: an empty constraint or the region itself is accepted.
func ValidateCreateBucketConfiguration(c *CreateBucketConfiguration, region string) error {
	lc := strings.TrimSpace(c.LocationConstraint)
	if lc == "" || lc == region {
		return nil
	}
	return &Error{Code: IllegalLocationConstraintException, Region: region,
		Message: fmt.Sprintf("the location constraint %q is not this server's region %q; a server has one region", lc, region),
		Hint:    fmt.Sprintf("omit the LocationConstraint or set it to %q", region)}
}

// ValidateCompleteMultipartUpload checks the body of
// CompleteMultipartUpload: at least one part, part numbers 1…10000 in
// ascending order without repeats, every part with an ETag.
func ValidateCompleteMultipartUpload(c *CompleteMultipartUpload) error {
	if len(c.Parts) == 0 {
		return Errorf(MalformedXML, "CompleteMultipartUpload lists no <Part>; list every part to assemble, with its PartNumber and ETag")
	}
	prev := 0
	for i, p := range c.Parts {
		if p.PartNumber < 1 || p.PartNumber > MaxPartNumber {
			return &Error{Code: InvalidArgument,
				Message: fmt.Sprintf("<Part> %d has part number %d; part numbers are integers from 1 to %d", i+1, p.PartNumber, MaxPartNumber)}
		}
		if p.PartNumber <= prev {
			return &Error{Code: InvalidPartOrder,
				Message: fmt.Sprintf("part %d comes after part %d; list parts in ascending order of part number, each once", p.PartNumber, prev),
				Hint:    "sort the parts by PartNumber"}
		}
		if UnquoteETag(p.ETag) == "" {
			return Errorf(MalformedXML, "part %d has no <ETag>; send the ETag UploadPart answered for it", p.PartNumber)
		}
		prev = p.PartNumber
	}
	return nil
}

// ValidateDelete checks the body of DeleteObjects: 1…1000 objects, each
// with a key. Conditional deletes (ETag, LastModifiedTime or Size in an
// <Object>) are refused as NotImplemented rather than done unconditionally.
func ValidateDelete(d *Delete) error {
	switch n := len(d.Objects); {
	case n == 0:
		return Errorf(MalformedXML, "the Delete document lists no <Object>; list 1 to %d keys", MaxDeleteObjects)
	case n > MaxDeleteObjects:
		return Errorf(MalformedXML, "the Delete document lists %d objects; at most %d may be deleted in one request", n, MaxDeleteObjects)
	}
	for i, o := range d.Objects {
		if o.Key == "" {
			return Errorf(UserKeyMustBeSpecified, "<Object> %d of the Delete document has no <Key>", i+1)
		}
		if o.ETag != "" || o.LastModifiedTime != nil || o.Size != nil {
			return ErrNotImplemented(fmt.Sprintf("conditional delete (ETag, LastModifiedTime or Size in the <Object> of %q)", o.Key),
				"delete without conditions")
		}
	}
	return nil
}

// ruleName names a rule in messages: by ID, or by position.
func ruleName(what string, i int, id string) string {
	if id != "" {
		return fmt.Sprintf("%s %q", what, id)
	}
	return fmt.Sprintf("%s %d", what, i+1)
}

// lifecycleUnsupported are lifecycle elements of the S3 schema that Atelier
// does not implement, with the reason given to the user.
var lifecycleUnsupported = map[string]string{
	"Transition":                  "Atelier has one storage class, so objects cannot transition",
	"NoncurrentVersionTransition": "Atelier has one storage class, so versions cannot transition",
}

// otherElements reports the first element of others: NotImplemented when it
// is a known but unsupported lifecycle element, MalformedXML otherwise.
func otherElements(others []element, where string, unsupported map[string]string) error {
	if len(others) == 0 {
		return nil
	}
	name := others[0].XMLName.Local
	if why, ok := unsupported[name]; ok {
		e := ErrNotImplemented(fmt.Sprintf("<%s> in %s", name, where), "expire objects with <Expiration> and versions with <NoncurrentVersionExpiration> instead")
		e.Message += ": " + why
		return e
	}
	return Errorf(MalformedXML, "%s has an unknown element <%s>", where, name)
}

// ValidateLifecycle checks a lifecycle configuration: 1…1000 rules, unique
// IDs of at most 255 characters, Status Enabled or Disabled, a filter that is
// empty, one condition (Prefix, Tag, ObjectSizeGreaterThan,
// ObjectSizeLessThan) or an And of several (or the deprecated top-level
// Prefix, not both), and at least one action: Expiration with Days > 0 or
// a Date at midnight UTC, or AbortIncompleteMultipartUpload with
// DaysAfterInitiation > 0 (not with tags or sizes), or
// NoncurrentVersionExpiration. Elements Atelier does not implement
// (Transition, NoncurrentVersionTransition) are refused as NotImplemented,
// unknown elements as MalformedXML.
func ValidateLifecycle(c *LifecycleConfiguration) error {
	const hint = "e.g. <LifecycleConfiguration><Rule><ID>expire-logs</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule></LifecycleConfiguration>"
	if err := otherElements(c.Other, "<LifecycleConfiguration>", lifecycleUnsupported); err != nil {
		return err
	}
	switch n := len(c.Rules); {
	case n == 0:
		return Errorf(MalformedXML, "the lifecycle configuration has no <Rule>; it needs at least one").WithHint(hint)
	case n > MaxLifecycleRules:
		return Errorf(InvalidRequest, "the lifecycle configuration has %d rules; at most %d are allowed", n, MaxLifecycleRules)
	}
	ids := make(map[string]int, len(c.Rules))
	for i := range c.Rules {
		r := &c.Rules[i]
		name := ruleName("lifecycle rule", i, r.ID)
		if len(r.ID) > maxRuleID {
			return Errorf(InvalidArgument, "lifecycle rule %d has an ID of %d characters; IDs are at most %d", i+1, len(r.ID), maxRuleID)
		}
		if r.ID != "" {
			if j, dup := ids[r.ID]; dup {
				return Errorf(InvalidArgument, "lifecycle rules %d and %d both have the ID %q; rule IDs must be unique", j+1, i+1, r.ID)
			}
			ids[r.ID] = i
		}
		if err := validateLifecycleRule(r, name); err != nil {
			return err
		}
	}
	return nil
}

func validateLifecycleRule(r *LifecycleRule, name string) error {
	if err := otherElements(r.Other, name, lifecycleUnsupported); err != nil {
		return err
	}
	if r.Status != "Enabled" && r.Status != "Disabled" {
		return Errorf(MalformedXML, "%s has <Status>%s</Status>; the status is Enabled or Disabled", name, r.Status)
	}
	if r.Filter != nil && r.Prefix != nil {
		return Errorf(MalformedXML, "%s has both <Filter> and the deprecated top-level <Prefix>; put the prefix in the filter", name)
	}
	if err := validateLifecycleFilter(r.Filter, name); err != nil {
		return err
	}
	if r.Expiration == nil && r.AbortIncompleteMultipartUpload == nil && r.NoncurrentVersionExpiration == nil {
		return Errorf(InvalidRequest, "%s has no action; add <Expiration>, <NoncurrentVersionExpiration> or <AbortIncompleteMultipartUpload>", name)
	}
	if x := r.NoncurrentVersionExpiration; x != nil {
		if err := otherElements(x.Other, "the <NoncurrentVersionExpiration> of "+name, lifecycleUnsupported); err != nil {
			return err
		}
		if x.NoncurrentDays == nil || *x.NoncurrentDays <= 0 {
			return Errorf(InvalidArgument, "the <NoncurrentVersionExpiration> of %s needs <NoncurrentDays>, a positive integer", name)
		}
		if n := x.NewerNoncurrentVersions; n != nil && (*n <= 0 || *n > 100) {
			return Errorf(InvalidArgument, "the <NoncurrentVersionExpiration> of %s has <NewerNoncurrentVersions>%d</NewerNoncurrentVersions>; it is 1 to 100", name, *n)
		}
	}
	if x := r.Expiration; x != nil {
		if err := otherElements(x.Other, "the <Expiration> of "+name, lifecycleUnsupported); err != nil {
			return err
		}
		n := 0
		for _, set := range []bool{x.Days != nil, x.Date != nil, x.ExpiredObjectDeleteMarker != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return Errorf(MalformedXML, "the <Expiration> of %s must have exactly one of <Days>, <Date> or <ExpiredObjectDeleteMarker>", name)
		}
		if x.Days != nil && *x.Days <= 0 {
			return Errorf(InvalidArgument, "the <Expiration> of %s has <Days>%d</Days>; days must be a positive integer", name, *x.Days)
		}
		if x.Date != nil {
			d := x.Date.UTC()
			if d.Hour() != 0 || d.Minute() != 0 || d.Second() != 0 || d.Nanosecond() != 0 {
				return Errorf(InvalidArgument, "'Date' must be at midnight GMT: the <Expiration> of %s has the date %s; write a date at midnight UTC, e.g. %s",
					name, d.Format(TimeFormat), d.Truncate(24*time.Hour).Format(TimeFormat))
			}
		}
	}
	tags, gt, lt := r.Filter.conditions()
	if x := r.Expiration; x != nil && x.ExpiredObjectDeleteMarker != nil && len(tags) > 0 {
		return Errorf(InvalidRequest, "ExpiredObjectDeleteMarker cannot be specified with Tags. (%s: a delete marker has no tags)", name)
	}
	if r.AbortIncompleteMultipartUpload != nil {
		if len(tags) > 0 {
			return Errorf(InvalidRequest, "AbortIncompleteMultipartUpload cannot be specified with Tags. (%s: an upload in progress has no tags)", name)
		}
		if gt != nil || lt != nil {
			return Errorf(InvalidRequest, "AbortIncompleteMultipartUpload cannot be specified with Object Size. (%s: an upload in progress has no size yet)", name)
		}
	}
	if a := r.AbortIncompleteMultipartUpload; a != nil {
		if err := otherElements(a.Other, "the <AbortIncompleteMultipartUpload> of "+name, lifecycleUnsupported); err != nil {
			return err
		}
		if a.DaysAfterInitiation == nil || *a.DaysAfterInitiation <= 0 {
			return Errorf(InvalidArgument, "the <AbortIncompleteMultipartUpload> of %s needs <DaysAfterInitiation> with a positive number of days", name)
		}
	}
	return nil
}

// validateLifecycleFilter checks the structure of a rule's <Filter>: at
// most one condition, or an <And> of at least one; tags with distinct
// keys; sizes within S3's bounds, the lower below the upper.
func validateLifecycleFilter(f *LifecycleFilter, name string) error {
	if f == nil {
		return nil
	}
	where := "the <Filter> of " + name
	if err := otherElements(f.Other, where, lifecycleUnsupported); err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{f.Prefix != nil, f.Tag != nil, f.ObjectSizeGreaterThan != nil, f.ObjectSizeLessThan != nil, f.And != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return Errorf(MalformedXML, "%s has more than one of <Prefix>, <Tag>, <ObjectSizeGreaterThan>, <ObjectSizeLessThan> and <And>; "+
			"to combine conditions, put them in an <And>", where).
			WithHint("e.g. <Filter><And><Prefix>logs/</Prefix><Tag><Key>env</Key><Value>dev</Value></Tag><ObjectSizeGreaterThan>1024</ObjectSizeGreaterThan></And></Filter>")
	}
	if f.Tag != nil {
		if err := otherElements(f.Tag.Other, "the <Tag> of "+where, nil); err != nil {
			return err
		}
	}
	if a := f.And; a != nil {
		where = "the <And> of " + name
		if err := otherElements(a.Other, where, lifecycleUnsupported); err != nil {
			return err
		}
		if a.Prefix == nil && len(a.Tags) == 0 && a.ObjectSizeGreaterThan == nil && a.ObjectSizeLessThan == nil {
			return Errorf(MalformedXML, "%s has no condition; give it a <Prefix>, <Tag>s, <ObjectSizeGreaterThan> or <ObjectSizeLessThan>", where)
		}
		seen := make(map[string]bool, len(a.Tags))
		for _, t := range a.Tags {
			if err := otherElements(t.Other, "a <Tag> of "+where, nil); err != nil {
				return err
			}
			if seen[t.Key] {
				return Errorf(InvalidRequest, "Duplicate Tag Keys are not allowed. (%s has the tag key %q twice)", where, t.Key)
			}
			seen[t.Key] = true
		}
	}
	tags, gt, lt := f.conditions()
	if len(tags) > 0 {
		list := make([]obs.Tag, len(tags))
		for i, t := range tags {
			list[i] = obs.Tag{Key: t.Key, Value: t.Value}
		}
		if err := obs.ValidateTags(list, obs.MaxLifecycleTags); err != nil {
			code, _, _ := obs.S3Error(err)
			return &Error{Code: ErrorCode(code), Message: where + ": " + userMessage(err), Hint: string(errs.HintOf(err))}
		}
	}
	if gt != nil && (*gt < 0 || *gt > obs.MaxLifecycleObjectSize) {
		return Errorf(InvalidRequest, "'ObjectSizeGreaterThan' should be between 0 and %d. (%s has %d)", int64(obs.MaxLifecycleObjectSize), where, *gt)
	}
	if lt != nil && (*lt < 1 || *lt > obs.MaxLifecycleObjectSize) {
		return Errorf(InvalidRequest, "'ObjectSizeLessThan' should be between 1 and %d. (%s has %d)", int64(obs.MaxLifecycleObjectSize), where, *lt)
	}
	if gt != nil && lt != nil && *gt >= *lt {
		return Errorf(InvalidRequest, "ObjectSizeGreaterThan must be less than ObjectSizeLessThan. (%s has %d and %d)", where, *gt, *lt)
	}
	return nil
}

// corsMethods are the methods a CORS rule may allow.
var corsMethods = map[string]bool{"GET": true, "PUT": true, "POST": true, "DELETE": true, "HEAD": true}

// ValidateCORS checks a CORS configuration: 1…100 rules, each with at least
// one AllowedOrigin and AllowedMethod; methods among GET, PUT, POST, DELETE
// and HEAD; at most one '*' in an origin or allowed header; no '*' in an
// exposed header; MaxAgeSeconds not negative; IDs of at most 255 characters.
func ValidateCORS(c *CORSConfiguration) error {
	const hint = "e.g. <CORSConfiguration><CORSRule><AllowedOrigin>https://app.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedHeader>*</AllowedHeader></CORSRule></CORSConfiguration>"
	if err := otherElements(c.Other, "<CORSConfiguration>", nil); err != nil {
		return err
	}
	switch n := len(c.Rules); {
	case n == 0:
		return Errorf(MalformedXML, "the CORS configuration has no <CORSRule>; it needs at least one").WithHint(hint)
	case n > MaxCORSRules:
		return Errorf(InvalidRequest, "the CORS configuration has %d rules; at most %d are allowed", n, MaxCORSRules)
	}
	for i := range c.Rules {
		r := &c.Rules[i]
		name := ruleName("CORS rule", i, r.ID)
		if err := otherElements(r.Other, name, nil); err != nil {
			return err
		}
		if len(r.ID) > maxRuleID {
			return Errorf(InvalidArgument, "CORS rule %d has an ID of %d characters; IDs are at most %d", i+1, len(r.ID), maxRuleID)
		}
		if len(r.AllowedMethods) == 0 || len(r.AllowedOrigins) == 0 {
			return Errorf(MalformedXML, "%s needs at least one <AllowedOrigin> and one <AllowedMethod>", name).WithHint(hint)
		}
		for _, m := range r.AllowedMethods {
			if !corsMethods[m] {
				return Errorf(InvalidRequest, "%s allows the method %q; the methods are GET, PUT, POST, DELETE and HEAD, in upper case", name, m)
			}
		}
		for _, o := range r.AllowedOrigins {
			if o == "" || strings.Count(o, "*") > 1 {
				return Errorf(InvalidRequest, "%s has the origin %q; an origin is not empty and has at most one '*' wildcard", name, o)
			}
		}
		for _, h := range r.AllowedHeaders {
			if h == "" || strings.Count(h, "*") > 1 {
				return Errorf(InvalidRequest, "%s has the allowed header %q; a header name is not empty and has at most one '*' wildcard", name, h)
			}
		}
		for _, h := range r.ExposeHeaders {
			if h == "" || strings.Contains(h, "*") {
				return Errorf(InvalidRequest, "%s exposes the header %q; exposed headers are names without wildcards", name, h)
			}
		}
		if r.MaxAgeSeconds != nil && *r.MaxAgeSeconds < 0 {
			return Errorf(InvalidArgument, "%s has <MaxAgeSeconds>%d</MaxAgeSeconds>; it cannot be negative", name, *r.MaxAgeSeconds)
		}
	}
	return nil
}
