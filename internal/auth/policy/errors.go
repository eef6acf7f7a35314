package policy

import (
	"fmt"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of this package. They are stable: clients and docs refer to them.
const (
	codeSyntax           errs.Code = "ATL.IAM.0101" // the document is not valid JSON
	codeTooLarge         errs.Code = "ATL.IAM.0102" // the document exceeds MaxSize
	codeUnknownField     errs.Code = "ATL.IAM.0103" // a field the grammar does not have
	codeDuplicateKey     errs.Code = "ATL.IAM.0104" // a JSON object repeats a key
	codeVersion          errs.Code = "ATL.IAM.0105" // unsupported Version
	codeNoStatement      errs.Code = "ATL.IAM.0106" // Statement missing or empty
	codeEffect           errs.Code = "ATL.IAM.0107" // Effect is not Allow or Deny
	codeType             errs.Code = "ATL.IAM.0108" // an element has the wrong JSON type
	codeMissing          errs.Code = "ATL.IAM.0109" // a required element is missing, or X and NotX both present
	codeBadAction        errs.Code = "ATL.IAM.0110" // an action is empty or malformed
	codeBadWildcard      errs.Code = "ATL.IAM.0111" // a wildcard or regex character where none is allowed
	codeUnknownService   errs.Code = "ATL.IAM.0112" // a service prefix other than obs, s3 or atelier
	codeBadResource      errs.Code = "ATL.IAM.0113" // a resource is empty or malformed
	codeBadVariable      errs.Code = "ATL.IAM.0114" // an unknown or unterminated policy variable
	codeUnknownOperator  errs.Code = "ATL.IAM.0115" // an unknown condition operator
	codeBadConditionVal  errs.Code = "ATL.IAM.0116" // a condition value that does not fit its operator
	codePrincipalInIdent errs.Code = "ATL.IAM.0117" // Principal in a policy attached to users
	codeNoPrincipal      errs.Code = "ATL.IAM.0118" // a bucket policy statement without Principal
	codeBadPrincipal     errs.Code = "ATL.IAM.0119" // a principal entry that names no user
	codeDuplicateSid     errs.Code = "ATL.IAM.0120" // two statements with one Sid
	codeBadConditionKey  errs.Code = "ATL.IAM.0121" // an empty condition key
)

const (
	opParse             errs.Op = "policy.Parse"
	opNormalizeAction   errs.Op = "policy.NormalizeAction"
	opNormalizeResource errs.Op = "policy.NormalizeResource"
)

// problem is a parse failure. Its path, e.g. "Statement[1].Effect", grows
// as the problem travels up from the element to the document.
type problem struct {
	code errs.Code
	path string
	msg  string
}

func newProblem(code errs.Code, format string, args ...any) *problem {
	return &problem{code: code, msg: fmt.Sprintf(format, args...)}
}

// within prefixes p's path with prefix and returns p.
func (p *problem) within(prefix string) *problem {
	p.path = prefix + p.path
	return p
}

// err turns p into an *errs.Error whose message starts with p's path.
func (p *problem) err(op errs.Op) error {
	msg := p.msg
	if p.path != "" {
		msg = p.path + ": " + msg
	}
	kind := errs.Invalid
	if p.code == codeTooLarge {
		kind = errs.TooLarge
	}
	return errs.E(op, kind, p.code, msg, errs.Hint(hint(p.code)))
}

// hint says what to do about an error with the given code.
func hint(code errs.Code) string {
	switch code {
	case codeSyntax:
		return "check the JSON syntax, e.g. with `python3 -m json.tool policy.json`"
	case codeTooLarge:
		return "split the statements over several policies"
	case codeUnknownField:
		return "a policy has Version, Id and Statement; a statement has Sid, Effect, Principal/NotPrincipal, Action/NotAction, Resource/NotResource and Condition (names are case-sensitive)"
	case codeDuplicateKey:
		return "remove the repeated key; a policy must mean one thing"
	case codeVersion:
		return `use "Version": "2012-10-17" (AWS grammar) or "1.1" (OBS/IAM grammar)`
	case codeNoStatement:
		return `add "Statement": [{"Effect": "Allow", "Action": [...], "Resource": [...]}]`
	case codeEffect:
		return `write "Effect": "Allow" or "Effect": "Deny" (case-sensitive)`
	case codeType:
		return "use a string or an array of strings"
	case codeMissing:
		return "every statement needs Effect and exactly one of Action/NotAction; bucket policies also need Resource/NotResource"
	case codeBadAction:
		return `write actions as "obs:GetObject", "s3:Get*", "obs:object:GetObject", "atelier:job:Create" or "*"`
	case codeBadWildcard:
		return "only '*' and '?' are wildcards, and only in the action or resource name, not in the service or partition"
	case codeUnknownService:
		return "the services are obs (alias s3) and atelier"
	case codeBadResource:
		return `write resources as "obs:::bucket/key*", "arn:aws:s3:::bucket/key*", "obs:*:*:object:bucket/key*", "bucket/key*" (bucket policies), "atelier:::job/ID" or "*"`
	case codeBadVariable:
		return "the variables are ${aws:username} and ${atelier:username}; write ${*}, ${?} or ${$} for a literal '*', '?' or '$'"
	case codeUnknownOperator:
		return "the operators are StringEquals, StringNotEquals, StringEqualsIgnoreCase, StringNotEqualsIgnoreCase, StringLike, StringNotLike, IpAddress, NotIpAddress and Bool, each also with the suffix IfExists"
	case codeBadConditionVal:
		return "IpAddress takes IPs or CIDRs such as 10.0.0.0/8 or 2001:db8::/32; Bool takes true or false; every key needs at least one value"
	case codePrincipalInIdent:
		return "policies attached to users apply to those users; put Principal only in bucket policies"
	case codeNoPrincipal:
		return `add "Principal": {"AWS": ["user/NAME"]} or "Principal": "*" for everyone`
	case codeBadPrincipal:
		return `name users as "*", "NAME", "user/NAME", "arn:aws:iam::ACCOUNT:user/NAME", "domain/ID:user/NAME" or "atelier:user/NAME"`
	case codeDuplicateSid:
		return "give every statement its own Sid"
	case codeBadConditionKey:
		return `name the condition key, e.g. "aws:SourceIp" or "s3:prefix"`
	}
	return ""
}
