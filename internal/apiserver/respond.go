package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/strictjson"
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
	var e *strictjson.Error
	if err := strictjson.Decode(body, v); !errors.As(err, &e) {
		return err
	}
	accepted := func(fields []string) errs.Hint { return errs.Hint("accepted fields: " + strings.Join(fields, ", ")) }
	switch {
	case e.Empty:
		_, fields := strictjson.Fields(reflect.TypeOf(v).Elem())
		return errs.E(op, errs.Invalid, CodeEmptyBody, "request body is empty; expected a JSON object", accepted(fields))
	case e.Syntax != "" || e.Trailing:
		msg := "malformed JSON: " + e.Error()
		if e.Trailing {
			msg = "request body has data after the JSON object"
		}
		return errs.E(op, errs.Invalid, CodeMalformedJSON, msg)
	case len(e.Unknown) > 0:
		u := e.Unknown[0]
		msg := fmt.Sprintf("unknown field %q", u.Path)
		if u.Suggest != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", u.Suggest)
		}
		return errs.E(op, errs.Invalid, CodeUnknownField, msg, accepted(u.Known))
	case e.Refused != nil:
		return errs.E(op, errs.Invalid, CodeWrongType, e.Error())
	case e.Field == "":
		return errs.E(op, errs.Invalid, CodeWrongType, "request body must be a JSON object, not "+strictjson.Article(e.Got))
	}
	return errs.E(op, errs.Invalid, CodeWrongType, fmt.Sprintf("field %q must be %s, not %s", e.Field, e.Want, strictjson.Article(e.Got)))
}

// listOptions reads offset and limit from the query.
func listOptions(r *http.Request) (api.ListOptions, error) {
	var o api.ListOptions
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"offset", &o.Offset, api.MaxListOffset}, {"limit", &o.Limit, api.MaxListLimit}} {
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
