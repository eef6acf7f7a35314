package s3

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/obs"
)

// GetObjectAttributesResponse is the response of GetObjectAttributes. Only
// the attributes asked for are set; ETag is not quoted (as S3 sends it
// here).
type GetObjectAttributesResponse struct {
	XMLName      xml.Name           `xml:"http://s3.amazonaws.com/doc/2006-03-01/ GetObjectAttributesResponse"`
	ETag         string             `xml:"ETag,omitempty"`
	Checksum     *ObjectChecksum    `xml:"Checksum"`
	ObjectParts  *GetObjectPartsXML `xml:"ObjectParts"`
	StorageClass string             `xml:"StorageClass,omitempty"`
	ObjectSize   *int64             `xml:"ObjectSize"`
}

// ObjectChecksum is the Checksum of GetObjectAttributes.
type ObjectChecksum struct {
	Checksums
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

// GetObjectPartsXML is the ObjectParts of GetObjectAttributes.
type GetObjectPartsXML struct {
	IsTruncated          bool            `xml:"IsTruncated"`
	MaxParts             int             `xml:"MaxParts"`
	NextPartNumberMarker int             `xml:"NextPartNumberMarker"`
	PartNumberMarker     int             `xml:"PartNumberMarker"`
	Parts                []ObjectPartXML `xml:"Part"`
	PartsCount           int             `xml:"PartsCount"`
}

// ObjectPartXML is one Part of ObjectParts.
type ObjectPartXML struct {
	Checksums
	PartNumber int   `xml:"PartNumber"`
	Size       int64 `xml:"Size"`
}

// objectAttributes are the names x-amz-object-attributes takes.
var objectAttributes = map[string]bool{"ETag": true, "Checksum": true, "ObjectParts": true, "StorageClass": true, "ObjectSize": true}

// ParseObjectAttributes parses x-amz-object-attributes: a comma-separated
// list (the header may repeat) of ETag, Checksum, ObjectParts,
// StorageClass and ObjectSize, as S3 spells them.
func ParseObjectAttributes(values []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, v := range values {
		for _, a := range strings.Split(v, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if !objectAttributes[a] {
				return nil, (&Error{Code: InvalidArgument, Message: "Invalid attribute name specified: " + strconv.Quote(a)}).
					WithHint("x-amz-object-attributes takes ETag, Checksum, ObjectParts, StorageClass and ObjectSize, comma-separated")
			}
			out[a] = true
		}
	}
	if len(out) == 0 {
		return nil, NewError(InvalidRequest, "x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty").
			WithHint("send x-amz-object-attributes: ETag,Checksum,ObjectParts,StorageClass,ObjectSize (any of them)")
	}
	return out, nil
}

// nonNegative parses an optional whole-number header.
func nonNegative(h http.Header, name string, def int) (int, error) {
	v := h.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, Errorf(InvalidArgument, "%s must be a whole number from 0; got %q", name, v)
	}
	return n, nil
}

func (s *Server) getObjectAttributes(q *request) error {
	attrs, err := ParseObjectAttributes(q.r.Header.Values("x-amz-object-attributes"))
	if err != nil {
		return err
	}
	maxParts, err := nonNegative(q.r.Header, "x-amz-max-parts", 1000)
	if err != nil {
		return err
	}
	maxParts = min(maxParts, 1000)
	marker, err := nonNegative(q.r.Header, "x-amz-part-number-marker", 0)
	if err != nil {
		return err
	}
	version, err := versionParam(q.r.URL.Query())
	if err != nil {
		return err
	}
	obj, err := s.d.OBS.GetObjectVersionAttributes(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version)
	if err != nil {
		return err
	}
	setVersionHeader(q.w.Header(), obj)
	out := GetObjectAttributesResponse{}
	if attrs["ETag"] {
		out.ETag = obj.ETag
	}
	if attrs["StorageClass"] {
		out.StorageClass = storageClass(obj)
	}
	if attrs["ObjectSize"] {
		size := obj.Size
		out.ObjectSize = &size
	}
	algo := ""
	for a := range obj.Checksums {
		algo = a
	}
	if attrs["Checksum"] && len(obj.Checksums) > 0 {
		c := &ObjectChecksum{Checksums: checksums(obj.Checksums), ChecksumType: "FULL_OBJECT"}
		if strings.Contains(obj.Checksums[algo], "-") {
			c.ChecksumType = "COMPOSITE"
		}
		out.Checksum = c
	}
	if attrs["ObjectParts"] && obs.IsMultipart(obj) {
		p := &GetObjectPartsXML{MaxParts: maxParts, PartNumberMarker: marker, PartsCount: len(obj.Blobs)}
		for i, b := range obj.Blobs {
			n := i + 1
			if n <= marker {
				continue
			}
			if len(p.Parts) == maxParts {
				p.IsTruncated = true
				break
			}
			part := ObjectPartXML{PartNumber: n, Size: b.Size}
			if b.Checksum != "" && algo != "" {
				part.Checksums = checksums(map[string]string{algo: b.Checksum})
			}
			p.Parts = append(p.Parts, part)
			p.NextPartNumberMarker = n
		}
		out.ObjectParts = p
	}
	q.w.Header().Set("Last-Modified", obj.LastModified.UTC().Format(http.TimeFormat))
	return WriteXML(q.w, http.StatusOK, out)
}
