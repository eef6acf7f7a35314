package policy

import (
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
)

type normCase struct {
	in   string
	want string    // canonical form, when valid
	code errs.Code // error code, when not
	msg  string    // the user message, when not
}

func actionCases() []normCase {
	return []normCase{
		{in: "*", want: "*"},
		{in: "obs:GetObject", want: "obs:GetObject"},
		{in: "s3:GetObject", want: "obs:GetObject"},
		{in: "S3:getobject", want: "obs:getobject"},
		{in: "OBS:PutObject", want: "obs:PutObject"},
		{in: "obs:object:GetObject", want: "obs:GetObject"},
		{in: "obs:bucket:ListBucket", want: "obs:ListBucket"},
		{in: "obs:Object:GetObject", want: "obs:GetObject"},
		{in: "obs:*:*", want: "obs:*"},
		{in: "obs:object:*", want: "obs:*"},
		{in: "obs:*", want: "obs:*"},
		{in: "s3:*", want: "obs:*"},
		{in: "s3:Get*", want: "obs:Get*"},
		{in: "s3:Get?bject", want: "obs:Get?bject"},
		{in: "GetObject", want: "obs:GetObject"},
		{in: "Get*", want: "obs:Get*"},
		{in: "atelier:*", want: "atelier:*"},
		{in: "atelier:job:*", want: "atelier:job:*"},
		{in: "atelier:user:Create", want: "atelier:user:Create"},
		{in: "Atelier:job:Create", want: "atelier:job:Create"},
		{in: "atelier:*:Get", want: "atelier:*:Get"},
		{in: "atelier:jo*", want: "atelier:jo*"},
		{in: "atelier:model-registry:list_versions.v2", want: "atelier:model-registry:list_versions.v2"},

		{in: "", code: codeBadAction, msg: "empty action"},
		{in: "o*s:GetObject", code: codeBadWildcard, msg: `bad wildcard in action "o*s:GetObject": the service prefix "o*s" cannot contain wildcards`},
		{in: "s3*:Get", code: codeBadWildcard, msg: `bad wildcard in action "s3*:Get": the service prefix "s3*" cannot contain wildcards`},
		{in: "*:GetObject", code: codeBadWildcard, msg: `bad wildcard in action "*:GetObject": the service prefix "*" cannot contain wildcards`},
		{in: "?3:GetObject", code: codeBadWildcard, msg: `bad wildcard in action "?3:GetObject": the service prefix "?3" cannot contain wildcards`},
		{in: "s3:Get[A-Z]*", code: codeBadWildcard, msg: `bad wildcard in action "s3:Get[A-Z]*": '[' is not a wildcard (use * or ?)`},
		{in: "s3:Get.+", code: codeBadWildcard, msg: `bad wildcard in action "s3:Get.+": '+' is not a wildcard (use * or ?)`},
		{in: "s3:(Get|Put)Object", code: codeBadWildcard, msg: `bad wildcard in action "s3:(Get|Put)Object": '(' is not a wildcard (use * or ?)`},
		{in: "^s3:GetObject$", code: codeBadWildcard, msg: `bad wildcard in action "^s3:GetObject$": '^' is not a wildcard (use * or ?)`},
		{in: `s3:Get\w`, code: codeBadWildcard, msg: `bad wildcard in action "s3:Get\\w": '\\' is not a wildcard (use * or ?)`},
		{in: "s3:Get{Object}", code: codeBadWildcard, msg: `bad wildcard in action "s3:Get{Object}": '{' is not a wildcard (use * or ?)`},
		{in: "ecs:CreateServer", code: codeUnknownService, msg: `unknown service "ecs" in action "ecs:CreateServer"`},
		{in: ":GetObject", code: codeUnknownService, msg: `unknown service "" in action ":GetObject"`},
		{in: "modelarts:trainJob:create", code: codeUnknownService, msg: `unknown service "modelarts" in action "modelarts:trainJob:create"`},
		{in: "s3:", code: codeBadAction, msg: `action "s3:" has an empty name`},
		{in: "obs:volume:Get", code: codeBadAction, msg: `action "obs:volume:Get": want obs:<Action> or obs:object|bucket|*:<Action>`},
		{in: "obs:object:a:b", code: codeBadAction, msg: `action "obs:object:a:b": ':' is not allowed in an action name`},
		{in: "s3:Get Object", code: codeBadAction, msg: `action "s3:Get Object": ' ' is not allowed in an action name`},
		{in: "s3:Get/Object", code: codeBadAction, msg: `action "s3:Get/Object": '/' is not allowed in an action name`},
		{in: "atelier:job", code: codeBadAction, msg: `action "atelier:job": want atelier:<area>:<Verb>, e.g. atelier:job:Create or atelier:job:*`},
		{in: "atelier:job:Create:now", code: codeBadAction, msg: `action "atelier:job:Create:now": want atelier:<area>:<Verb>, e.g. atelier:job:Create or atelier:job:*`},
		{in: "atelier::Create", code: codeBadAction, msg: `action "atelier::Create" has an empty name`},
		{in: "atelier:job:", code: codeBadAction, msg: `action "atelier:job:" has an empty name`},
	}
}

func TestNormalizeAction(t *testing.T) {
	for _, tt := range actionCases() {
		got, err := NormalizeAction(tt.in)
		checkNorm(t, "NormalizeAction", tt, got, err)
	}
}

func resourceCases() []normCase {
	return []normCase{
		{in: "*", want: "*"},
		{in: "obs:::b", want: "obs:::b"},
		{in: "obs:::b/p/*", want: "obs:::b/p/*"},
		{in: "obs:::*", want: "obs:::*"},
		{in: "OBS:::b/k", want: "obs:::b/k"},
		{in: "arn:aws:s3:::b/p/*", want: "obs:::b/p/*"},
		{in: "arn:aws:s3:::b", want: "obs:::b"},
		{in: "arn:aws-cn:s3:::b/k", want: "obs:::b/k"},
		{in: "arn:aws:s3:*:*:b/k", want: "obs:::b/k"},
		{in: "arn:aws:obs:::b/k", want: "obs:::b/k"},
		{in: "arn:aws:s3:::b/key:with:colons", want: "obs:::b/key:with:colons"},
		{in: "arn:aws:atelier:::job/42", want: "atelier:::job/42"},
		{in: "obs:*:*:object:b/p/*", want: "obs:::b/p/*"},
		{in: "obs:*:*:object:*", want: "obs:::*"},
		{in: "obs:cn-north-4:0123abc:object:b/k", want: "obs:::b/k"},
		{in: "obs:*:*:bucket:b", want: "obs:::b"},
		{in: "obs:*:*:bucket:*", want: "obs:::*"},
		{in: "obs:*:*:Object:b/k", want: "obs:::b/k"},
		{in: "b/p/*", want: "obs:::b/p/*"},
		{in: "b", want: "obs:::b"},
		{in: "b/key:with:colon", want: "obs:::b/key:with:colon"},
		{in: "*/*", want: "obs:::*/*"},
		{in: "atelier:::job/123", want: "atelier:::job/123"},
		{in: "atelier:::job/*", want: "atelier:::job/*"},
		{in: "atelier:::*", want: "atelier:::*"},
		{in: "obs:::home/${aws:username}/*", want: "obs:::home/${aws:username}/*"},
		{in: "arn:aws:s3:::home/${atelier:username}/*", want: "obs:::home/${atelier:username}/*"},
		{in: "${aws:username}/*", want: "obs:::${aws:username}/*"},
		{in: "obs:::b/${*}${?}${$}", want: "obs:::b/${*}${?}${$}"},
		{in: "obs:::b/(a+b)[1]{2}^$", want: "obs:::b/(a+b)[1]{2}^$"},
		{in: "obs:::b/ключ ü", want: "obs:::b/ключ ü"},

		{in: "", code: codeBadResource, msg: "empty resource"},
		{in: "arn:*:s3:::x", code: codeBadWildcard, msg: `bad wildcard in resource "arn:*:s3:::x": the partition and service of an ARN cannot contain wildcards`},
		{in: "arn:aws:s*:::x", code: codeBadWildcard, msg: `bad wildcard in resource "arn:aws:s*:::x": the partition and service of an ARN cannot contain wildcards`},
		{in: "arn:aws:ec2:::x", code: codeUnknownService, msg: `unknown service "ec2" in resource "arn:aws:ec2:::x"`},
		{in: "arn:aws:s3", code: codeBadResource, msg: `resource "arn:aws:s3": want arn:aws:s3:::<bucket>/<key>`},
		{in: "arn::s3:::b", code: codeBadResource, msg: `resource "arn::s3:::b": "" is not an ARN partition such as aws`},
		{in: "arn:aws:s3:us-east-1:123456789012:accesspoint/x", code: codeBadResource,
			msg: `resource "arn:aws:s3:us-east-1:123456789012:accesspoint/x": bucket and object ARNs have an empty region and account (arn:aws:s3:::<bucket>/<key>)`},
		{in: "arn:aws:s3:::", code: codeBadResource, msg: `resource "arn:aws:s3:::" names no bucket`},
		{in: "obs:::", code: codeBadResource, msg: `resource "obs:::" names no bucket`},
		{in: "obs:::/k", code: codeBadResource, msg: `resource "obs:::/k" names no bucket`},
		{in: "/k", code: codeBadResource, msg: `resource "/k" names no bucket`},
		{in: "obs:*:*:volume:x", code: codeBadResource, msg: `resource "obs:*:*:volume:x": the resource type "volume" is not object or bucket`},
		{in: "obs:*:*:bucket:b/k", code: codeBadResource, msg: `resource "obs:*:*:bucket:b/k": a bucket resource names no object; use obs:*:*:object:b/k`},
		{in: "obs:b", code: codeBadResource, msg: `resource "obs:b": want obs:::<bucket>/<key> or obs:*:*:object:<bucket>/<key>`},
		{in: "atelier:job/1", code: codeBadResource, msg: `resource "atelier:job/1": want atelier:::<type>/<id>`},
		{in: "atelier:::", code: codeBadResource, msg: `resource "atelier:::": want atelier:::<type>/<id>`},
		{in: "atelier:::/1", code: codeBadResource, msg: `resource "atelier:::/1": want atelier:::<type>/<id>`},
		{in: "foo:bar", code: codeUnknownService, msg: `unknown service "foo" in resource "foo:bar"`},
		{in: "o*s:::b", code: codeBadWildcard, msg: `bad wildcard in resource "o*s:::b": the service "o*s" cannot contain wildcards`},
		{in: "obs:::b/${aws:userid}", code: codeBadVariable, msg: `unknown policy variable ${aws:userid} in "obs:::b/${aws:userid}"`},
		{in: "obs:::b/${aws:username", code: codeBadVariable, msg: `unterminated policy variable in "obs:::b/${aws:username"`},
	}
}

func TestNormalizeResource(t *testing.T) {
	for _, tt := range resourceCases() {
		got, err := NormalizeResource(tt.in)
		checkNorm(t, "NormalizeResource", tt, got, err)
	}
}

func checkNorm(t *testing.T, fn string, tt normCase, got string, err error) {
	t.Helper()
	if tt.code == "" {
		if err != nil || got != tt.want {
			t.Errorf("%s(%q) = %q, %v; want %q", fn, tt.in, got, err, tt.want)
			return
		}
		// Canonical forms are fixed points.
		again, err := NormalizeAction(got)
		if fn == "NormalizeResource" {
			again, err = NormalizeResource(got)
		}
		if err != nil || again != got {
			t.Errorf("%s(%q) = %q, %v; want the canonical form unchanged", fn, got, again, err)
		}
		return
	}
	if err == nil {
		t.Errorf("%s(%q) = %q, want error %s", fn, tt.in, got, tt.code)
		return
	}
	if errs.KindOf(err) != errs.Invalid || errs.CodeOf(err) != tt.code || errs.UserMessage(err) != tt.msg {
		t.Errorf("%s(%q): error %v (kind %v, code %s, message %q)\nwant kind invalid, code %s, message %q",
			fn, tt.in, err, errs.KindOf(err), errs.CodeOf(err), errs.UserMessage(err), tt.code, tt.msg)
	}
	if errs.HintOf(err) == "" {
		t.Errorf("%s(%q): error without hint", fn, tt.in)
	}
}

func TestNormalizePrincipal(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"*", "*", true},
		{"alice", "alice", true},
		{"user/alice", "alice", true},
		{"atelier:user/alice", "alice", true},
		{"arn:aws:iam::123456789012:user/alice", "alice", true},
		{"arn:aws:iam::123456789012:user/division/team/alice", "alice", true},
		{"arn:aws:iam:::user/alice", "alice", true},
		{"domain/0a1b2c:user/alice", "alice", true},
		{"domain/*:user/alice", "alice", true},
		{"arn:aws:iam::123456789012:root", "", false},
		{"arn:aws:iam::123456789012:role/r", "", false},
		{"arn:aws:sts::123456789012:assumed-role/r/s", "", false},
		{"domain/0a1b2c", "", false},
		{"user/", "", false},
		{"user/a*", "", false},
		{"user/a b", "", false},
		{"a:b", "", false},
		{"", "", false},
		{"**", "", false},
	}
	for _, tt := range tests {
		got, p := normalizePrincipal(tt.in)
		if (p == nil) != tt.ok || got != tt.want {
			t.Errorf("normalizePrincipal(%q) = %q, %v; want %q, ok=%v", tt.in, got, p, tt.want, tt.ok)
		}
	}
}
