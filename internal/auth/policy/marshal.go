package policy

import (
	"bytes"
	"encoding/json"
)

// jsonPolicy and jsonStatement are the canonical JSON form of a policy.
type jsonPolicy struct {
	Version   string          `json:"Version,omitempty"`
	ID        string          `json:"Id,omitempty"`
	Statement []jsonStatement `json:"Statement"`
}

type jsonStatement struct {
	Sid          string                         `json:"Sid,omitempty"`
	Effect       string                         `json:"Effect"`
	Principal    any                            `json:"Principal,omitempty"`
	NotPrincipal any                            `json:"NotPrincipal,omitempty"`
	Action       []string                       `json:"Action,omitempty"`
	NotAction    []string                       `json:"NotAction,omitempty"`
	Resource     []string                       `json:"Resource,omitempty"`
	NotResource  []string                       `json:"NotResource,omitempty"`
	Condition    map[string]map[string][]string `json:"Condition,omitempty"`
}

// MarshalJSON writes p in canonical form: normalised actions and resources,
// lists always as arrays, principals under "Atelier" (or "*"), condition
// keys in lower case. Parse of the result yields a policy equal to p.
func (p *Policy) MarshalJSON() ([]byte, error) {
	if p == nil {
		return []byte("null"), nil
	}
	doc := jsonPolicy{Version: p.version, ID: p.id, Statement: make([]jsonStatement, 0, len(p.statements))}
	for i := range p.statements {
		doc.Statement = append(doc.Statement, p.statements[i].canonical())
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func (s *statement) canonical() jsonStatement {
	j := jsonStatement{Sid: s.sid, Effect: "Allow"}
	if s.deny {
		j.Effect = "Deny"
	}
	if s.principals != nil {
		pr := canonicalPrincipal(s.principals)
		if s.notPrincipal {
			j.NotPrincipal = pr
		} else {
			j.Principal = pr
		}
	}
	if s.notAction {
		j.NotAction = s.actions
	} else {
		j.Action = s.actions
	}
	if s.notResource {
		j.NotResource = s.resources
	} else {
		j.Resource = s.resources
	}
	if len(s.conditions) > 0 {
		j.Condition = map[string]map[string][]string{}
		for _, c := range s.conditions {
			if j.Condition[c.name] == nil {
				j.Condition[c.name] = map[string][]string{}
			}
			j.Condition[c.name][c.key] = c.values
		}
	}
	return j
}

func canonicalPrincipal(entries []string) any {
	if len(entries) == 1 && entries[0] == anyone {
		return anyone
	}
	return map[string][]string{principalAtelier: entries}
}
