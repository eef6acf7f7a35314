package s3

import (
	"encoding/xml"
	"io"
	"net/http"
	"strings"

	"github.com/atelier-dev/atelier/internal/obs"
)

// MaxACLXML is the body size limit of PutBucketAcl and PutObjectAcl (S3's
// ACLs have at most 100 grants).
const MaxACLXML = 64 << 10

// xsiNamespace is the namespace of the xsi:type attribute of a Grantee.
const xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"

// AccessControlPolicy is the document of Get/PutBucketAcl and
// Get/PutObjectAcl.
type AccessControlPolicy struct {
	XMLName           xml.Name          `xml:"AccessControlPolicy"`
	Owner             *Owner            `xml:"Owner"`
	AccessControlList AccessControlList `xml:"AccessControlList"`
}

// AccessControlList is the grants of an AccessControlPolicy.
type AccessControlList struct {
	Grants []ACLGrant `xml:"Grant"`
}

// ACLGrant is one grant.
type ACLGrant struct {
	Grantee    Grantee `xml:"Grantee"`
	Permission string  `xml:"Permission"`
}

// Grantee is a user (CanonicalUser: ID, DisplayName) or a group (Group:
// URI), told apart by its xsi:type attribute.
type Grantee struct {
	Type         string `xml:"type,attr"`
	ID           string `xml:"ID,omitempty"`
	DisplayName  string `xml:"DisplayName,omitempty"`
	URI          string `xml:"URI,omitempty"`
	EmailAddress string `xml:"EmailAddress,omitempty"`
}

// MarshalXML writes the document in the S3 namespace.
func (p AccessControlPolicy) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain AccessControlPolicy
	start.Name = xml.Name{Space: Namespace, Local: "AccessControlPolicy"}
	p.XMLName = xml.Name{}
	return e.EncodeElement(plain(p), start)
}

// MarshalXML writes the grantee with xmlns:xsi and xsi:type, as S3 does.
func (g Grantee) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	start.Attr = []xml.Attr{
		{Name: xml.Name{Local: "xmlns:xsi"}, Value: xsiNamespace},
		{Name: xml.Name{Local: "xsi:type"}, Value: g.Type},
	}
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	for _, f := range []struct{ name, value string }{{"ID", g.ID}, {"DisplayName", g.DisplayName}, {"URI", g.URI}} {
		if f.value == "" {
			continue
		}
		if err := e.EncodeElement(f.value, xml.StartElement{Name: xml.Name{Local: f.name}}); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

// NewAccessControlPolicy is the document of an ACL.
func NewAccessControlPolicy(a *obs.ACL) AccessControlPolicy {
	name := func(id string) string {
		if n := a.Names[id]; n != "" {
			return n
		}
		return id
	}
	p := AccessControlPolicy{Owner: &Owner{ID: a.Owner, DisplayName: name(a.Owner)}}
	for _, g := range a.Grants {
		var ge Grantee
		if g.URI != "" {
			ge = Grantee{Type: "Group", URI: g.URI}
		} else {
			ge = Grantee{Type: "CanonicalUser", ID: g.ID, DisplayName: name(g.ID)}
		}
		p.AccessControlList.Grants = append(p.AccessControlList.Grants, ACLGrant{Grantee: ge, Permission: g.Permission})
	}
	return p
}

// grantHeaders are the x-amz-grant-* headers and the permissions they give.
var grantHeaders = []struct{ header, perm string }{
	{"x-amz-grant-read", obs.PermRead},
	{"x-amz-grant-write", obs.PermWrite},
	{"x-amz-grant-read-acp", obs.PermReadACP},
	{"x-amz-grant-write-acp", obs.PermWriteACP},
	{"x-amz-grant-full-control", obs.PermFullControl},
}

// requestACL reads x-amz-acl and the x-amz-grant-* headers: the zero
// ACLRequest when there are none.
func requestACL(h http.Header) (obs.ACLRequest, error) {
	var r obs.ACLRequest
	r.Canned = strings.TrimSpace(h.Get("x-amz-acl"))
	for _, gh := range grantHeaders {
		v := h.Values(gh.header)
		if len(v) == 0 {
			continue
		}
		g, err := obs.ParseGrantHeader(gh.perm, strings.Join(v, ","))
		if err != nil {
			return r, err
		}
		r.Grants = append(r.Grants, g...)
		if r.Grants == nil {
			r.Grants = []obs.Grant{}
		}
	}
	return r, nil
}

// readACL reads the ACL of a PUT ?acl: the headers, or an
// AccessControlPolicy body (not both).
func (s *Server) readACL(q *request) (obs.ACLRequest, error) {
	r, err := requestACL(q.r.Header)
	if err != nil {
		return r, err
	}
	body, err := io.ReadAll(io.LimitReader(q.r.Body, MaxACLXML+1))
	if err != nil {
		return r, err
	}
	if strings.TrimSpace(string(body)) == "" {
		return r, nil
	}
	if r.Canned != "" || r.Grants != nil {
		return r, Errorf(UnexpectedContent, "PUT ?acl with both ACL headers and an AccessControlPolicy body").
			WithHint("give the ACL either in x-amz-acl / x-amz-grant-* headers or in the body")
	}
	var p AccessControlPolicy
	if err := ParseXML(strings.NewReader(string(body)), MaxACLXML, &p); err != nil {
		return r, err
	}
	r.Body = true
	r.Grants = []obs.Grant{}
	if p.Owner != nil {
		r.Owner = p.Owner.ID
	}
	for _, g := range p.AccessControlList.Grants {
		ge := g.Grantee
		switch {
		case ge.EmailAddress != "" || strings.EqualFold(ge.Type, "AmazonCustomerByEmail"):
			return r, Errorf(MalformedACLError, "grantee %q: Atelier does not grant by e-mail address", ge.EmailAddress).
				WithHint("grant to the user's id (CanonicalUser)")
		case ge.URI != "":
			r.Grants = append(r.Grants, obs.Grant{URI: ge.URI, Permission: g.Permission})
		case ge.ID != "":
			r.Grants = append(r.Grants, obs.Grant{ID: ge.ID, Permission: g.Permission})
		default:
			return r, Errorf(MalformedACLError, "a <Grantee> has neither <ID> nor <URI>")
		}
	}
	return r, nil
}

func (s *Server) getACL(q *request) error {
	var a *obs.ACL
	var err error
	if q.t.Key == "" {
		a, err = s.d.OBS.GetBucketACL(q.r.Context(), q.caller, q.t.Bucket)
	} else {
		var version, shown string
		if version, err = versionParam(q.r.URL.Query()); err != nil {
			return err
		}
		a, shown, err = s.d.OBS.GetObjectVersionACL(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version)
		if shown != "" {
			q.w.Header().Set("x-amz-version-id", shown)
		}
	}
	if err != nil {
		return err
	}
	return WriteXML(q.w, http.StatusOK, NewAccessControlPolicy(a))
}

func (s *Server) putACL(q *request) error {
	r, err := s.readACL(q)
	if err != nil {
		return err
	}
	if q.t.Key == "" {
		err = s.d.OBS.PutBucketACL(q.r.Context(), q.caller, q.t.Bucket, r)
	} else {
		var version, shown string
		if version, err = versionParam(q.r.URL.Query()); err != nil {
			return err
		}
		shown, err = s.d.OBS.PutObjectVersionACL(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, version, r)
		if shown != "" {
			q.w.Header().Set("x-amz-version-id", shown)
		}
	}
	if err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// OwnershipControls is the document of Get/PutBucketOwnershipControls.
type OwnershipControls struct {
	XMLName xml.Name                `xml:"OwnershipControls"`
	Rules   []OwnershipControlsRule `xml:"Rule"`
}

// OwnershipControlsRule is a rule of OwnershipControls.
type OwnershipControlsRule struct {
	ObjectOwnership string `xml:"ObjectOwnership"`
}

// MarshalXML writes the document in the S3 namespace.
func (o OwnershipControls) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain OwnershipControls
	start.Name = xml.Name{Space: Namespace, Local: "OwnershipControls"}
	o.XMLName = xml.Name{}
	return e.EncodeElement(plain(o), start)
}

func (s *Server) getOwnershipControls(q *request) error {
	own, err := s.d.OBS.GetBucketOwnershipControls(q.r.Context(), q.caller, q.t.Bucket)
	if err != nil {
		return err
	}
	return WriteXML(q.w, http.StatusOK, OwnershipControls{Rules: []OwnershipControlsRule{{ObjectOwnership: own}}})
}

func (s *Server) putOwnershipControls(q *request) error {
	var o OwnershipControls
	if err := ParseXML(q.r.Body, MaxConfigXML, &o); err != nil {
		return err
	}
	if len(o.Rules) != 1 {
		return Errorf(MalformedXML, "<OwnershipControls> has %d rules; it has exactly one", len(o.Rules)).
			WithHint("<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>")
	}
	if err := s.d.OBS.PutBucketOwnershipControls(q.r.Context(), q.caller, q.t.Bucket, o.Rules[0].ObjectOwnership); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// PublicAccessBlockConfiguration is the document of Get/PutPublicAccessBlock.
type PublicAccessBlockConfiguration struct {
	XMLName               xml.Name `xml:"PublicAccessBlockConfiguration"`
	BlockPublicAcls       bool     `xml:"BlockPublicAcls"`
	IgnorePublicAcls      bool     `xml:"IgnorePublicAcls"`
	BlockPublicPolicy     bool     `xml:"BlockPublicPolicy"`
	RestrictPublicBuckets bool     `xml:"RestrictPublicBuckets"`
}

// MarshalXML writes the document in the S3 namespace.
func (p PublicAccessBlockConfiguration) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type plain PublicAccessBlockConfiguration
	start.Name = xml.Name{Space: Namespace, Local: "PublicAccessBlockConfiguration"}
	p.XMLName = xml.Name{}
	return e.EncodeElement(plain(p), start)
}

func (s *Server) getPublicAccessBlock(q *request) error {
	p, err := s.d.OBS.GetPublicAccessBlock(q.r.Context(), q.caller, q.t.Bucket)
	if err != nil {
		return err
	}
	return WriteXML(q.w, http.StatusOK, PublicAccessBlockConfiguration{BlockPublicAcls: p.BlockPublicAcls,
		IgnorePublicAcls: p.IgnorePublicAcls, BlockPublicPolicy: p.BlockPublicPolicy, RestrictPublicBuckets: p.RestrictPublicBuckets})
}

func (s *Server) putPublicAccessBlock(q *request) error {
	var p PublicAccessBlockConfiguration
	if err := ParseXML(q.r.Body, MaxConfigXML, &p); err != nil {
		return err
	}
	return s.d.OBS.PutPublicAccessBlock(q.r.Context(), q.caller, q.t.Bucket, obs.PublicAccessBlock{BlockPublicAcls: p.BlockPublicAcls,
		IgnorePublicAcls: p.IgnorePublicAcls, BlockPublicPolicy: p.BlockPublicPolicy, RestrictPublicBuckets: p.RestrictPublicBuckets})
}

// PolicyStatus is the document of GetBucketPolicyStatus.
type PolicyStatus struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ PolicyStatus"`
	IsPublic bool     `xml:"IsPublic"`
}

func (s *Server) getPolicyStatus(q *request) error {
	public, err := s.d.OBS.GetBucketPolicyStatus(q.r.Context(), q.caller, q.t.Bucket)
	if err != nil {
		return err
	}
	return WriteXML(q.w, http.StatusOK, PolicyStatus{IsPublic: public})
}
