package policy

import (
	"reflect"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, tt := range append(validParseCases(), errorParseCases()...) {
		kind := tt.kind
		if kind == 0 {
			kind = Identity
		}
		f.Add([]byte(tt.doc), kind == Resource)
	}
	f.Fuzz(func(t *testing.T, doc []byte, resource bool) {
		kind := Identity
		if resource {
			kind = Resource
		}
		p, err := Parse(doc, kind)
		if err != nil {
			return
		}
		canon, err := p.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		q, err := Parse(canon, kind)
		if err != nil {
			t.Fatalf("the canonical form does not parse: %v\n%s", err, canon)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("Parse(MarshalJSON(p)) != p\ncanonical: %s", canon)
		}
		again, err := q.MarshalJSON()
		if err != nil || string(again) != string(canon) {
			t.Fatalf("the canonical form is not stable:\n%s\n%s", canon, again)
		}
		p.Evaluate(Request{Principal: "u", Action: "obs:GetObject", Resource: "obs:::b/k",
			Context: map[string][]string{"aws:sourceip": {"10.0.0.1"}, "s3:prefix": {"p"}}})
	})
}
