package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Unknown is a key of a document that its type has no field for.
type Unknown struct {
	Path    string   // e.g. algorithm.inputs[0].remote.obs.url
	Parent  string   // the mapping it is in, e.g. algorithm.inputs[0].remote.obs ("" = the top level)
	Known   []string // the fields that mapping has, in declaration order
	Suggest string   // a known field it probably means, or ""
}

// Error is why a document does not decode into its type; one of its
// groups of fields is set.
type Error struct {
	Empty    bool      // nothing but white space
	Syntax   string    // malformed JSON: what is wrong …
	Offset   int64     // … and at which byte
	Trailing bool      // data after the document
	Unknown  []Unknown // keys the type has no field for, sorted by path
	// A value of the wrong type: Field (a path; "" for the document
	// itself) must be Want (Kind), not Got ("string", "number", …).
	Field, Want, Got string
	// Refused: a value its type's own decoding (an UnmarshalJSON) refused.
	Refused error
}

func (e *Error) Error() string {
	switch {
	case e.Empty:
		return "the document is empty"
	case e.Syntax != "":
		return fmt.Sprintf("malformed JSON at byte %d: %s", e.Offset, e.Syntax)
	case e.Trailing:
		return "data after the JSON document"
	case e.Refused != nil:
		return e.Refused.Error()
	case len(e.Unknown) > 0:
		return fmt.Sprintf("unknown field %q", e.Unknown[0].Path)
	case e.Field == "":
		return fmt.Sprintf("the document must be %s, not %s", e.Want, Article(e.Got))
	}
	return fmt.Sprintf("field %q must be %s, not %s", e.Field, e.Want, Article(e.Got))
}

// Decode decodes the JSON document data into v (a pointer) strictly.
// Errors are *Error values.
func Decode(data []byte, v any) error {
	tree, err := Tree(data)
	if err != nil {
		return err
	}
	return Into(tree, v)
}

// Tree decodes the JSON document data into its tree (numbers as
// json.Number), for a caller that changes it before Into.
func Tree(data []byte) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{Empty: true}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn):
			return nil, &Error{Syntax: strings.TrimPrefix(syn.Error(), "json: "), Offset: syn.Offset}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, &Error{Syntax: "the document ends in the middle of a value", Offset: int64(len(data))}
		}
		return nil, &Error{Syntax: strings.TrimPrefix(err.Error(), "json: ")}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Trailing: true}
	}
	return tree, nil
}

// Into decodes a document's tree into v (a pointer) strictly: unknown keys
// first, then values of the wrong type.
func Into(tree any, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("strictjson.Into: %T is not a pointer", v)
	}
	if u := UnknownFields(tree, t.Elem()); len(u) > 0 {
		return &Error{Unknown: u}
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return fmt.Errorf("strictjson.Into: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &Error{Field: te.Field, Want: Kind(te.Type), Got: te.Value}
		}
		return &Error{Refused: err}
	}
	return nil
}

// UnknownFields lists the keys of tree (a decoded JSON value) that the Go
// type t has no JSON field for, recursively, sorted by path. Values of the
// wrong type are left to Into.
func UnknownFields(tree any, t reflect.Type) []Unknown {
	return unknown(tree, t, "")
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

func unknown(v any, t reflect.Type, at string) []Unknown {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return nil // the type decodes itself
	}
	var out []Unknown
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		fields, order := Fields(t)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			p := join(at, k)
			ft, ok := fields[k]
			if !ok {
				out = append(out, Unknown{Path: p, Parent: at, Known: order, Suggest: suggest(k, order)})
				continue
			}
			out = append(out, unknown(m[k], ft, p)...)
		}
	case reflect.Slice, reflect.Array:
		l, ok := v.([]any)
		if !ok {
			return nil
		}
		for i, e := range l {
			out = append(out, unknown(e, t.Elem(), fmt.Sprintf("%s[%d]", at, i))...)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, unknown(m[k], t.Elem(), join(at, k))...)
		}
	}
	return out
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// Fields maps the JSON names of the struct type t's fields to their types,
// with the names in declaration order (embedded structs' fields inline, as
// encoding/json does).
func Fields(t reflect.Type) (map[string]reflect.Type, []string) {
	fields := map[string]reflect.Type{}
	var order []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := fields[name]; !dup {
				order = append(order, name)
			}
			fields[name] = f.Type
		}
	}
	walk(t)
	return fields, order
}

// suggest is the known field that k probably means: the same name ignoring
// case, "_" and "-" (bootFile, boot-file → boot_file), or "".
func suggest(k string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	for _, f := range known {
		if norm(f) == norm(k) {
			return f
		}
	}
	return ""
}

// Kind names what a JSON value of the Go type t looks like: "a string",
// "true or false", "a whole number", "a number", "a list", "a mapping".
func Kind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Pointer:
		return Kind(t.Elem())
	case reflect.Interface:
		return "a JSON value"
	}
	return "a " + t.Kind().String()
}

// Article puts "a" or "an" before s: "an array", "a string".
func Article(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + s
	}
	return "a " + s
}
