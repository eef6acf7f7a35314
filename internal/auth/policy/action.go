package policy

import "strings"

// Service prefixes of canonical actions and resources.
const (
	svcOBS     = "obs"
	svcS3      = "s3"
	svcAtelier = "atelier"
)

// regexChars are characters people write thinking patterns are regular
// expressions. They are never part of an action name.
const regexChars = `[]{}()|+^$\`

// NormalizeAction returns the canonical form of an action or action
// pattern: "*", "obs:<Name>" or "atelier:<area>:<Verb>". It accepts the
// aliases "s3:<Name>", "obs:object:<Name>", "obs:bucket:<Name>" and, as OBS
// bucket policies write them, a bare "<Name>". The service prefix is
// lower-cased; the rest keeps its case (actions match case-insensitively).
func NormalizeAction(s string) (string, error) {
	a, p := normalizeAction(s)
	if p != nil {
		return "", p.err(opNormalizeAction)
	}
	return a, nil
}

func normalizeAction(s string) (string, *problem) {
	if s == "" {
		return "", newProblem(codeBadAction, "empty action")
	}
	if s == "*" {
		return s, nil
	}
	if i := strings.IndexAny(s, regexChars); i >= 0 {
		return "", newProblem(codeBadWildcard, "bad wildcard in action %q: %q is not a wildcard (use * or ?)", s, s[i])
	}
	svc, name, ok := strings.Cut(s, ":")
	if !ok {
		svc, name = svcOBS, s
	}
	if strings.ContainsAny(svc, "*?") {
		return "", newProblem(codeBadWildcard, "bad wildcard in action %q: the service prefix %q cannot contain wildcards", s, svc)
	}
	switch strings.ToLower(svc) {
	case svcOBS, svcS3:
		return normalizeOBSAction(s, name)
	case svcAtelier:
		return normalizeAtelierAction(s, name)
	}
	return "", newProblem(codeUnknownService, "unknown service %q in action %q", svc, s)
}

// normalizeOBSAction handles the part after "obs:" or "s3:". Huawei IAM
// writes "obs:<type>:<Action>" with the type object, bucket or * (as in its
// "obs:*:*"); the type is dropped, so "obs:object:*" means every OBS action.
func normalizeOBSAction(orig, name string) (string, *problem) {
	if typ, rest, ok := strings.Cut(name, ":"); ok {
		if t := strings.ToLower(typ); t != "object" && t != "bucket" && t != "*" {
			return "", newProblem(codeBadAction, "action %q: want obs:<Action> or obs:object|bucket|*:<Action>", orig)
		}
		name = rest
	}
	if p := checkActionName(orig, name); p != nil {
		return "", p
	}
	return svcOBS + ":" + name, nil
}

// normalizeAtelierAction handles the part after "atelier:": "<area>:<Verb>",
// or a single part with a wildcard ("*", "jo*") that spans both.
func normalizeAtelierAction(orig, rest string) (string, *problem) {
	parts := strings.Split(rest, ":")
	if len(parts) > 2 || len(parts) == 1 && !strings.Contains(rest, "*") {
		return "", newProblem(codeBadAction,
			"action %q: want atelier:<area>:<Verb>, e.g. atelier:job:Create or atelier:job:*", orig)
	}
	for _, part := range parts {
		if p := checkActionName(orig, part); p != nil {
			return "", p
		}
	}
	return svcAtelier + ":" + rest, nil
}

// checkActionName checks one colon-free part of an action.
func checkActionName(orig, name string) *problem {
	if name == "" {
		return newProblem(codeBadAction, "action %q has an empty name", orig)
	}
	for _, r := range name {
		if !isActionRune(r) {
			return newProblem(codeBadAction, "action %q: %q is not allowed in an action name", orig, r)
		}
	}
	return nil
}

func isActionRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("*?-_.", r)
}
