// Package policy parses access policies and evaluates requests against them.
//
// A policy document is JSON in either grammar the platform accepts:
//
//   - the Huawei IAM / OBS grammar: "Version": "1.1", actions such as
//     "obs:object:GetObject" or "obs:GetObject", resources such as
//     "obs:*:*:object:bucket/key*" or, in bucket policies, "bucket/key*",
//     principals as {"ID": ["domain/…:user/NAME"]};
//   - the AWS grammar: "Version": "2012-10-17", actions such as
//     "s3:GetObject", resources such as "arn:aws:s3:::bucket/key*",
//     principals as {"AWS": ["arn:aws:iam::…:user/NAME"]}.
//
// Parse checks a document strictly (unknown fields, duplicate keys, bad
// wildcards, unknown condition operators and malformed IP ranges are errors
// that name the statement and field) and normalises every action and
// resource to one canonical form:
//
//	actions    "*", "obs:<Name>", "atelier:<area>:<Verb>"   (matched case-insensitively)
//	resources  "*", "obs:::<bucket>[/<key>]", "atelier:::<type>/<id>" (matched case-sensitively)
//
// Patterns use "*" (any run of characters, "/" included) and "?" (exactly one
// character). Resources and string conditions may use the policy variables
// ${aws:username} and ${atelier:username}, replaced by the request's
// principal at evaluation, and ${*}, ${?} and ${$} for a literal '*', '?'
// and '$'.
//
// Evaluation is a pure function of the parsed policies and a Request: an
// explicit Deny wins over an Allow, and a request no statement matches is
// NotApplicable (which callers treat as an implicit deny). Who owns what, and
// which users are administrators, is decided by the caller, not here.
package policy
