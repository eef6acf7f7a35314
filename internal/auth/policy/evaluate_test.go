package policy

import (
	"testing"
)

func mustParse(t testing.TB, kind Kind, doc string) *Policy {
	t.Helper()
	p, err := Parse([]byte(doc), kind)
	if err != nil {
		t.Fatalf("Parse(%s): %v", doc, err)
	}
	return p
}

type evalCase struct {
	name string
	r    Request
	want Decision
}

func ctx(kv ...string) map[string][]string {
	m := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = append(m[kv[i]], kv[i+1])
	}
	return m
}

func runEval(t *testing.T, ps []*Policy, cases []evalCase) {
	t.Helper()
	for _, tt := range cases {
		if got := Evaluate(ps, tt.r); got != tt.want {
			t.Errorf("%s: Evaluate(%+v) = %v, want %v", tt.name, tt.r, got, tt.want)
		}
	}
}

func TestEvaluateActionsAndResources(t *testing.T) {
	p := mustParse(t, Identity, stmt(
		`{"Effect":"Allow","Action":"s3:Get*","Resource":["arn:aws:s3:::data/*"]}`,
		`{"Effect":"Deny","Action":"obs:object:GetObject","Resource":"obs:*:*:object:data/secret/*"}`,
		`{"Effect":"Allow","Action":["obs:ListBucket"],"Resource":"data"}`,
		`{"Effect":"Allow","Action":"s3:PutObject","Resource":"obs:::logs/2024-0?-*.log"}`,
		`{"Effect":"Allow","Action":"s3:DeleteObject","Resource":"obs:::tmp/*/x"}`,
	))
	runEval(t, []*Policy{p}, []evalCase{
		{"allow by wildcard action", Request{Action: "obs:GetObject", Resource: "obs:::data/a.csv"}, Allow},
		{"deny beats allow", Request{Action: "obs:GetObject", Resource: "obs:::data/secret/k"}, Deny},
		{"deny only for its action", Request{Action: "obs:GetObjectAcl", Resource: "obs:::data/secret/k"}, Allow},
		{"action case-insensitive", Request{Action: "OBS:getobject", Resource: "obs:::data/a"}, Allow},
		{"deny action case-insensitive", Request{Action: "s3:GETOBJECT", Resource: "obs:::data/secret/k"}, Deny},
		{"resource case-sensitive", Request{Action: "obs:GetObject", Resource: "obs:::Data/a"}, NotApplicable},
		{"other action", Request{Action: "obs:PutObject", Resource: "obs:::data/a"}, NotApplicable},
		{"data/* is not the bucket", Request{Action: "obs:GetObject", Resource: "obs:::data"}, NotApplicable},
		{"bucket action", Request{Action: "obs:ListBucket", Resource: "obs:::data"}, Allow},
		{"bucket action on object", Request{Action: "obs:ListBucket", Resource: "obs:::data/x"}, NotApplicable},
		{"AWS alias request", Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::data/a"}, Allow},
		{"IAM alias request", Request{Action: "obs:object:GetObject", Resource: "obs:*:*:object:data/a"}, Allow},
		{"short-form request", Request{Action: "GetObject", Resource: "data/a"}, Allow},
		{"star crosses slashes", Request{Action: "obs:GetObject", Resource: "obs:::data/a/b/c"}, Allow},
		{"question mark is one character", Request{Action: "obs:PutObject", Resource: "obs:::logs/2024-03-01.log"}, Allow},
		{"question mark is not two", Request{Action: "obs:PutObject", Resource: "obs:::logs/2024-103-01.log"}, NotApplicable},
		{"question mark is not zero", Request{Action: "obs:PutObject", Resource: "obs:::logs/2024--01.log"}, NotApplicable},
		{"question mark is a whole UTF-8 rune", Request{Action: "obs:PutObject", Resource: "obs:::logs/2024-0ü-01.log"}, Allow},
		{"question mark matches a slash", Request{Action: "obs:PutObject", Resource: "obs:::logs/2024-0/-01.log"}, Allow},
		{"inner star across slashes", Request{Action: "obs:DeleteObject", Resource: "obs:::tmp/a/b/c/x"}, Allow},
		{"inner star needs the suffix", Request{Action: "obs:DeleteObject", Resource: "obs:::tmp/a/b/c/y"}, NotApplicable},
		{"literal star in a key", Request{Action: "obs:GetObject", Resource: "obs:::data/*"}, Allow},
		{"wildcard request action", Request{Action: "obs:Get*", Resource: "obs:::data/a"}, NotApplicable},
		{"empty request action", Request{Resource: "obs:::data/a"}, NotApplicable},
		{"malformed request action", Request{Action: "ecs:Get", Resource: "obs:::data/a"}, NotApplicable},
		{"malformed request resource", Request{Action: "obs:GetObject", Resource: "arn:*:s3:::data/a"}, NotApplicable},
		{"platform action", Request{Action: "atelier:job:Create", Resource: "atelier:::job/1"}, NotApplicable},
	})
}

func TestEvaluateNotActionNotResource(t *testing.T) {
	p := mustParse(t, Identity, stmt(
		`{"Effect":"Allow","NotAction":["s3:Delete*","atelier:user:*"],"Resource":"*"}`,
		`{"Effect":"Deny","Action":"*","NotResource":["obs:::public/*","atelier:::*"]}`,
	))
	runEval(t, []*Policy{p}, []evalCase{
		{"allowed by NotAction, in NotResource", Request{Action: "obs:GetObject", Resource: "obs:::public/a"}, Allow},
		{"NotAction excludes", Request{Action: "obs:DeleteObject", Resource: "obs:::public/a"}, NotApplicable},
		{"NotResource deny", Request{Action: "obs:GetObject", Resource: "obs:::private/a"}, Deny},
		{"platform action", Request{Action: "atelier:job:Create", Resource: "atelier:::job/1"}, Allow},
		{"NotAction platform", Request{Action: "atelier:user:Delete", Resource: "atelier:::user/bob"}, NotApplicable},
		{"no resource is *", Request{Action: "atelier:job:List"}, Deny},
	})
}

func TestEvaluatePlatformActions(t *testing.T) {
	jobs := mustParse(t, Identity, stmt(`{"Effect":"Allow","Action":"atelier:job:*","Resource":"atelier:::job/*"}`))
	all := mustParse(t, Identity, stmt(`{"Effect":"Allow","Action":"atelier:*"}`))
	anything := mustParse(t, Identity, stmt(`{"Effect":"Allow","Action":"*","Resource":"*"}`))
	runEval(t, []*Policy{jobs}, []evalCase{
		{"job verb", Request{Action: "atelier:job:Create", Resource: "atelier:::job/42"}, Allow},
		{"verb case", Request{Action: "atelier:JOB:delete", Resource: "atelier:::job/42"}, Allow},
		{"other area", Request{Action: "atelier:jobs:Create", Resource: "atelier:::job/42"}, NotApplicable},
		{"other resource type", Request{Action: "atelier:job:Get", Resource: "atelier:::service/42"}, NotApplicable},
		{"no resource", Request{Action: "atelier:job:List"}, NotApplicable},
	})
	runEval(t, []*Policy{all}, []evalCase{
		{"atelier:*", Request{Action: "atelier:user:Create", Resource: "atelier:::user/x"}, Allow},
		{"atelier:* not obs", Request{Action: "obs:GetObject", Resource: "obs:::b/k"}, NotApplicable},
		{"no resource", Request{Action: "atelier:user:List"}, Allow},
	})
	runEval(t, []*Policy{anything}, []evalCase{
		{"* obs", Request{Action: "obs:GetObject", Resource: "obs:::b/k"}, Allow},
		{"* atelier", Request{Action: "atelier:user:Create", Resource: "atelier:::user/x"}, Allow},
	})
}

func TestEvaluateConditions(t *testing.T) {
	cond := func(c string) *Policy {
		return mustParse(t, Identity, stmt(`{"Effect":"Allow","Action":"*","Resource":"*","Condition":`+c+`}`))
	}
	req := func(principal string, c map[string][]string) Request {
		return Request{Principal: principal, Action: "obs:ListBucket", Resource: "obs:::home", Context: c}
	}
	tests := []struct {
		name string
		cond string
		r    Request
		want Decision
	}{
		{"StringEquals match", `{"StringEquals":{"s3:prefix":"home/"}}`, req("", ctx("s3:prefix", "home/")), Allow},
		{"StringEquals case-sensitive", `{"StringEquals":{"s3:prefix":"home/"}}`, req("", ctx("s3:prefix", "HOME/")), NotApplicable},
		{"StringEquals no wildcards", `{"StringEquals":{"s3:prefix":"home/*"}}`, req("", ctx("s3:prefix", "home/x")), NotApplicable},
		{"StringEquals missing key", `{"StringEquals":{"s3:prefix":"home/"}}`, req("", nil), NotApplicable},
		{"StringEquals values ORed", `{"StringEquals":{"s3:prefix":["a","home/"]}}`, req("", ctx("s3:prefix", "home/")), Allow},
		{"StringEquals any context value", `{"StringEquals":{"s3:prefix":"b"}}`, req("", ctx("s3:prefix", "a", "s3:prefix", "b")), Allow},
		{"StringEquals number", `{"StringEquals":{"s3:max-keys":10}}`, req("", ctx("s3:max-keys", "10")), Allow},
		{"StringEquals variable", `{"StringEquals":{"s3:prefix":"${aws:username}/"}}`, req("bob", ctx("s3:prefix", "bob/")), Allow},
		{"StringEquals variable literal star", `{"StringEquals":{"s3:prefix":"${*}"}}`, req("", ctx("s3:prefix", "*")), Allow},
		{"StringNotEquals match", `{"StringNotEquals":{"s3:prefix":"home/"}}`, req("", ctx("s3:prefix", "home/")), NotApplicable},
		{"StringNotEquals other", `{"StringNotEquals":{"s3:prefix":"home/"}}`, req("", ctx("s3:prefix", "x")), Allow},
		{"StringNotEquals missing key", `{"StringNotEquals":{"s3:prefix":"home/"}}`, req("", nil), Allow},
		{"StringEqualsIgnoreCase", `{"StringEqualsIgnoreCase":{"aws:useragent":"AWS-CLI"}}`, req("", ctx("aws:useragent", "aws-cli")), Allow},
		{"StringEqualsIgnoreCase missing", `{"StringEqualsIgnoreCase":{"aws:useragent":"x"}}`, req("", nil), NotApplicable},
		{"StringNotEqualsIgnoreCase", `{"StringNotEqualsIgnoreCase":{"aws:useragent":"AWS-CLI"}}`, req("", ctx("aws:useragent", "aws-cli")), NotApplicable},
		{"StringNotEqualsIgnoreCase missing", `{"StringNotEqualsIgnoreCase":{"aws:useragent":"x"}}`, req("", nil), Allow},
		{"StringLike", `{"StringLike":{"s3:prefix":"home/*"}}`, req("", ctx("s3:prefix", "home/a/b")), Allow},
		{"StringLike ?", `{"StringLike":{"s3:prefix":"v?"}}`, req("", ctx("s3:prefix", "v1")), Allow},
		{"StringLike no match", `{"StringLike":{"s3:prefix":"home/*"}}`, req("", ctx("s3:prefix", "other/")), NotApplicable},
		{"StringLike missing", `{"StringLike":{"s3:prefix":"*"}}`, req("", nil), NotApplicable},
		{"StringLike variable", `{"StringLike":{"s3:prefix":["home/${aws:username}/*"]}}`, req("bob", ctx("s3:prefix", "home/bob/x")), Allow},
		{"StringLike variable other user", `{"StringLike":{"s3:prefix":["home/${aws:username}/*"]}}`, req("bob", ctx("s3:prefix", "home/alice/x")), NotApplicable},
		{"StringLike variable anonymous", `{"StringLike":{"s3:prefix":["home/${atelier:username}/*"]}}`, req("", ctx("s3:prefix", "home//x")), NotApplicable},
		{"StringNotLike", `{"StringNotLike":{"s3:prefix":"tmp/*"}}`, req("", ctx("s3:prefix", "home/")), Allow},
		{"StringNotLike match", `{"StringNotLike":{"s3:prefix":"tmp/*"}}`, req("", ctx("s3:prefix", "tmp/x")), NotApplicable},
		{"StringNotLike missing", `{"StringNotLike":{"s3:prefix":"tmp/*"}}`, req("", nil), Allow},
		{"IpAddress v4 CIDR", `{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, req("", ctx("aws:sourceip", "10.1.2.3")), Allow},
		{"IpAddress v4 outside", `{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, req("", ctx("aws:sourceip", "11.0.0.1")), NotApplicable},
		{"IpAddress v4 single", `{"IpAddress":{"aws:SourceIp":"192.0.2.7"}}`, req("", ctx("aws:sourceip", "192.0.2.7")), Allow},
		{"IpAddress v4 single other", `{"IpAddress":{"aws:SourceIp":"192.0.2.7"}}`, req("", ctx("aws:sourceip", "192.0.2.8")), NotApplicable},
		{"IpAddress v6 CIDR", `{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32"]}}`, req("", ctx("aws:sourceip", "2001:db8:1::5")), Allow},
		{"IpAddress v6 outside", `{"IpAddress":{"aws:SourceIp":"2001:db8::/32"}}`, req("", ctx("aws:sourceip", "2001:db9::1")), NotApplicable},
		{"IpAddress v4-mapped request", `{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, req("", ctx("aws:sourceip", "::ffff:10.0.0.1")), Allow},
		{"IpAddress v4-mapped range", `{"IpAddress":{"aws:SourceIp":"::ffff:10.0.0.0/104"}}`, req("", ctx("aws:sourceip", "10.9.9.9")), Allow},
		{"IpAddress v4 range, v6 request", `{"IpAddress":{"aws:SourceIp":"0.0.0.0/0"}}`, req("", ctx("aws:sourceip", "2001:db8::1")), NotApplicable},
		{"IpAddress unmasked CIDR", `{"IpAddress":{"aws:SourceIp":"10.1.2.3/8"}}`, req("", ctx("aws:sourceip", "10.200.0.1")), Allow},
		{"IpAddress garbage request", `{"IpAddress":{"aws:SourceIp":"0.0.0.0/0"}}`, req("", ctx("aws:sourceip", "not-an-ip")), NotApplicable},
		{"IpAddress missing", `{"IpAddress":{"aws:SourceIp":"0.0.0.0/0"}}`, req("", nil), NotApplicable},
		{"NotIpAddress inside", `{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, req("", ctx("aws:sourceip", "10.0.0.1")), NotApplicable},
		{"NotIpAddress outside", `{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, req("", ctx("aws:sourceip", "8.8.8.8")), Allow},
		{"NotIpAddress missing", `{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, req("", nil), Allow},
		{"Bool true", `{"Bool":{"aws:SecureTransport":true}}`, req("", ctx("aws:securetransport", "true")), Allow},
		{"Bool string", `{"Bool":{"aws:SecureTransport":"TRUE"}}`, req("", ctx("aws:securetransport", "True")), Allow},
		{"Bool false", `{"Bool":{"aws:SecureTransport":"true"}}`, req("", ctx("aws:securetransport", "false")), NotApplicable},
		{"Bool missing", `{"Bool":{"aws:SecureTransport":"false"}}`, req("", nil), NotApplicable},
		{"IfExists missing", `{"StringEqualsIfExists":{"s3:prefix":"a"}}`, req("", nil), Allow},
		{"IfExists present", `{"StringEqualsIfExists":{"s3:prefix":"a"}}`, req("", ctx("s3:prefix", "b")), NotApplicable},
		{"IfExists negated missing", `{"NotIpAddressIfExists":{"aws:SourceIp":"0.0.0.0/0"}}`, req("", nil), Allow},
		{"IfExists bool missing", `{"BoolIfExists":{"aws:SecureTransport":"true"}}`, req("", nil), Allow},
		{"keys ANDed", `{"StringEquals":{"a":"1","b":"2"}}`, req("", ctx("a", "1", "b", "2")), Allow},
		{"keys ANDed, one fails", `{"StringEquals":{"a":"1","b":"2"}}`, req("", ctx("a", "1", "b", "3")), NotApplicable},
		{"keys ANDed, one missing", `{"StringEquals":{"a":"1","b":"2"}}`, req("", ctx("a", "1")), NotApplicable},
		{"operators ANDed", `{"StringEquals":{"a":"1"},"Bool":{"b":"true"}}`, req("", ctx("a", "1", "b", "true")), Allow},
		{"operators ANDed, one fails", `{"StringEquals":{"a":"1"},"Bool":{"b":"true"}}`, req("", ctx("a", "1", "b", "false")), NotApplicable},
		{"policy keys case-insensitive", `{"StringEquals":{"AWS:UserAgent":"x"}}`, req("", ctx("aws:useragent", "x")), Allow},
		{"context keys lower-cased", `{"StringEquals":{"aws:useragent":"x"}}`, req("", ctx("AWS:UserAgent", "x")), Allow},
	}
	for _, tt := range tests {
		if got := cond(tt.cond).Evaluate(tt.r); got != tt.want {
			t.Errorf("%s: %s with %+v = %v, want %v", tt.name, tt.cond, tt.r, got, tt.want)
		}
	}
}

func TestEvaluateDenyConditions(t *testing.T) {
	// The classic "deny unless from the office and over TLS" guard: a missing
	// key must make the deny apply.
	p := mustParse(t, Identity, stmt(
		`{"Effect":"Allow","Action":"*","Resource":"*"}`,
		`{"Effect":"Deny","Action":"*","Resource":"*","Condition":{"NotIpAddress":{"aws:SourceIp":["10.0.0.0/8","fd00::/8"]}}}`,
		`{"Effect":"Deny","Action":"*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}`,
	))
	runEval(t, []*Policy{p}, []evalCase{
		{"office over TLS", Request{Action: "obs:GetObject", Resource: "obs:::b/k", Context: ctx("aws:sourceip", "10.2.3.4", "aws:securetransport", "true")}, Allow},
		{"office v6", Request{Action: "obs:GetObject", Resource: "obs:::b/k", Context: ctx("aws:sourceip", "fd12::1", "aws:securetransport", "true")}, Allow},
		{"outside", Request{Action: "obs:GetObject", Resource: "obs:::b/k", Context: ctx("aws:sourceip", "8.8.8.8", "aws:securetransport", "true")}, Deny},
		{"no source ip", Request{Action: "obs:GetObject", Resource: "obs:::b/k", Context: ctx("aws:securetransport", "true")}, Deny},
		{"plain HTTP", Request{Action: "obs:GetObject", Resource: "obs:::b/k", Context: ctx("aws:sourceip", "10.2.3.4", "aws:securetransport", "false")}, Deny},
	})
}

func TestEvaluatePrincipals(t *testing.T) {
	p := mustParse(t, Resource, stmt(
		`{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::123456789012:user/alice"],"ID":"domain/d1:user/bob","Atelier":["user/carol"]},"Action":"s3:*","Resource":"arn:aws:s3:::shared/*"}`,
		`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::shared/public/*"}`,
		`{"Effect":"Deny","NotPrincipal":{"AWS":"alice"},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::shared/*"}`,
	))
	runEval(t, []*Policy{p}, []evalCase{
		{"AWS ARN principal", Request{Principal: "alice", Action: "obs:PutObject", Resource: "obs:::shared/a"}, Allow},
		{"OBS ID principal", Request{Principal: "bob", Action: "obs:PutObject", Resource: "obs:::shared/a"}, Allow},
		{"Atelier principal", Request{Principal: "carol", Action: "obs:PutObject", Resource: "obs:::shared/a"}, Allow},
		{"other user", Request{Principal: "dave", Action: "obs:PutObject", Resource: "obs:::shared/a"}, NotApplicable},
		{"principal case-sensitive", Request{Principal: "Alice", Action: "obs:PutObject", Resource: "obs:::shared/a"}, NotApplicable},
		{"anonymous", Request{Action: "obs:PutObject", Resource: "obs:::shared/a"}, NotApplicable},
		{"anonymous public read", Request{Action: "obs:GetObject", Resource: "obs:::shared/public/a"}, Allow},
		{"user public read", Request{Principal: "dave", Action: "obs:GetObject", Resource: "obs:::shared/public/a"}, Allow},
		{"NotPrincipal excludes alice", Request{Principal: "alice", Action: "obs:DeleteObject", Resource: "obs:::shared/a"}, Allow},
		{"NotPrincipal denies bob", Request{Principal: "bob", Action: "obs:DeleteObject", Resource: "obs:::shared/a"}, Deny},
		{"NotPrincipal denies anonymous", Request{Action: "obs:DeleteObject", Resource: "obs:::shared/a"}, Deny},
	})

	// A principal named "*" in a request is no wildcard.
	named := mustParse(t, Resource, stmt(`{"Effect":"Allow","Principal":{"AWS":"alice"},"Action":"*","Resource":"*"}`))
	runEval(t, []*Policy{named}, []evalCase{
		{"star user", Request{Principal: "*", Action: "obs:GetObject", Resource: "obs:::b/k"}, NotApplicable},
	})

	// Identity policies ignore the principal.
	ident := mustParse(t, Identity, stmt(`{"Effect":"Allow","Action":"*","Resource":"*"}`))
	runEval(t, []*Policy{ident}, []evalCase{
		{"identity policy, anonymous", Request{Action: "obs:GetObject", Resource: "obs:::b/k"}, Allow},
	})
}

func TestEvaluatePolicyVariables(t *testing.T) {
	p := mustParse(t, Identity, stmt(
		`{"Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::home/${aws:username}/*","obs:::u-${atelier:username}"]}`,
		`{"Effect":"Allow","Action":"s3:GetObject","Resource":"obs:::lit/${*}${?}${$}"}`,
	))
	runEval(t, []*Policy{p}, []evalCase{
		{"own home", Request{Principal: "bob", Action: "obs:PutObject", Resource: "obs:::home/bob/x"}, Allow},
		{"other home", Request{Principal: "bob", Action: "obs:PutObject", Resource: "obs:::home/alice/x"}, NotApplicable},
		{"prefix of the name", Request{Principal: "bo", Action: "obs:PutObject", Resource: "obs:::home/bob/x"}, NotApplicable},
		{"anonymous", Request{Action: "obs:PutObject", Resource: "obs:::home//x"}, NotApplicable},
		{"atelier variable", Request{Principal: "bob", Action: "obs:ListBucket", Resource: "obs:::u-bob"}, Allow},
		{"no wildcard injection", Request{Principal: "b*", Action: "obs:PutObject", Resource: "obs:::home/bob/x"}, NotApplicable},
		{"literal star user", Request{Principal: "b*", Action: "obs:PutObject", Resource: "obs:::home/b*/x"}, Allow},
		{"escaped literals", Request{Action: "obs:GetObject", Resource: "obs:::lit/*?$"}, Allow},
		{"escaped star is literal", Request{Action: "obs:GetObject", Resource: "obs:::lit/x?$"}, NotApplicable},
	})
}

func TestEvaluateSeveralPolicies(t *testing.T) {
	allow := mustParse(t, Identity, stmt(`{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`))
	deny := mustParse(t, Identity, stmt(`{"Effect":"Deny","Action":"s3:DeleteObject","Resource":"*"}`))
	other := mustParse(t, Identity, stmt(`{"Effect":"Allow","Action":"atelier:job:*","Resource":"*"}`))
	tests := []struct {
		name string
		ps   []*Policy
		r    Request
		want Decision
	}{
		{"none", nil, Request{Action: "obs:GetObject", Resource: "obs:::b/k"}, NotApplicable},
		{"nil skipped", []*Policy{nil, allow}, Request{Action: "obs:GetObject", Resource: "obs:::b/k"}, Allow},
		{"deny in another policy wins", []*Policy{allow, deny}, Request{Action: "obs:DeleteObject", Resource: "obs:::b/k"}, Deny},
		{"deny first", []*Policy{deny, allow}, Request{Action: "obs:DeleteObject", Resource: "obs:::b/k"}, Deny},
		{"allow from any policy", []*Policy{other, deny, allow}, Request{Action: "obs:PutObject", Resource: "obs:::b/k"}, Allow},
		{"nothing applies", []*Policy{other, deny}, Request{Action: "obs:PutObject", Resource: "obs:::b/k"}, NotApplicable},
	}
	for _, tt := range tests {
		if got := Evaluate(tt.ps, tt.r); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestEvaluateDoesNotModifyContext(t *testing.T) {
	p := mustParse(t, Identity, stmt(`{"Effect":"Allow","Action":"*","Condition":{"StringEquals":{"k":"v"}}}`))
	c := map[string][]string{"K": {"v"}}
	if got := p.Evaluate(Request{Action: "obs:GetObject", Resource: "obs:::b/k", Context: c}); got != Allow {
		t.Fatalf("got %v", got)
	}
	if _, ok := c["k"]; ok || len(c) != 1 {
		t.Errorf("Evaluate modified the caller's context: %v", c)
	}
}
