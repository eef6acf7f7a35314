package auth

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/auth/policy"
)

func mustPolicy(t *testing.T, doc string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(doc), policy.Identity)
	if err != nil {
		t.Fatalf("parse %s: %v", doc, err)
	}
	return p
}

func TestDecide(t *testing.T) {
	allowJobs := mustPolicy(t, `{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["atelier:job:*"],"Resource":["*"]}]}`)
	denyDelete := mustPolicy(t, `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"atelier:*:Delete","Resource":"*"}]}`)
	readOnlyObs := mustPolicy(t, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::data","arn:aws:s3:::data/*"]}]}`)
	fromLoopback := mustPolicy(t, `{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["atelier:user:List"],"Resource":["*"],"Condition":{"IpAddress":{"aws:SourceIp":["127.0.0.0/8"]}}}]}`)

	job := func(verb string) policy.Request {
		return policy.Request{Action: "atelier:job:" + verb, Resource: "atelier:::job/42"}
	}
	obj := func(action, res string) policy.Request { return policy.Request{Action: action, Resource: res} }
	tests := []struct {
		name  string
		s     Subject
		r     policy.Request
		owner bool
		want  bool
	}{
		{"nobody without policy", Subject{Name: "u"}, job("Get"), false, false},
		{"owner without policy", Subject{Name: "u"}, job("Get"), true, true},
		{"admin", Subject{Name: "a", Admin: true}, job("Delete"), false, true},
		{"allow by policy", Subject{Name: "u", Policies: []*policy.Policy{allowJobs}}, job("Create"), false, true},
		{"policy for other area", Subject{Name: "u", Policies: []*policy.Policy{allowJobs}}, policy.Request{Action: "atelier:service:Create", Resource: "atelier:::service/1"}, false, false},
		{"explicit deny beats allow", Subject{Name: "u", Policies: []*policy.Policy{allowJobs, denyDelete}}, job("Delete"), false, false},
		{"explicit deny beats ownership", Subject{Name: "u", Policies: []*policy.Policy{denyDelete}}, job("Delete"), true, false},
		{"explicit deny beats admin", Subject{Name: "a", Admin: true, Policies: []*policy.Policy{denyDelete}}, job("Delete"), false, false},
		{"session narrows admin", Subject{Name: "a", Admin: true, Session: readOnlyObs}, obj("obs:PutObject", "obs:::data/x"), false, false},
		{"session allows within", Subject{Name: "a", Admin: true, Session: readOnlyObs}, obj("obs:GetObject", "obs:::data/x"), false, true},
		{"session narrows owner", Subject{Name: "u", Session: readOnlyObs}, job("Get"), true, false},
		{"session cannot widen", Subject{Name: "u", Session: readOnlyObs}, obj("obs:GetObject", "obs:::data/x"), false, false},
		{"aws grammar alias", Subject{Name: "u", Policies: []*policy.Policy{readOnlyObs}}, obj("obs:GetObject", "obs:::data/a/b"), false, true},
		{"other bucket", Subject{Name: "u", Policies: []*policy.Policy{readOnlyObs}}, obj("obs:GetObject", "obs:::datax/a"), false, false},
		{"condition met", Subject{Name: "u", Policies: []*policy.Policy{fromLoopback}},
			policy.Request{Action: "atelier:user:List", Resource: "atelier:::user/*", Context: map[string][]string{"aws:sourceip": {"127.0.0.1"}}}, false, true},
		{"condition not met", Subject{Name: "u", Policies: []*policy.Policy{fromLoopback}},
			policy.Request{Action: "atelier:user:List", Resource: "atelier:::user/*", Context: map[string][]string{"aws:sourceip": {"10.1.2.3"}}}, false, false},
		{"condition key missing", Subject{Name: "u", Policies: []*policy.Policy{fromLoopback}},
			policy.Request{Action: "atelier:user:List", Resource: "atelier:::user/*"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.s, tt.r, tt.owner); got != tt.want {
				t.Errorf("Decide = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOwnerMay(t *testing.T) {
	tests := []struct {
		area, verb string
		want       bool
	}{
		{"user", "Get", true}, {"user", "Delete", false}, {"user", "Create", false},
		{"accesskey", "Create", true}, {"accesskey", "Delete", true},
		{"policy", "Get", true}, {"policy", "Attach", false},
		{"token", "Revoke", true},
		{"job", "Delete", true}, {"bucket", "Anything", true},
	}
	for _, tt := range tests {
		if got := ownerMay(tt.area, tt.verb); got != tt.want {
			t.Errorf("ownerMay(%s, %s) = %v, want %v", tt.area, tt.verb, got, tt.want)
		}
	}
}

func TestValidateName(t *testing.T) {
	ok := []string{"alice", "a", "Bob_2", "team.ml-1", "0day"}
	for _, n := range ok {
		if err := ValidateName("user", n); err != nil {
			t.Errorf("ValidateName(%q) = %v", n, err)
		}
	}
	bad := map[string]string{
		"":                           "must not be empty",
		"has space":                  "white space",
		"tab\tname":                  "white space",
		"-dash":                      "not allowed",
		"a/b":                        "not allowed",
		"中文":                         "not allowed",
		string(make200()):            "200 characters long; the limit is 64",
		"x" + string(make200()[:64]): "65 characters",
	}
	for n, want := range bad {
		err := ValidateName("user", n)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateName(%q) = %v, want %q", n, err, want)
		}
	}
}

func make200() []byte {
	b := make([]byte, 200)
	for i := range b {
		b[i] = 'a'
	}
	return b
}
