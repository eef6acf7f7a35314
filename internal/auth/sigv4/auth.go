package sigv4

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// credential is the value of Credential= or X-Amz-Credential:
// "<access key>/<date>/<region>/<service>/aws4_request".
type credential struct {
	accessKey  string
	date       string
	region     string
	service    string
	terminator string
}

func (c credential) scope() string {
	return c.date + "/" + c.region + "/" + c.service + "/" + c.terminator
}

func (c credential) String() string { return c.accessKey + "/" + c.scope() }

// parseCredential splits a credential. The access key is everything before
// the last four parts; their contents are checked later, against the
// request.
func parseCredential(s string) (credential, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 5 {
		return credential{}, fmt.Errorf("credential %q has %d parts; want <access key>/<YYYYMMDD>/<region>/<service>/aws4_request", s, len(parts))
	}
	n := len(parts)
	c := credential{
		accessKey:  strings.Join(parts[:n-4], "/"),
		date:       parts[n-4],
		region:     parts[n-3],
		service:    parts[n-2],
		terminator: parts[n-1],
	}
	if c.accessKey == "" {
		return credential{}, fmt.Errorf("credential %q has no access key", s)
	}
	return c, nil
}

// parseSignedHeaders splits "host;x-amz-date" into lower-case names.
func parseSignedHeaders(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("the SignedHeaders list is empty")
	}
	names := strings.Split(strings.ToLower(s), ";")
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, " \t:") {
			return nil, fmt.Errorf("the SignedHeaders list %q has an invalid header name %q", s, n)
		}
		if seen[n] {
			return nil, fmt.Errorf("the SignedHeaders list %q names %q twice", s, n)
		}
		seen[n] = true
	}
	return names, nil
}

// parseSignature decodes a hex signature of 32 bytes.
func parseSignature(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("the signature is not 64 hex digits")
	}
	return b, nil
}

// authorization is a parsed Authorization header.
type authorization struct {
	cred          credential
	signedHeaders []string
	signature     string // lower-case hex
}

// String formats a as the Authorization header, exactly as AWS SDKs do.
func (a authorization) String() string {
	return algorithm + " Credential=" + a.cred.String() +
		", SignedHeaders=" + strings.Join(a.signedHeaders, ";") +
		", Signature=" + a.signature
}

// parseAuthorization parses "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…,
// Signature=…". It tolerates the variations real clients send: any order,
// commas with or without spaces, extra spaces, and parameter names in any
// case. The returned error says what is wrong, for the client.
func parseAuthorization(h string) (authorization, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(h), algorithm)
	if !ok || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return authorization{}, fmt.Errorf("the Authorization header does not start with %s", algorithm)
	}
	fields, err := authFields(rest)
	if err != nil {
		return authorization{}, err
	}
	var a authorization
	if a.cred, err = parseCredential(fields["credential"]); err != nil {
		return authorization{}, err
	}
	if a.signedHeaders, err = parseSignedHeaders(fields["signedheaders"]); err != nil {
		return authorization{}, err
	}
	if _, err := parseSignature(fields["signature"]); err != nil {
		return authorization{}, err
	}
	a.signature = strings.ToLower(fields["signature"])
	return a, nil
}

// authFields splits the "Name=value" parameters of an Authorization header
// into a map keyed by lower-case name, requiring Credential, SignedHeaders
// and Signature exactly once each.
func authFields(s string) (map[string]string, error) {
	fields := map[string]string{}
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	for _, part := range parts {
		name, value, ok := strings.Cut(part, "=")
		key := strings.ToLower(name)
		switch {
		case !ok:
			return nil, fmt.Errorf("the Authorization header has %q where Name=value is expected", part)
		case key != "credential" && key != "signedheaders" && key != "signature":
			return nil, fmt.Errorf("the Authorization header has an unknown parameter %q", name)
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("the Authorization header repeats %s", name)
		}
		fields[key] = value
	}
	for _, want := range []string{"Credential", "SignedHeaders", "Signature"} {
		if _, ok := fields[strings.ToLower(want)]; !ok {
			return nil, fmt.Errorf("the Authorization header has no %s", want)
		}
	}
	return fields, nil
}
