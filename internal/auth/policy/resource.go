package policy

import "strings"

// Canonical resource prefixes.
const (
	prefixOBS     = "obs:::"
	prefixAtelier = "atelier:::"
)

// NormalizeResource returns the canonical form of a resource or resource
// pattern: "*", "obs:::<bucket>[/<key>]" or "atelier:::<type>/<id>". It
// accepts "arn:aws:s3:::b/k", the Huawei IAM forms "obs:*:*:object:b/k" and
// "obs:*:*:bucket:b", the OBS bucket-policy short form "b/k" or "b", and
// "arn:aws:atelier:::<type>/<id>". Policy variables are checked but kept.
func NormalizeResource(s string) (string, error) {
	r, p := normalizeResourcePattern(s)
	if p != nil {
		return "", p.err(opNormalizeResource)
	}
	return r, nil
}

// normalizeResourcePattern normalises a resource of a policy, in which
// policy variables are allowed.
func normalizeResourcePattern(s string) (string, *problem) {
	r, p := normalizeResource(s)
	if p != nil {
		return "", p
	}
	if _, p := compileWithVars(r, true); p != nil {
		return "", p
	}
	return r, nil
}

// normalizeResource normalises the form of a resource without looking at
// policy variables, so that it serves both patterns and the literal
// resources of requests.
func normalizeResource(s string) (string, *problem) {
	if s == "" {
		return "", newProblem(codeBadResource, "empty resource")
	}
	if s == "*" {
		return s, nil
	}
	head, _, _ := strings.Cut(stripVariables(s), "/")
	if !strings.Contains(head, ":") {
		// The OBS bucket-policy short form "bucket/key".
		return obsResource(s, s)
	}
	svc, rest, _ := strings.Cut(s, ":")
	switch strings.ToLower(svc) {
	case "arn":
		return normalizeARN(s)
	case svcOBS:
		if strings.HasPrefix(rest, "::") {
			return obsResource(s, rest[2:])
		}
		return normalizeIAMResource(s)
	case svcAtelier:
		if !strings.HasPrefix(rest, "::") {
			return "", newProblem(codeBadResource, "resource %q: want atelier:::<type>/<id>", s)
		}
		return atelierResource(s, rest[2:])
	}
	if strings.ContainsAny(svc, "*?") {
		return "", newProblem(codeBadWildcard, "bad wildcard in resource %q: the service %q cannot contain wildcards", s, svc)
	}
	return "", newProblem(codeUnknownService, "unknown service %q in resource %q", svc, s)
}

// stripVariables removes "${…}" from s, so that the colons inside policy
// variables do not look like the separators of an ARN.
func stripVariables(s string) string {
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return s
		}
		s = s[:i] + s[i+j+1:]
	}
}

// normalizeARN handles "arn:<partition>:<service>:<region>:<account>:<rest>".
func normalizeARN(s string) (string, *problem) {
	f := strings.SplitN(s, ":", 6)
	if len(f) < 6 {
		return "", newProblem(codeBadResource, "resource %q: want arn:aws:s3:::<bucket>/<key>", s)
	}
	partition, svc, region, account, rest := f[1], f[2], f[3], f[4], f[5]
	if strings.ContainsAny(partition, "*?") || strings.ContainsAny(svc, "*?") {
		return "", newProblem(codeBadWildcard, "bad wildcard in resource %q: the partition and service of an ARN cannot contain wildcards", s)
	}
	if !isPartition(partition) {
		return "", newProblem(codeBadResource, "resource %q: %q is not an ARN partition such as aws", s, partition)
	}
	switch strings.ToLower(svc) {
	case svcS3, svcOBS:
		if region != "" && region != "*" || account != "" && account != "*" {
			return "", newProblem(codeBadResource, "resource %q: bucket and object ARNs have an empty region and account (arn:aws:s3:::<bucket>/<key>)", s)
		}
		return obsResource(s, rest)
	case svcAtelier:
		return atelierResource(s, rest)
	}
	return "", newProblem(codeUnknownService, "unknown service %q in resource %q", svc, s)
}

func isPartition(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// normalizeIAMResource handles Huawei IAM's
// "obs:<region>:<account>:object:<bucket>/<key>" and
// "obs:<region>:<account>:bucket:<bucket>".
func normalizeIAMResource(s string) (string, *problem) {
	f := strings.SplitN(s, ":", 5)
	if len(f) < 5 {
		return "", newProblem(codeBadResource, "resource %q: want obs:::<bucket>/<key> or obs:*:*:object:<bucket>/<key>", s)
	}
	typ, rest := strings.ToLower(f[3]), f[4]
	switch typ {
	case "object":
		return obsResource(s, rest)
	case "bucket":
		if strings.Contains(rest, "/") {
			return "", newProblem(codeBadResource, "resource %q: a bucket resource names no object; use obs:*:*:object:%s", s, rest)
		}
		return obsResource(s, rest)
	}
	return "", newProblem(codeBadResource, "resource %q: the resource type %q is not object or bucket", s, f[3])
}

// obsResource builds "obs:::<rest>" after checking that rest names a bucket.
func obsResource(orig, rest string) (string, *problem) {
	bucket, _, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return "", newProblem(codeBadResource, "resource %q names no bucket", orig)
	}
	return prefixOBS + rest, nil
}

// atelierResource builds "atelier:::<rest>".
func atelierResource(orig, rest string) (string, *problem) {
	if typ, _, _ := strings.Cut(rest, "/"); typ == "" {
		return "", newProblem(codeBadResource, "resource %q: want atelier:::<type>/<id>", orig)
	}
	return prefixAtelier + rest, nil
}
