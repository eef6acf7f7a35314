package s3

import (
	"encoding/xml"
	"net/http"
	"net/url"

	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
)

// Versioning: ?versioning of a bucket, ?versions (ListObjectVersions), and
// the version headers of object requests.

// MaxVersioningXML bounds a VersioningConfiguration request body.
const MaxVersioningXML = 4 << 10

// VersioningConfiguration is the request body of PutBucketVersioning and the
// response of GetBucketVersioning; a bucket that was never versioned
// answers it empty.
type VersioningConfiguration struct {
	XMLName   xml.Name  `xml:"VersioningConfiguration"`
	Status    string    `xml:"Status,omitempty"`
	MfaDelete string    `xml:"MfaDelete,omitempty"`
	Other     []element `xml:",any" json:"-"`
}

// MarshalXML writes the document in the S3 namespace.
func (c VersioningConfiguration) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain VersioningConfiguration
	start.Name = xml.Name{Space: Namespace, Local: "VersioningConfiguration"}
	return e.EncodeElement(plain(c), start)
}

// ValidateVersioning checks a VersioningConfiguration request: no unknown
// element. Status and MfaDelete are checked by the service.
func ValidateVersioning(c *VersioningConfiguration) error {
	return otherElements(c.Other, "<VersioningConfiguration>", nil)
}

// ListVersionsResult is the response of ListObjectVersions. Versions and
// delete markers are one list, in the listing's order (keys ascending,
// each key's newest first), written as <Version> and <DeleteMarker>.
type ListVersionsResult struct {
	XMLName             xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListVersionsResult"`
	Name                string         `xml:"Name"`
	Prefix              string         `xml:"Prefix"`
	KeyMarker           string         `xml:"KeyMarker"`
	VersionIDMarker     string         `xml:"VersionIdMarker"`
	NextKeyMarker       string         `xml:"NextKeyMarker,omitempty"`
	NextVersionIDMarker string         `xml:"NextVersionIdMarker,omitempty"`
	MaxKeys             int            `xml:"MaxKeys"`
	Delimiter           string         `xml:"Delimiter,omitempty"`
	EncodingType        string         `xml:"EncodingType,omitempty"`
	IsTruncated         bool           `xml:"IsTruncated"`
	Entries             []VersionEntry `xml:"Version"`
	CommonPrefixes      []CommonPrefix `xml:"CommonPrefixes"`
}

// VersionEntry is a <Version>, or with DeleteMarker a <DeleteMarker>
// (which has no ETag, Size or StorageClass).
type VersionEntry struct {
	DeleteMarker bool
	Key          string
	VersionID    string
	IsLatest     bool
	LastModified Time
	ETag         string
	Size         int64
	Owner        Owner
	StorageClass string
}

// MarshalXML writes the entry as <Version> or <DeleteMarker>.
func (v VersionEntry) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type version struct {
		Key          string `xml:"Key"`
		VersionID    string `xml:"VersionId"`
		IsLatest     bool   `xml:"IsLatest"`
		LastModified Time   `xml:"LastModified"`
		ETag         string `xml:"ETag"`
		Size         int64  `xml:"Size"`
		Owner        Owner  `xml:"Owner"`
		StorageClass string `xml:"StorageClass"`
	}
	type marker struct {
		Key          string `xml:"Key"`
		VersionID    string `xml:"VersionId"`
		IsLatest     bool   `xml:"IsLatest"`
		LastModified Time   `xml:"LastModified"`
		Owner        Owner  `xml:"Owner"`
	}
	if v.DeleteMarker {
		start.Name.Local = "DeleteMarker"
		return e.EncodeElement(marker{v.Key, v.VersionID, v.IsLatest, v.LastModified, v.Owner}, start)
	}
	return e.EncodeElement(version{v.Key, v.VersionID, v.IsLatest, v.LastModified, v.ETag, v.Size, v.Owner, v.StorageClass}, start)
}

// UnmarshalXML reads <Version> and <DeleteMarker> entries in their order.
func (r *ListVersionsResult) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var a struct {
		XMLName             xml.Name
		Name                string         `xml:"Name"`
		Prefix              string         `xml:"Prefix"`
		KeyMarker           string         `xml:"KeyMarker"`
		VersionIDMarker     string         `xml:"VersionIdMarker"`
		NextKeyMarker       string         `xml:"NextKeyMarker"`
		NextVersionIDMarker string         `xml:"NextVersionIdMarker"`
		MaxKeys             int            `xml:"MaxKeys"`
		Delimiter           string         `xml:"Delimiter"`
		EncodingType        string         `xml:"EncodingType"`
		IsTruncated         bool           `xml:"IsTruncated"`
		Entries             []VersionEntry `xml:",any"`
		CommonPrefixes      []CommonPrefix `xml:"CommonPrefixes"`
	}
	if err := d.DecodeElement(&a, &start); err != nil {
		return err
	}
	*r = ListVersionsResult(a)
	return nil
}

// UnmarshalXML reads a <Version> or a <DeleteMarker>.
func (v *VersionEntry) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var a struct {
		Key          string `xml:"Key"`
		VersionID    string `xml:"VersionId"`
		IsLatest     bool   `xml:"IsLatest"`
		LastModified Time   `xml:"LastModified"`
		ETag         string `xml:"ETag"`
		Size         int64  `xml:"Size"`
		Owner        Owner  `xml:"Owner"`
		StorageClass string `xml:"StorageClass"`
	}
	if err := d.DecodeElement(&a, &start); err != nil {
		return err
	}
	*v = VersionEntry{DeleteMarker: start.Name.Local == "DeleteMarker", Key: a.Key, VersionID: a.VersionID, IsLatest: a.IsLatest,
		LastModified: a.LastModified, ETag: a.ETag, Size: a.Size, Owner: a.Owner, StorageClass: a.StorageClass}
	return nil
}

// EncodeURL URL-encodes the keys, prefixes, markers and delimiter
// (encoding-type=url).
func (r *ListVersionsResult) EncodeURL() {
	for _, p := range []*string{&r.Prefix, &r.KeyMarker, &r.NextKeyMarker, &r.Delimiter} {
		*p = EncodeKey(*p)
	}
	for i := range r.Entries {
		r.Entries[i].Key = EncodeKey(r.Entries[i].Key)
	}
	for i := range r.CommonPrefixes {
		r.CommonPrefixes[i].Prefix = EncodeKey(r.CommonPrefixes[i].Prefix)
	}
}

// versionParam reads the versionId parameter: "" when absent; an empty
// value is InvalidArgument, as in S3.
func versionParam(q url.Values) (string, error) {
	v, ok := q["versionId"]
	if !ok {
		return "", nil
	}
	if len(v) == 0 || v[0] == "" {
		return "", NewError(InvalidArgument, "the versionId parameter is empty; version ids are not empty strings").
			WithHint("send the id x-amz-version-id or ListObjectVersions answered, or null for the null version")
	}
	return v[0], nil
}

// setVersionHeader sets x-amz-version-id for an object of a versioned
// bucket ("null" for the null version).
func setVersionHeader(h http.Header, o *meta.Object) {
	if o != nil && o.Versioned {
		h.Set("x-amz-version-id", obs.VersionID(o))
	}
}

func (s *Server) getBucketVersioning(q *request) error {
	st, err := s.d.OBS.GetBucketVersioning(q.r.Context(), q.caller, q.t.Bucket)
	if err != nil {
		return err
	}
	return WriteXML(q.w, http.StatusOK, VersioningConfiguration{Status: st})
}

func (s *Server) putBucketVersioning(q *request) error {
	var c VersioningConfiguration
	if err := ParseXML(q.r.Body, MaxVersioningXML, &c); err != nil {
		return err
	}
	if err := ValidateVersioning(&c); err != nil {
		return err
	}
	if err := s.d.OBS.PutBucketVersioning(q.r.Context(), q.caller, q.t.Bucket, c.Status, c.MfaDelete); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) listObjectVersions(q *request) error {
	query := q.r.URL.Query()
	encode, err := ParseEncodingType(query.Get("encoding-type"))
	if err != nil {
		return err
	}
	maxKeys, err := listMaxKeys(query.Get("max-keys"), obs.DefaultMaxKeys)
	if err != nil {
		return err
	}
	o := obs.ListVersionsOptions{Prefix: query.Get("prefix"), Delimiter: query.Get("delimiter"),
		KeyMarker: query.Get("key-marker"), VersionIDMarker: query.Get("version-id-marker"), MaxKeys: min(maxKeys, obs.DefaultMaxKeys)}
	res, err := s.d.OBS.ListObjectVersions(q.r.Context(), q.caller, q.t.Bucket, o)
	if err != nil {
		return err
	}
	out := ListVersionsResult{Name: q.t.Bucket, Prefix: o.Prefix, KeyMarker: o.KeyMarker, VersionIDMarker: o.VersionIDMarker,
		NextKeyMarker: res.NextKeyMarker, NextVersionIDMarker: res.NextVersionIDMarker, MaxKeys: maxKeys,
		Delimiter: o.Delimiter, IsTruncated: res.Truncated, Entries: make([]VersionEntry, 0, len(res.Versions))}
	for _, v := range res.Versions {
		e := VersionEntry{DeleteMarker: v.DeleteMarker, Key: v.Key, VersionID: obs.VersionID(v), IsLatest: v.IsLatest,
			LastModified: Time{v.LastModified}, Owner: Owner{ID: v.OwnerID, DisplayName: res.OwnerNames[v.OwnerID]}}
		if !v.DeleteMarker {
			e.ETag, e.Size, e.StorageClass = QuoteETag(v.ETag), v.Size, storageClass(v)
		}
		out.Entries = append(out.Entries, e)
	}
	for _, p := range res.CommonPrefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, CommonPrefix{Prefix: p})
	}
	if encode {
		out.EncodingType = "url"
		out.EncodeURL()
	}
	return WriteXML(q.w, http.StatusOK, out)
}

// deleteObject is DeleteObject, of a version with ?versionId.
func (s *Server) deleteObject(q *request) error {
	version, err := versionParam(q.r.URL.Query())
	if err != nil {
		return err
	}
	bypass, err := bypassHeader(q.r.Header)
	if err != nil {
		return err
	}
	d, err := s.d.OBS.DeleteObjectVersionWith(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version, obs.DeleteOptions{BypassGovernance: bypass})
	if err != nil {
		return err
	}
	h := q.w.Header()
	if d.VersionID != "" {
		h.Set("x-amz-version-id", d.VersionID)
	}
	if d.DeleteMarker {
		h.Set("x-amz-delete-marker", "true")
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

// setMarkerHeaders adds, to the error answer of a read that met a delete
// marker, x-amz-delete-marker, the marker's version id and Last-Modified.
func setMarkerHeaders(h http.Header, err error) {
	if m, ok := obs.Marker(err); ok {
		h.Set("x-amz-delete-marker", "true")
		h.Set("x-amz-version-id", m.VersionID)
		h.Set("Last-Modified", m.LastModified.UTC().Format(http.TimeFormat))
	}
}
