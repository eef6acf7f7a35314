package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type size int64

func (s *size) UnmarshalJSON(b []byte) error {
	var str string
	if json.Unmarshal(b, &str) == nil {
		if str != "big" {
			return fmt.Errorf("%q is not a size", str)
		}
		*s = 1 << 30
		return nil
	}
	return json.Unmarshal(b, (*int64)(s))
}

type inner struct {
	URL  string `json:"url"`
	Size size   `json:"size"`
}

type base struct {
	ID string `json:"id"`
}

type doc struct {
	base
	Name     string            `json:"name"`
	BootFile string            `json:"boot_file"`
	Count    int               `json:"count"`
	Items    []inner           `json:"items"`
	Env      map[string]string `json:"env"`
	Sub      *inner            `json:"sub"`
	skipped  int               // unexported: not a field of the document
	Ignored  string            `json:"-"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		in   string
		want string // part of the error; "" for none
		err  func(*Error) bool
	}{
		{in: `{"id":"x","name":"n","count":2,"items":[{"url":"u","size":"big"}],"env":{"A":"1"},"sub":{"url":"s"}}`},
		{in: "  \n", err: func(e *Error) bool { return e.Empty }},
		{in: `{"name":`, err: func(e *Error) bool { return e.Syntax != "" }},
		{in: `{"name":"a"} {"name":"b"}`, err: func(e *Error) bool { return e.Trailing }},
		{in: `{"name":"a"} x`, err: func(e *Error) bool { return e.Trailing }},
		{in: `{"bootFile":"t.py","items":[{"url":"u"},{"uri":"v"}],"zzz":1}`, want: `unknown field "bootFile"`,
			err: func(e *Error) bool {
				return len(e.Unknown) == 3 && e.Unknown[0].Suggest == "boot_file" && e.Unknown[1].Path == "items[1].uri" &&
					e.Unknown[1].Parent == "items[1]" && strings.Join(e.Unknown[1].Known, ",") == "url,size" && e.Unknown[2].Path == "zzz" &&
					strings.Join(e.Unknown[0].Known, ",") == "id,name,boot_file,count,items,env,sub"
			}},
		{in: `{"count":"many"}`, want: `field "count" must be a whole number, not a string`,
			err: func(e *Error) bool { return e.Field == "count" && e.Want == "a whole number" && e.Got == "string" }},
		{in: `{"items":[{"size":"small"}]}`, want: `"small" is not a size`, err: func(e *Error) bool { return e.Refused != nil }},
		{in: `[1,2]`, want: "the document must be a mapping, not an array", err: func(e *Error) bool { return e.Field == "" }},
	}
	for _, tt := range tests {
		var d doc
		err := Decode([]byte(tt.in), &d)
		if tt.err == nil {
			if err != nil || d.ID != "x" || d.Items[0].Size != 1<<30 || d.Sub.URL != "s" || d.skipped != 0 {
				t.Errorf("Decode(%s) = %v, %+v", tt.in, err, d)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || !tt.err(e) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%s) = %#v (%v)", tt.in, err, err)
		}
	}
}

func TestKind(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{{"", "a string"}, {true, "true or false"}, {1, "a whole number"}, {1.5, "a number"},
		{[]int{}, "a list"}, {map[string]int{}, "a mapping"}, {[]byte{}, "a base64 string"}} {
		if got := Kind(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("Kind(%T) = %q, want %q", c.v, got, c.want)
		}
	}
}

// FuzzDecode: a document Decode accepts is one encoding/json decodes into
// the same value with unknown fields refused; what it refuses is an *Error.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"name":"a","items":[{"url":"u"}]}`, `{"x":1}`, `{"count":"1"}`, `[]`, `{"name":`, `{} {}`, `{"items":[{"size":"big"}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d doc
		err := Decode([]byte(s), &d)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Error() == "" {
				t.Fatalf("Decode(%q) = %v, not an *Error", s, err)
			}
			return
		}
		var d2 doc
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d2); err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("Decode(%q) accepted %+v; encoding/json: %+v, %v", s, d, d2, err)
		}
	})
}
