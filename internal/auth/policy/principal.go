package policy

import (
	"encoding/json"
	"strings"
	"unicode"
)

// Principal types a bucket policy may use: {"AWS": …} (AWS grammar),
// {"ID": …} (OBS grammar) and {"Atelier": …}. The entries mean the same under
// each type.
const (
	principalAWS     = "AWS"
	principalID      = "ID"
	principalAtelier = "Atelier"
)

// anyone is the principal entry that matches every request, anonymous ones
// included.
const anyone = "*"

// normalizePrincipal reduces a principal entry to "*" or a user name. It
// accepts "*", "NAME", "user/NAME", "atelier:user/NAME",
// "arn:aws:iam::<account>:user/[<path>/]NAME" and
// "domain/<domain>:user/NAME".
func normalizePrincipal(s string) (string, *problem) {
	if s == anyone {
		return s, nil
	}
	name, ok := principalName(s)
	if !ok {
		return "", newProblem(codeBadPrincipal, "principal %q names no user", s)
	}
	if name == "" || strings.ContainsAny(name, "*?:/") || strings.IndexFunc(name, unicode.IsSpace) >= 0 {
		return "", newProblem(codeBadPrincipal, "principal %q: %q is not a user name", s, name)
	}
	return name, nil
}

// principalName extracts NAME from the accepted forms of a principal entry.
func principalName(s string) (string, bool) {
	switch {
	case strings.HasPrefix(s, "atelier:user/"):
		return strings.TrimPrefix(s, "atelier:user/"), true
	case strings.HasPrefix(s, "user/"):
		return strings.TrimPrefix(s, "user/"), true
	case strings.HasPrefix(s, "arn:"):
		f := strings.SplitN(s, ":", 6)
		if len(f) != 6 || f[2] != "iam" || f[3] != "" || !strings.HasPrefix(f[5], "user/") {
			return "", false
		}
		path := strings.TrimPrefix(f[5], "user/")
		return path[strings.LastIndexByte(path, '/')+1:], true
	case strings.HasPrefix(s, "domain/"):
		_, user, ok := strings.Cut(s, ":")
		if !ok || !strings.HasPrefix(user, "user/") {
			return "", false
		}
		return strings.TrimPrefix(user, "user/"), true
	case !strings.ContainsAny(s, ":/"):
		return s, true
	}
	return "", false
}

// principalMatches reports whether the request's principal (a user name,
// "" when anonymous) is among the normalised entries.
func principalMatches(entries []string, principal string) bool {
	for _, e := range entries {
		if e == anyone || principal != "" && e == principal {
			return true
		}
	}
	return false
}

// parsePrincipals parses "*" or {"AWS"|"ID"|"Atelier": "*" | "NAME" | [...]}.
func parsePrincipals(raw json.RawMessage) ([]string, *problem) {
	if first(raw) == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s != anyone {
			return nil, newProblem(codeBadPrincipal, `must be "*" or an object such as {"AWS": ["user/NAME"]}`)
		}
		return []string{anyone}, nil
	}
	var byType map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byType); err != nil || byType == nil {
		return nil, newProblem(codeType, `must be "*" or an object such as {"AWS": ["user/NAME"]}`)
	}
	if len(byType) == 0 {
		return nil, newProblem(codeBadPrincipal, "names no principals")
	}
	var out []string
	for _, typ := range sortedKeys(byType) {
		if typ != principalAWS && typ != principalID && typ != principalAtelier {
			return nil, newProblem(codeBadPrincipal, "unknown principal type %q (want AWS, ID or Atelier)", typ).within("." + typ)
		}
		entries, isList, p := stringList(byType[typ])
		if p != nil {
			return nil, p.within("." + typ)
		}
		for i, e := range entries {
			name, p := normalizePrincipal(e)
			if p != nil {
				return nil, p.within("." + typ + index(isList, i))
			}
			out = append(out, name)
		}
	}
	return out, nil
}
