package s3

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/obs"
)

// MaxTaggingXML is the body size limit of PutObjectTagging and
// PutBucketTagging (50 tags of 128 + 256 characters, with room to spare).
const MaxTaggingXML = 256 << 10

// Tagging is the document of Get/PutObjectTagging and Get/PutBucketTagging.
type Tagging struct {
	XMLName xml.Name  `xml:"Tagging"`
	TagSet  *TagSet   `xml:"TagSet"`
	Other   []element `xml:",any" json:"-"`
}

// TagSet is the tags of a Tagging document.
type TagSet struct {
	Tags  []Tag     `xml:"Tag"`
	Other []element `xml:",any" json:"-"`
}

// Tag is one tag.
type Tag struct {
	Key   string    `xml:"Key"`
	Value string    `xml:"Value"`
	Other []element `xml:",any" json:"-"`
}

// MarshalXML writes the document in the S3 namespace, with an empty
// <TagSet/> when there are no tags.
func (t Tagging) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain Tagging
	start.Name = xml.Name{Space: Namespace, Local: "Tagging"}
	if t.TagSet == nil {
		t.TagSet = &TagSet{}
	}
	return e.EncodeElement(plain(t), start)
}

// NewTagging is the Tagging document of tags.
func NewTagging(tags []obs.Tag) Tagging {
	ts := &TagSet{Tags: make([]Tag, len(tags))}
	for i, t := range tags {
		ts.Tags[i] = Tag{Key: t.Key, Value: t.Value}
	}
	return Tagging{TagSet: ts}
}

// ValidateTagging checks the structure of a Tagging document (the tags
// themselves are checked by obs.ValidateTags) and returns its tags.
func ValidateTagging(t *Tagging) ([]obs.Tag, error) {
	const hint = "e.g. <Tagging><TagSet><Tag><Key>project</Key><Value>atelier</Value></Tag></TagSet></Tagging>"
	if err := otherElements(t.Other, "<Tagging>", nil); err != nil {
		return nil, err
	}
	if t.TagSet == nil {
		return nil, Errorf(MalformedXML, "the <Tagging> document has no <TagSet>").WithHint(hint)
	}
	if err := otherElements(t.TagSet.Other, "<TagSet>", nil); err != nil {
		return nil, err
	}
	tags := make([]obs.Tag, len(t.TagSet.Tags))
	for i, tg := range t.TagSet.Tags {
		if err := otherElements(tg.Other, "<Tag>", nil); err != nil {
			return nil, err
		}
		tags[i] = obs.Tag{Key: tg.Key, Value: tg.Value}
	}
	return tags, nil
}

func (s *Server) readTagging(q *request) ([]obs.Tag, error) {
	var t Tagging
	if err := ParseXML(q.r.Body, MaxTaggingXML, &t); err != nil {
		return nil, err
	}
	return ValidateTagging(&t)
}

func (s *Server) getObjectTagging(q *request) error {
	version, err := versionParam(q.r.URL.Query())
	if err != nil {
		return err
	}
	tags, shown, err := s.d.OBS.GetObjectVersionTagging(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version)
	if err != nil {
		return err
	}
	if shown != "" {
		q.w.Header().Set("x-amz-version-id", shown)
	}
	return WriteXML(q.w, http.StatusOK, NewTagging(tags))
}

func (s *Server) putObjectTagging(q *request) error {
	version, err := versionParam(q.r.URL.Query())
	if err != nil {
		return err
	}
	tags, err := s.readTagging(q)
	if err != nil {
		return err
	}
	shown, err := s.d.OBS.PutObjectVersionTagging(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version, tags)
	if err != nil {
		return err
	}
	if shown != "" {
		q.w.Header().Set("x-amz-version-id", shown)
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) deleteObjectTagging(q *request) error {
	version, err := versionParam(q.r.URL.Query())
	if err != nil {
		return err
	}
	shown, err := s.d.OBS.DeleteObjectVersionTagging(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version)
	if err != nil {
		return err
	}
	if shown != "" {
		q.w.Header().Set("x-amz-version-id", shown)
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getBucketTagging(q *request) error {
	tags, err := s.d.OBS.GetBucketTagging(q.r.Context(), q.caller, q.t.Bucket)
	if err != nil {
		return err
	}
	return WriteXML(q.w, http.StatusOK, NewTagging(tags))
}

func (s *Server) putBucketTagging(q *request) error {
	tags, err := s.readTagging(q)
	if err != nil {
		return err
	}
	return noContent(q, s.d.OBS.PutBucketTagging(q.r.Context(), q.caller, q.t.Bucket, tags))
}

// requestTags reads the x-amz-tagging header: nil when absent.
func requestTags(h http.Header) ([]obs.Tag, error) {
	v, ok := h["X-Amz-Tagging"]
	if !ok {
		return nil, nil
	}
	tags, err := obs.ParseTagging(strings.Join(v, "&"))
	if err != nil {
		return nil, err
	}
	if tags == nil {
		tags = []obs.Tag{}
	}
	return tags, nil
}

// writeConditions reads If-Match and If-None-Match of a write.
func writeConditions(h http.Header) obs.WriteConditions {
	return obs.WriteConditions{IfMatch: h.Get("If-Match"), IfNoneMatch: h.Get("If-None-Match")}
}

// setTagCount sets x-amz-tagging-count when the object has tags.
func setTagCount(h http.Header, tags map[string]string) {
	if len(tags) > 0 {
		h.Set("x-amz-tagging-count", strconv.Itoa(len(tags)))
	}
}
