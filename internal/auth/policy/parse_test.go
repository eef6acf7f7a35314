package policy

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
)

type parseCase struct {
	name string
	kind Kind
	doc  string
	want string    // canonical JSON, when valid
	code errs.Code // error code, when not
	msg  string    // user message, when not
}

// stmt wraps statements in a policy document.
func stmt(statements ...string) string {
	return `{"Version":"2012-10-17","Statement":[` + strings.Join(statements, ",") + `]}`
}

func validParseCases() []parseCase {
	return []parseCase{
		{name: "AWS identity policy", kind: Identity,
			doc: `{"Version": "2012-10-17", "Id": "read-data", "Statement": [{"Sid": "Read", "Effect": "Allow",
				"Action": ["s3:GetObject", "s3:ListBucket"], "Resource": ["arn:aws:s3:::data/*", "arn:aws:s3:::data"]}]}`,
			want: `{"Version":"2012-10-17","Id":"read-data","Statement":[{"Sid":"Read","Effect":"Allow","Action":["obs:GetObject","obs:ListBucket"],"Resource":["obs:::data/*","obs:::data"]}]}`},
		{name: "Huawei IAM policy", kind: Identity,
			doc: `{"Version": "1.1", "Statement": [{"Effect": "Allow",
				"Action": ["obs:object:GetObject", "obs:bucket:ListBucket"], "Resource": ["obs:*:*:object:data/*", "obs:*:*:bucket:data"]}]}`,
			want: `{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["obs:GetObject","obs:ListBucket"],"Resource":["obs:::data/*","obs:::data"]}]}`},
		{name: "Huawei IAM without Resource", kind: Identity,
			doc:  `{"Version": "1.1", "Statement": [{"Action": ["obs:*:*"], "Effect": "Allow"}]}`,
			want: `{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["obs:*"],"Resource":["*"]}]}`},
		{name: "version 1 and 2008", kind: Identity,
			doc:  `{"Version": "1", "Statement": {"Effect": "Deny", "Action": "*", "Resource": "*"}}`,
			want: `{"Version":"1","Statement":[{"Effect":"Deny","Action":["*"],"Resource":["*"]}]}`},
		{name: "no version, single statement object", kind: Identity,
			doc:  `{"Statement": {"Effect": "Allow", "NotAction": "s3:Delete*", "NotResource": ["arn:aws:s3:::secret/*"]}}`,
			want: `{"Statement":[{"Effect":"Allow","NotAction":["obs:Delete*"],"NotResource":["obs:::secret/*"]}]}`},
		{name: "platform actions", kind: Identity,
			doc:  stmt(`{"Effect":"Allow","Action":["atelier:job:*","atelier:user:Create","Atelier:*"],"Resource":["atelier:::job/123","atelier:::user/*"]}`),
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["atelier:job:*","atelier:user:Create","atelier:*"],"Resource":["atelier:::job/123","atelier:::user/*"]}]}`},
		{name: "conditions", kind: Identity,
			doc: stmt(`{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::home","Condition":{
				"StringLike":{"s3:prefix":["home/${aws:username}/*",""]},
				"ipaddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32","192.0.2.7"]},
				"Bool":{"aws:SecureTransport":true},
				"StringEqualsIfExists":{"s3:max-keys":12,"aws:UserAgent":"cli"}}}`),
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["obs:ListBucket"],"Resource":["obs:::home"],"Condition":{` +
				`"Bool":{"aws:securetransport":["true"]},` +
				`"IpAddress":{"aws:sourceip":["10.0.0.0/8","2001:db8::/32","192.0.2.7"]},` +
				`"StringEqualsIfExists":{"aws:useragent":["cli"],"s3:max-keys":["12"]},` +
				`"StringLike":{"s3:prefix":["home/${aws:username}/*",""]}}}]}`},
		{name: "every operator", kind: Identity,
			doc: stmt(`{"Effect":"Deny","Action":"*","Condition":{"StringEquals":{"a":"1"},"StringNotEquals":{"a":"1"},
				"StringEqualsIgnoreCase":{"a":"1"},"StringNotEqualsIgnoreCase":{"a":"1"},"StringLike":{"a":"1"},"StringNotLike":{"a":"1"},
				"IpAddress":{"a":"::1"},"NotIpAddress":{"a":"::/0"},"Bool":{"a":"False"},"BoolIfExists":{"b":"true"},"NotIpAddressIfExists":{"b":"0.0.0.0/0"}}}`),
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":["*"],"Resource":["*"],"Condition":{"Bool":{"a":["false"]},"BoolIfExists":{"b":["true"]},` +
				`"IpAddress":{"a":["::1"]},"NotIpAddress":{"a":["::/0"]},"NotIpAddressIfExists":{"b":["0.0.0.0/0"]},` +
				`"StringEquals":{"a":["1"]},"StringEqualsIgnoreCase":{"a":["1"]},"StringLike":{"a":["1"]},"StringNotEquals":{"a":["1"]},` +
				`"StringNotEqualsIgnoreCase":{"a":["1"]},"StringNotLike":{"a":["1"]}}}]}`},
		{name: "OBS bucket policy", kind: Resource,
			doc: `{"Statement": [{"Sid": "s1", "Effect": "Allow", "Principal": {"ID": ["domain/0a1b:user/alice", "*"]},
				"Action": ["GetObject", "PutObject"], "Resource": ["data/*", "data"]}]}`,
			want: `{"Statement":[{"Sid":"s1","Effect":"Allow","Principal":{"Atelier":["alice","*"]},"Action":["obs:GetObject","obs:PutObject"],"Resource":["obs:::data/*","obs:::data"]}]}`},
		{name: "AWS public-read bucket policy", kind: Resource,
			doc:  `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pub/*"}]}`,
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["obs:GetObject"],"Resource":["obs:::pub/*"]}]}`},
		{name: "AWS principals", kind: Resource,
			doc: stmt(`{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::123456789012:user/alice","user/bob"],"Atelier":"atelier:user/carol"},
				"Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`, `{"Effect":"Deny","NotPrincipal":{"AWS":"*"},"Action":"s3:*","Resource":"arn:aws:s3:::b/*"}`),
			want: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Atelier":["alice","bob","carol"]},"Action":["obs:*"],"Resource":["obs:::b/*"]},` +
				`{"Effect":"Deny","NotPrincipal":"*","Action":["obs:*"],"Resource":["obs:::b/*"]}]}`},
		{name: "HTML characters are not escaped", kind: Identity,
			doc:  stmt(`{"Sid":"<a&b>","Effect":"Allow","Action":"*","Resource":"obs:::b/<&>"}`),
			want: `{"Version":"2012-10-17","Statement":[{"Sid":"<a&b>","Effect":"Allow","Action":["*"],"Resource":["obs:::b/<&>"]}]}`},
	}
}

func errorParseCases() []parseCase {
	allow := `"Effect":"Allow","Action":"s3:GetObject","Resource":"*"`
	return []parseCase{
		{name: "empty", doc: ``, code: codeSyntax, msg: "the policy is empty"},
		{name: "blank", doc: " \n", code: codeSyntax, msg: "the policy is empty"},
		{name: "truncated", doc: `{"Statement":[`, code: codeSyntax, msg: "the policy is not valid JSON: unexpected end of input"},
		{name: "syntax", doc: `{"Statement" [}`, code: codeSyntax, msg: "the policy is not valid JSON: invalid character '[' after object key (at byte 13)"},
		{name: "array", doc: `[]`, code: codeType, msg: "the policy must be a JSON object"},
		{name: "null", doc: `null`, code: codeType, msg: "the policy must be a JSON object"},
		{name: "trailing data", doc: stmt(`{`+allow+`}`) + `{}`, code: codeSyntax, msg: "unexpected data after the policy at byte 97"},
		{name: "duplicate top-level key", doc: `{"Statement":[],"Statement":[{` + allow + `}]}`, code: codeDuplicateKey, msg: `duplicate key "Statement" at byte 27`},
		{name: "duplicate statement key", doc: stmt(`{` + allow + `,"Effect":"Deny"}`), code: codeDuplicateKey, msg: `duplicate key "Effect" at byte 102`},
		{name: "too large", doc: stmt(`{` + allow + `,"Sid":"` + strings.Repeat("x", MaxSize) + `"}`), code: codeTooLarge,
			msg: "the policy is 20585 bytes; the limit is 20480"},
		{name: "bad version", doc: `{"Version":"2020-01-01","Statement":[{` + allow + `}]}`, code: codeVersion,
			msg: `Version: "2020-01-01" is not a supported version (2012-10-17, 2008-10-17, 1.1, 1)`},
		{name: "empty version", doc: `{"Version":"","Statement":[{` + allow + `}]}`, code: codeVersion,
			msg: `Version: "" is not a supported version (2012-10-17, 2008-10-17, 1.1, 1)`},
		{name: "numeric version", doc: `{"Version":1.1,"Statement":[{` + allow + `}]}`, code: codeType, msg: "Version: must be a string"},
		{name: "lower-case field", doc: `{"version":"1.1","Statement":[{` + allow + `}]}`, code: codeUnknownField,
			msg: `version: unknown field (did you mean "Version"?)`},
		{name: "unknown field", doc: `{"Foo":1,"Statement":[{` + allow + `}]}`, code: codeUnknownField, msg: "Foo: unknown field"},
		{name: "no statement", doc: `{"Version":"1.1"}`, code: codeNoStatement, msg: "the policy has no Statement"},
		{name: "empty statement list", doc: `{"Statement":[]}`, code: codeNoStatement, msg: "Statement: the policy has no statements"},
		{name: "statement not an object", doc: `{"Statement":["x"]}`, code: codeType, msg: "Statement[0]: a statement must be a JSON object"},
		{name: "statement number", doc: `{"Statement":5}`, code: codeType, msg: "Statement[0]: a statement must be a JSON object"},
		{name: "bad effect", doc: stmt(`{`+allow+`}`, `{"Effect":"Permit","Action":"*"}`), code: codeEffect,
			msg: `Statement[1].Effect: "Permit" is not Allow or Deny`},
		{name: "lower-case effect", doc: stmt(`{"Effect":"allow","Action":"*"}`), code: codeEffect, msg: `Statement[0].Effect: "allow" is not Allow or Deny`},
		{name: "missing effect", doc: stmt(`{"Action":"*"}`), code: codeMissing, msg: "Statement[0]: Effect is missing (Allow or Deny)"},
		{name: "numeric effect", doc: stmt(`{"Effect":1,"Action":"*"}`), code: codeType, msg: "Statement[0].Effect: must be a string"},
		{name: "lower-case statement field", doc: stmt(`{"effect":"Allow","Action":"*"}`), code: codeUnknownField,
			msg: `Statement[0].effect: unknown field (did you mean "Effect"?)`},
		{name: "numeric sid", doc: stmt(`{"Sid":1,` + allow + `}`), code: codeType, msg: "Statement[0].Sid: must be a string"},
		{name: "duplicate sid", doc: stmt(`{"Sid":"a",`+allow+`}`, `{"Sid":"b",`+allow+`}`, `{"Sid":"a",`+allow+`}`), code: codeDuplicateSid,
			msg: `Statement[2].Sid: Sid "a" is already used by Statement[0]`},
		{name: "no action", doc: stmt(`{"Effect":"Allow","Resource":"*"}`), code: codeMissing, msg: "Statement[0]: a statement needs Action or NotAction"},
		{name: "action and not-action", doc: stmt(`{"Effect":"Allow","Action":"*","NotAction":"*"}`), code: codeMissing,
			msg: "Statement[0]: has both Action and NotAction; use one"},
		{name: "numeric action", doc: stmt(`{"Effect":"Allow","Action":5}`), code: codeType, msg: "Statement[0].Action: must be a string or an array of strings"},
		{name: "mixed action list", doc: stmt(`{"Effect":"Allow","Action":["s3:GetObject",5]}`), code: codeType,
			msg: "Statement[0].Action: must be a string or an array of strings"},
		{name: "empty action list", doc: stmt(`{"Effect":"Allow","Action":[]}`), code: codeMissing, msg: "Statement[0].Action: must not be an empty array"},
		{name: "empty action", doc: stmt(`{"Effect":"Allow","Action":["s3:GetObject",""]}`), code: codeBadAction, msg: "Statement[0].Action[1]: empty action"},
		{name: "wildcard service", doc: stmt(`{"Effect":"Allow","Action":"o*s:GetObject"}`), code: codeBadWildcard,
			msg: `Statement[0].Action: bad wildcard in action "o*s:GetObject": the service prefix "o*s" cannot contain wildcards`},
		{name: "regex action", doc: stmt(`{"Effect":"Allow","NotAction":["s3:(Get)*"]}`), code: codeBadWildcard,
			msg: `Statement[0].NotAction[0]: bad wildcard in action "s3:(Get)*": '(' is not a wildcard (use * or ?)`},
		{name: "unknown service", doc: stmt(`{"Effect":"Allow","Action":"ecs:*"}`), code: codeUnknownService,
			msg: `Statement[0].Action: unknown service "ecs" in action "ecs:*"`},
		{name: "resource and not-resource", doc: stmt(`{"Effect":"Allow","Action":"*","Resource":"*","NotResource":"*"}`), code: codeMissing,
			msg: "Statement[0]: has both Resource and NotResource; use one"},
		{name: "empty resource", doc: stmt(`{"Effect":"Allow","Action":"*","Resource":["*",""]}`), code: codeBadResource,
			msg: "Statement[0].Resource[1]: empty resource"},
		{name: "wildcard partition", doc: stmt(`{"Effect":"Allow","Action":"*","Resource":"arn:*:s3:::x"}`), code: codeBadWildcard,
			msg: `Statement[0].Resource: bad wildcard in resource "arn:*:s3:::x": the partition and service of an ARN cannot contain wildcards`},
		{name: "unknown ARN service", doc: stmt(`{"Effect":"Allow","Action":"*","NotResource":"arn:aws:ec2:::x"}`), code: codeUnknownService,
			msg: `Statement[0].NotResource: unknown service "ec2" in resource "arn:aws:ec2:::x"`},
		{name: "unknown variable", doc: stmt(`{"Effect":"Allow","Action":"*","Resource":"obs:::b/${aws:userid}/*"}`), code: codeBadVariable,
			msg: `Statement[0].Resource: unknown policy variable ${aws:userid} in "obs:::b/${aws:userid}/*"`},
		{name: "principal in identity policy", doc: stmt(`{"Effect":"Allow","Principal":"*","Action":"*"}`), code: codePrincipalInIdent,
			msg: "Statement[0].Principal: Principal is only allowed in bucket policies"},
		{name: "not-principal in identity policy", doc: stmt(`{"Effect":"Deny","NotPrincipal":{"AWS":"bob"},"Action":"*"}`), code: codePrincipalInIdent,
			msg: "Statement[0].NotPrincipal: NotPrincipal is only allowed in bucket policies"},
		{name: "unknown operator", doc: stmt(`{` + allow + `,"Condition":{"NumericEquals":{"s3:max-keys":"10"}}}`), code: codeUnknownOperator,
			msg: `Statement[0].Condition.NumericEquals: unknown condition operator "NumericEquals"`},
		{name: "set operator", doc: stmt(`{` + allow + `,"Condition":{"ForAnyValue:StringEquals":{"a":"b"}}}`), code: codeUnknownOperator,
			msg: `Statement[0].Condition.ForAnyValue:StringEquals: unknown condition operator "ForAnyValue:StringEquals"`},
		{name: "bad IPv4", doc: stmt(`{` + allow + `,"Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","10.0.0.300"]}}}`), code: codeBadConditionVal,
			msg: `Statement[0].Condition.IpAddress.aws:SourceIp: IpAddress: "10.0.0.300" is not an IP address or CIDR range`},
		{name: "bad CIDR", doc: stmt(`{` + allow + `,"Condition":{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/33"}}}`), code: codeBadConditionVal,
			msg: `Statement[0].Condition.NotIpAddress.aws:SourceIp: NotIpAddress: "10.0.0.0/33" is not an IP address or CIDR range`},
		{name: "bad IPv6", doc: stmt(`{` + allow + `,"Condition":{"IpAddress":{"aws:SourceIp":"2001:db8::g/32"}}}`), code: codeBadConditionVal,
			msg: `Statement[0].Condition.IpAddress.aws:SourceIp: IpAddress: "2001:db8::g/32" is not an IP address or CIDR range`},
		{name: "IPv6 zone", doc: stmt(`{` + allow + `,"Condition":{"IpAddress":{"aws:SourceIp":"fe80::1%eth0"}}}`), code: codeBadConditionVal,
			msg: `Statement[0].Condition.IpAddress.aws:SourceIp: IpAddress: "fe80::1%eth0" is not an IP address or CIDR range`},
		{name: "bad bool", doc: stmt(`{` + allow + `,"Condition":{"Bool":{"aws:SecureTransport":"yes"}}}`), code: codeBadConditionVal,
			msg: `Statement[0].Condition.Bool.aws:SecureTransport: Bool: "yes" is not true or false`},
		{name: "no values", doc: stmt(`{` + allow + `,"Condition":{"StringEquals":{"s3:prefix":[]}}}`), code: codeBadConditionVal,
			msg: `Statement[0].Condition.StringEquals.s3:prefix: StringEquals "s3:prefix" has no values`},
		{name: "object value", doc: stmt(`{` + allow + `,"Condition":{"StringEquals":{"s3:prefix":{"a":"b"}}}}`), code: codeType,
			msg: "Statement[0].Condition.StringEquals.s3:prefix: must be a string, number or boolean, or an array of them"},
		{name: "null in values", doc: stmt(`{` + allow + `,"Condition":{"StringEquals":{"s3:prefix":["a",null]}}}`), code: codeType,
			msg: "Statement[0].Condition.StringEquals.s3:prefix[1]: must be a string, number or boolean, or an array of them"},
		{name: "empty key", doc: stmt(`{` + allow + `,"Condition":{"StringEquals":{"":"a"}}}`), code: codeBadConditionKey,
			msg: "Statement[0].Condition.StringEquals.: empty condition key"},
		{name: "operator without keys", doc: stmt(`{` + allow + `,"Condition":{"StringEquals":{}}}`), code: codeBadConditionKey,
			msg: "Statement[0].Condition.StringEquals: StringEquals names no condition keys"},
		{name: "condition not an object", doc: stmt(`{` + allow + `,"Condition":"x"}`), code: codeType,
			msg: "Statement[0].Condition: Condition must be a JSON object"},
		{name: "keys equal but for case", doc: stmt(`{` + allow + `,"Condition":{"StringEquals":{"aws:UserName":"a","aws:username":"b"}}}`),
			code: codeDuplicateKey, msg: `Statement[0].Condition.StringEquals: condition key "aws:username" repeats "aws:UserName" (keys are case-insensitive)`},
		{name: "operators equal but for case", doc: stmt(`{` + allow + `,"Condition":{"StringEquals":{"a":"a"},"stringequals":{"b":"b"}}}`),
			code: codeDuplicateKey, msg: `Statement[0].Condition: operator "stringequals" repeats "StringEquals"`},
		{name: "bad variable in condition", doc: stmt(`{` + allow + `,"Condition":{"StringLike":{"s3:prefix":"${aws:SourceIp}/*"}}}`),
			code: codeBadVariable, msg: `Statement[0].Condition.StringLike.s3:prefix: unknown policy variable ${aws:SourceIp} in "${aws:SourceIp}/*"`},

		{name: "bucket policy without principal", kind: Resource, doc: stmt(`{` + allow + `}`), code: codeNoPrincipal,
			msg: "Statement[0]: a bucket policy statement needs Principal or NotPrincipal"},
		{name: "bucket policy without resource", kind: Resource, doc: stmt(`{"Effect":"Allow","Principal":"*","Action":"*"}`), code: codeMissing,
			msg: "Statement[0]: a bucket policy statement needs Resource or NotResource"},
		{name: "principal name as string", kind: Resource, doc: stmt(`{"Effect":"Allow","Principal":"alice",` + allow[len(`"Effect":"Allow",`):] + `}`),
			code: codeBadPrincipal, msg: `Statement[0].Principal: must be "*" or an object such as {"AWS": ["user/NAME"]}`},
		{name: "principal number", kind: Resource, doc: stmt(`{"Effect":"Allow","Principal":5,"Action":"*","Resource":"*"}`),
			code: codeType, msg: `Statement[0].Principal: must be "*" or an object such as {"AWS": ["user/NAME"]}`},
		{name: "principal service", kind: Resource, doc: stmt(`{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"*","Resource":"*"}`),
			code: codeBadPrincipal, msg: `Statement[0].Principal.Service: unknown principal type "Service" (want AWS, ID or Atelier)`},
		{name: "account root principal", kind: Resource, doc: stmt(`{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::123456789012:root"]},"Action":"*","Resource":"*"}`),
			code: codeBadPrincipal, msg: `Statement[0].Principal.AWS[0]: principal "arn:aws:iam::123456789012:root" names no user`},
		{name: "principal wildcard name", kind: Resource, doc: stmt(`{"Effect":"Allow","Principal":{"ID":"user/a*"},"Action":"*","Resource":"*"}`),
			code: codeBadPrincipal, msg: `Statement[0].Principal.ID: principal "user/a*": "a*" is not a user name`},
		{name: "empty principal list", kind: Resource, doc: stmt(`{"Effect":"Allow","Principal":{"AWS":[]},"Action":"*","Resource":"*"}`),
			code: codeMissing, msg: "Statement[0].Principal.AWS: must not be an empty array"},
		{name: "empty principal object", kind: Resource, doc: stmt(`{"Effect":"Allow","Principal":{},"Action":"*","Resource":"*"}`),
			code: codeBadPrincipal, msg: "Statement[0].Principal: names no principals"},
		{name: "principal and not-principal", kind: Resource, doc: stmt(`{"Effect":"Allow","Principal":"*","NotPrincipal":"*","Action":"*","Resource":"*"}`),
			code: codeMissing, msg: "Statement[0]: has both Principal and NotPrincipal; use one"},
	}
}

func TestParse(t *testing.T) {
	for _, tt := range append(validParseCases(), errorParseCases()...) {
		t.Run(tt.name, func(t *testing.T) {
			kind := tt.kind
			if kind == 0 {
				kind = Identity
			}
			p, err := Parse([]byte(tt.doc), kind)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				got, err := p.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tt.want {
					t.Errorf("canonical form\n got %s\nwant %s", got, tt.want)
				}
				if p.Kind() != kind {
					t.Errorf("Kind() = %v, want %v", p.Kind(), kind)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded, want %s %q", tt.code, tt.msg)
			}
			wantKind := errs.Invalid
			if tt.code == codeTooLarge {
				wantKind = errs.TooLarge
			}
			if errs.KindOf(err) != wantKind || errs.CodeOf(err) != tt.code || errs.UserMessage(err) != tt.msg {
				t.Errorf("error %v\n got kind %v, code %s, message %q\nwant kind %v, code %s, message %q",
					err, errs.KindOf(err), errs.CodeOf(err), errs.UserMessage(err), wantKind, tt.code, tt.msg)
			}
			if errs.HintOf(err) == "" {
				t.Errorf("no hint for %s", tt.code)
			}
		})
	}
}

func TestParseUnknownKind(t *testing.T) {
	for _, k := range []Kind{0, 3, -1} {
		if _, err := Parse([]byte(stmt(`{"Effect":"Allow","Action":"*"}`)), k); !errs.Is(err, errs.Internal) {
			t.Errorf("Parse(kind %v) = %v, want an internal error", k, err)
		}
	}
}

func TestParseMaxSize(t *testing.T) {
	base := stmt(`{"Effect":"Allow","Action":"*","Sid":""}`)
	doc := strings.Replace(base, `"Sid":""`, `"Sid":"`+strings.Repeat("x", MaxSize-len(base))+`"`, 1)
	if len(doc) != MaxSize {
		t.Fatalf("test document is %d bytes", len(doc))
	}
	if _, err := Parse([]byte(doc), Identity); err != nil {
		t.Errorf("a document of exactly MaxSize bytes: %v", err)
	}
}

func TestKindAndDecisionStrings(t *testing.T) {
	for v, want := range map[string]string{
		Identity.String(): "identity", Resource.String(): "resource", Kind(9).String(): "Kind(9)",
		NotApplicable.String(): "NotApplicable", Allow.String(): "Allow", Deny.String(): "Deny", Decision(7).String(): "Decision(7)",
	} {
		if v != want {
			t.Errorf("String() = %q, want %q", v, want)
		}
	}
}
