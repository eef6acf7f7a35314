package s3

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
)

// Object lock: ?object-lock of a bucket, ?retention and ?legal-hold of an
// object, and the x-amz-object-lock-* and x-amz-bypass-governance-retention
// headers of writes, reads and deletes.

// MaxObjectLockXML bounds the request bodies of PutObjectLockConfiguration,
// PutObjectRetention and PutObjectLegalHold.
const MaxObjectLockXML = 4 << 10

// The headers of object lock.
const (
	headerLockMode        = "x-amz-object-lock-mode"
	headerLockRetainUntil = "x-amz-object-lock-retain-until-date"
	headerLockLegalHold   = "x-amz-object-lock-legal-hold"
	headerBypass          = "x-amz-bypass-governance-retention"
	headerBucketLock      = "x-amz-bucket-object-lock-enabled"
)

// ObjectLockConfiguration is the document of Get/PutObjectLockConfiguration.
type ObjectLockConfiguration struct {
	XMLName           xml.Name        `xml:"ObjectLockConfiguration"`
	ObjectLockEnabled string          `xml:"ObjectLockEnabled,omitempty"`
	Rule              *ObjectLockRule `xml:"Rule,omitempty"`
	Other             []element       `xml:",any" json:"-"`
}

// ObjectLockRule is the Rule of an ObjectLockConfiguration.
type ObjectLockRule struct {
	DefaultRetention *DefaultRetention `xml:"DefaultRetention,omitempty"`
	Other            []element         `xml:",any" json:"-"`
}

// DefaultRetention is a bucket's default retention: a Mode and Days or
// Years.
type DefaultRetention struct {
	Mode  string    `xml:"Mode,omitempty"`
	Days  *int      `xml:"Days,omitempty"`
	Years *int      `xml:"Years,omitempty"`
	Other []element `xml:",any" json:"-"`
}

// MarshalXML writes the document in the S3 namespace.
func (c ObjectLockConfiguration) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain ObjectLockConfiguration
	start.Name = xml.Name{Space: Namespace, Local: "ObjectLockConfiguration"}
	c.XMLName = xml.Name{}
	return e.EncodeElement(plain(c), start)
}

// NewObjectLockConfiguration is the document of a bucket with object lock
// and the default retention c (none when c.Mode is "").
func NewObjectLockConfiguration(c obs.LockConfig) ObjectLockConfiguration {
	out := ObjectLockConfiguration{ObjectLockEnabled: "Enabled"}
	if c.Mode != "" {
		d := &DefaultRetention{Mode: c.Mode}
		if c.Years != 0 {
			d.Years = &c.Years
		} else {
			d.Days = &c.Days
		}
		out.Rule = &ObjectLockRule{DefaultRetention: d}
	}
	return out
}

const lockConfigHint = "e.g. <ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>30</Days></DefaultRetention></Rule></ObjectLockConfiguration>"

// ValidateObjectLockConfiguration checks a PutObjectLockConfiguration
// document as S3 does and returns its default retention: ObjectLockEnabled
// must be Enabled, a Rule must have a DefaultRetention with a Mode
// GOVERNANCE or COMPLIANCE and Days or Years (not both), else MalformedXML;
// a period that is not positive is InvalidArgument. The period's upper
// bounds are obs.ValidateLockConfig's.
func ValidateObjectLockConfiguration(c *ObjectLockConfiguration) (obs.LockConfig, error) {
	var out obs.LockConfig
	if err := otherElements(c.Other, "<ObjectLockConfiguration>", nil); err != nil {
		return out, err
	}
	if c.ObjectLockEnabled != "Enabled" {
		return out, Errorf(MalformedXML, "<ObjectLockEnabled> is %q; it must be Enabled (object lock cannot be turned off)", c.ObjectLockEnabled).WithHint(lockConfigHint)
	}
	if c.Rule == nil {
		return out, nil
	}
	if err := otherElements(c.Rule.Other, "<Rule>", nil); err != nil {
		return out, err
	}
	d := c.Rule.DefaultRetention
	if d == nil {
		return out, Errorf(MalformedXML, "the <Rule> has no <DefaultRetention>").WithHint(lockConfigHint)
	}
	if err := otherElements(d.Other, "<DefaultRetention>", map[string]string{
		"DefaultEventHold": "event holds are not offered; set a retention period (Days or Years)"}); err != nil {
		return out, err
	}
	switch {
	case d.Mode != obs.LockGovernance && d.Mode != obs.LockCompliance:
		return out, Errorf(MalformedXML, "the <DefaultRetention> <Mode> is %q; it is GOVERNANCE or COMPLIANCE", d.Mode).WithHint(lockConfigHint)
	case d.Days != nil && d.Years != nil:
		return out, Errorf(MalformedXML, "the <DefaultRetention> has both <Days> and <Years>; give one").WithHint(lockConfigHint)
	case d.Days == nil && d.Years == nil:
		return out, Errorf(MalformedXML, "the <DefaultRetention> has neither <Days> nor <Years>").WithHint(lockConfigHint)
	}
	out.Mode = d.Mode
	name, n := "Days", d.Days
	if d.Years != nil {
		name, n = "Years", d.Years
	}
	if *n <= 0 {
		return out, Errorf(InvalidArgument, "Default retention period must be a positive integer value.").
			WithHint("<" + name + "> is a whole number from 1")
	}
	if d.Years != nil {
		out.Years = *d.Years
	} else {
		out.Days = *d.Days
	}
	return out, obs.ValidateLockConfig(out)
}

// Retention is the document of Get/PutObjectRetention. A PutObjectRetention
// without Mode and RetainUntilDate removes the retention.
type Retention struct {
	XMLName         xml.Name  `xml:"Retention"`
	Mode            string    `xml:"Mode,omitempty"`
	RetainUntilDate *Time     `xml:"RetainUntilDate,omitempty"`
	Other           []element `xml:",any" json:"-"`
}

// MarshalXML writes the document in the S3 namespace.
func (r Retention) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain Retention
	start.Name = xml.Name{Space: Namespace, Local: "Retention"}
	r.XMLName = xml.Name{}
	return e.EncodeElement(plain(r), start)
}

// NewRetention is the document of the retention of l.
func NewRetention(l meta.ObjectLock) Retention {
	r := Retention{Mode: l.Mode}
	if !l.RetainUntil.IsZero() {
		r.RetainUntilDate = &Time{l.RetainUntil}
	}
	return r
}

// ValidateRetention checks a PutObjectRetention document and returns the
// retention: a Mode GOVERNANCE or COMPLIANCE with a RetainUntilDate, or
// neither (which removes it); else MalformedXML. Whether the date is in
// the future is decided with the version (obs.CheckRetention).
func ValidateRetention(r *Retention) (meta.ObjectLock, error) {
	const hint = "e.g. <Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>; an empty <Retention/> removes it"
	var out meta.ObjectLock
	if err := otherElements(r.Other, "<Retention>", map[string]string{
		"EventHold": "event holds are not offered", "EventHoldDuration": "event holds are not offered"}); err != nil {
		return out, err
	}
	switch {
	case r.Mode != "" && r.Mode != obs.LockGovernance && r.Mode != obs.LockCompliance:
		return out, Errorf(MalformedXML, "the <Retention> <Mode> is %q; it is GOVERNANCE or COMPLIANCE", r.Mode).WithHint(hint)
	case (r.Mode == "") != (r.RetainUntilDate == nil || r.RetainUntilDate.IsZero()):
		return out, Errorf(MalformedXML, "the <Retention> has a <Mode> without a <RetainUntilDate>, or a date without a mode").WithHint(hint)
	}
	out.Mode = r.Mode
	if r.Mode != "" {
		out.RetainUntil = r.RetainUntilDate.UTC().Truncate(time.Millisecond)
	}
	return out, nil
}

// LegalHold is the document of Get/PutObjectLegalHold.
type LegalHold struct {
	XMLName xml.Name  `xml:"LegalHold"`
	Status  string    `xml:"Status,omitempty"`
	Other   []element `xml:",any" json:"-"`
}

// MarshalXML writes the document in the S3 namespace.
func (h LegalHold) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain LegalHold
	start.Name = xml.Name{Space: Namespace, Local: "LegalHold"}
	h.XMLName = xml.Name{}
	return e.EncodeElement(plain(h), start)
}

// ValidateLegalHold checks a PutObjectLegalHold document and returns its
// Status: ON or OFF, else MalformedXML.
func ValidateLegalHold(h *LegalHold) (string, error) {
	if err := otherElements(h.Other, "<LegalHold>", nil); err != nil {
		return "", err
	}
	if h.Status != obs.LegalHoldOn && h.Status != obs.LegalHoldOff {
		return "", Errorf(MalformedXML, "the <LegalHold> <Status> is %q; it is ON or OFF", h.Status).
			WithHint("e.g. <LegalHold><Status>ON</Status></LegalHold>")
	}
	return h.Status, nil
}

// requestLock reads the x-amz-object-lock-* headers of a write.
func requestLock(h http.Header) (obs.LockRequest, error) {
	return obs.ParseLockHeaders(h.Get(headerLockMode), h.Get(headerLockRetainUntil), h.Get(headerLockLegalHold))
}

// bypassHeader reads x-amz-bypass-governance-retention: nil when absent,
// else true or false; another value is InvalidArgument.
func bypassHeader(h http.Header) (*bool, error) {
	vs, ok := h[http.CanonicalHeaderKey(headerBypass)]
	if !ok || len(vs) == 0 {
		return nil, nil
	}
	v := strings.TrimSpace(vs[0])
	switch {
	case strings.EqualFold(v, "true"):
		t := true
		return &t, nil
	case strings.EqualFold(v, "false"):
		f := false
		return &f, nil
	}
	return nil, Errorf(InvalidArgument, "%s is %q; it is true or false", headerBypass, v)
}

// setLockHeaders adds the object lock headers of a GET or HEAD answer:
// the retention and the legal hold, each where the caller may see it.
func setLockHeaders(h http.Header, res *obs.GetResult) {
	l := res.Object.Lock
	if res.ShowRetention && l.Mode != "" {
		h.Set(headerLockMode, l.Mode)
		h.Set(headerLockRetainUntil, l.RetainUntil.UTC().Format(TimeFormat))
	}
	if res.ShowLegalHold && l.LegalHold != "" {
		h.Set(headerLockLegalHold, l.LegalHold)
	}
}

// readLockBody reads the body of a PUT ?object-lock: S3 answers an empty
// one MissingRequestBodyError.
func readLockBody(q *request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(q.r.Body, MaxObjectLockXML+1))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, NewError(MissingRequestBodyError, "Request Body is empty").
			WithHint("send an ObjectLockConfiguration document; " + lockConfigHint)
	}
	return body, nil
}

func (s *Server) getObjectLockConfiguration(q *request) error {
	c, err := s.d.OBS.GetObjectLockConfiguration(q.r.Context(), q.caller, q.t.Bucket)
	if err != nil {
		return err
	}
	return WriteXML(q.w, http.StatusOK, NewObjectLockConfiguration(c))
}

func (s *Server) putObjectLockConfiguration(q *request) error {
	body, err := readLockBody(q)
	if err != nil {
		return err
	}
	var c ObjectLockConfiguration
	if err := ParseXML(bytes.NewReader(body), MaxObjectLockXML, &c); err != nil {
		return err
	}
	cfg, err := ValidateObjectLockConfiguration(&c)
	if err != nil {
		return err
	}
	if err := s.d.OBS.PutObjectLockConfiguration(q.r.Context(), q.caller, q.t.Bucket, cfg); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) getObjectRetention(q *request) error {
	version, err := versionParam(q.r.URL.Query())
	if err != nil {
		return err
	}
	l, _, err := s.d.OBS.GetObjectRetention(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version)
	if err != nil {
		return err
	}
	return WriteXML(q.w, http.StatusOK, NewRetention(l))
}

func (s *Server) putObjectRetention(q *request) error {
	version, err := versionParam(q.r.URL.Query())
	if err != nil {
		return err
	}
	bypass, err := bypassHeader(q.r.Header)
	if err != nil {
		return err
	}
	var r Retention
	if err := ParseXML(q.r.Body, MaxObjectLockXML, &r); err != nil {
		return err
	}
	l, err := ValidateRetention(&r)
	if err != nil {
		return err
	}
	if _, err := s.d.OBS.PutObjectRetention(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version, l, bypass != nil && *bypass); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) getObjectLegalHold(q *request) error {
	version, err := versionParam(q.r.URL.Query())
	if err != nil {
		return err
	}
	status, _, err := s.d.OBS.GetObjectLegalHold(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version)
	if err != nil {
		return err
	}
	return WriteXML(q.w, http.StatusOK, LegalHold{Status: status})
}

func (s *Server) putObjectLegalHold(q *request) error {
	version, err := versionParam(q.r.URL.Query())
	if err != nil {
		return err
	}
	var h LegalHold
	if err := ParseXML(q.r.Body, MaxObjectLockXML, &h); err != nil {
		return err
	}
	status, err := ValidateLegalHold(&h)
	if err != nil {
		return err
	}
	if _, err := s.d.OBS.PutObjectLegalHold(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version, status); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}
