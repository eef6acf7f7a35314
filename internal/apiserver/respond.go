package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Error codes of request handling (ATL.API.NNNN).
const (
	CodeMalformedJSON    errs.Code = "ATL.API.0001"
	CodeUnknownField     errs.Code = "ATL.API.0002"
	CodeWrongType        errs.Code = "ATL.API.0003"
	CodeEmptyBody        errs.Code = "ATL.API.0004"
	CodeBodyTooLarge     errs.Code = "ATL.API.0005"
	CodeNoRoute          errs.Code = "ATL.API.0006"
	CodeMethodNotAllowed errs.Code = "ATL.API.0007"
	CodeBadQuery         errs.Code = "ATL.API.0008"
)

// defaultCode is the code of an error that carries none.
func defaultCode(k errs.Kind) errs.Code {
	return errs.Code(fmt.Sprintf("ATL.API.%04d", k.HTTPStatus()))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error_code":"ATL.API.0500","error_msg":"cannot encode the response"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// errorBody turns err into the API error body and status. Internal errors
// get a generic message: their detail goes to the log, not to the client.
func errorBody(err error, requestID string) (int, api.Error) {
	kind := errs.KindOf(err)
	status := kind.HTTPStatus()
	code := errs.CodeOf(err)
	if code == "" {
		code = defaultCode(kind)
	}
	msg := errs.UserMessage(err)
	if status == http.StatusInternalServerError || msg == "" {
		msg = "internal server error"
		if status != http.StatusInternalServerError {
			msg = kind.String()
		}
	}
	hint := string(errs.HintOf(err))
	if status == http.StatusInternalServerError && hint == "" {
		hint = "the server log has the details under request id " + requestID
	}
	return status, api.Error{ErrorCode: string(code), ErrorMsg: msg, Hint: hint, RequestID: requestID}
}

var unknownFieldRe = regexp.MustCompile(`^json: unknown field "(.*)"$`)

// decodeJSON decodes the request body into v strictly: one JSON object, no
// unknown fields, no trailing data, types as declared.
func decodeJSON(r *http.Request, v any) error {
	const op errs.Op = "apiserver.decodeJSON"
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errs.E(op, errs.TooLarge, CodeBodyTooLarge, fmt.Sprintf("request body is larger than %d bytes", mbe.Limit))
		}
		return errs.E(op, errs.Invalid, CodeMalformedJSON, "cannot read the request body", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errs.E(op, errs.Invalid, CodeEmptyBody, "request body is empty; expected a JSON object",
			errs.Hint("accepted fields: "+fieldList(v)))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(op, err, v)
	}
	if dec.More() {
		return errs.E(op, errs.Invalid, CodeMalformedJSON, "request body has data after the JSON object")
	}
	return nil
}

func jsonError(op errs.Op, err error, v any) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errs.E(op, errs.Invalid, CodeMalformedJSON, fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: ")))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errs.E(op, errs.Invalid, CodeMalformedJSON, "malformed JSON: the body ends in the middle of a value")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return errs.E(op, errs.Invalid, CodeWrongType, fmt.Sprintf("request body must be a JSON object, not %s", article(typ.Value)))
		}
		return errs.E(op, errs.Invalid, CodeWrongType,
			fmt.Sprintf("field %q must be %s, not %s", typ.Field, article(jsonKind(typ.Type)), article(typ.Value)))
	}
	if m := unknownFieldRe.FindStringSubmatch(err.Error()); m != nil {
		return errs.E(op, errs.Invalid, CodeUnknownField, fmt.Sprintf("unknown field %q", m[1]),
			errs.Hint("accepted fields: "+fieldList(v)))
	}
	return errs.E(op, errs.Invalid, CodeMalformedJSON, "malformed JSON: "+strings.TrimPrefix(err.Error(), "json: "))
}

func article(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + s
	}
	return "a " + s
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "JSON value"
		}
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	default:
		return "number"
	}
}

// fieldList lists the JSON field names of the struct v points to.
func fieldList(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "(none)"
	}
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// listOptions reads offset and limit from the query.
func listOptions(r *http.Request) (meta.ListOptions, error) {
	var o meta.ListOptions
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"offset", &o.Offset, 1 << 30}, {"limit", &o.Limit, meta.MaxLimit}} {
		s := r.URL.Query().Get(p.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > p.max {
			return o, errs.E("apiserver.listOptions", errs.Invalid, CodeBadQuery,
				fmt.Sprintf("query parameter %s=%q must be a whole number from 0 to %d", p.name, s, p.max))
		}
		*p.dst = n
	}
	return o, nil
}

func list[T any](items []T, total int) api.List[T] {
	if items == nil {
		items = []T{}
	}
	return api.List[T]{Total: total, Count: len(items), Items: items}
}
