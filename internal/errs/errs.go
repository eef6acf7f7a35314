package errs

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Kind classifies an error. The zero Kind is Other.
type Kind uint8

// Kinds of error. Add new kinds at the end; the order is not persisted.
const (
	Other            Kind = iota // unclassified
	Invalid                      // bad input from the caller
	NotFound                     // the thing does not exist (or is not visible to the caller)
	Exists                       // the thing already exists
	Conflict                     // the request conflicts with the current state
	Unauthenticated              // no, wrong, expired or revoked credentials
	PermissionDenied             // authenticated but not allowed
	TooLarge                     // a body or a value exceeds a limit
	Unavailable                  // a dependency (store, network peer) does not answer
	Internal                     // a bug or an impossible state
	Unsupported                  // a valid request for something not offered
	IO                           // a disk or network read or write failed
	NoSpace                      // the server's storage is full (or down to its reserve)
)

var kindNames = [...]string{
	Other:            "other",
	Invalid:          "invalid",
	NotFound:         "not found",
	Exists:           "already exists",
	Conflict:         "conflict",
	Unauthenticated:  "unauthenticated",
	PermissionDenied: "permission denied",
	TooLarge:         "too large",
	Unavailable:      "unavailable",
	Internal:         "internal error",
	Unsupported:      "unsupported",
	IO:               "I/O error",
	NoSpace:          "server storage is full",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// HTTPStatus is the status a REST front end answers for an error of kind k.
func (k Kind) HTTPStatus() int {
	switch k {
	case Invalid:
		return http.StatusBadRequest
	case NotFound:
		return http.StatusNotFound
	case Exists, Conflict:
		return http.StatusConflict
	case Unauthenticated:
		return http.StatusUnauthorized
	case PermissionDenied:
		return http.StatusForbidden
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case Unavailable:
		return http.StatusServiceUnavailable
	case Unsupported:
		return http.StatusNotImplemented
	case NoSpace:
		return http.StatusInsufficientStorage
	default:
		return http.StatusInternalServerError
	}
}

// Op names the operation that failed, e.g. "auth.CreateUser".
type Op string

// Code is a stable, documented error code: "ATL.<AREA>.<NNNN>".
type Code string

// Hint tells the user what to do about the error.
type Hint string

// Error is Atelier's error value.
type Error struct {
	Op   Op
	Kind Kind
	Code Code
	Msg  string // the user-facing message; empty means "use Err's text"
	Hint Hint
	Err  error // the underlying error, if any
}

// E builds an *Error. Arguments are recognised by type: Op, Kind, Code, Hint,
// string (the message), error (the cause). When the cause is an *Error and no
// kind, code or hint is given, they are inherited from it.
func E(op Op, args ...any) error {
	e := &Error{Op: op}
	for _, a := range args {
		switch a := a.(type) {
		case Kind:
			e.Kind = a
		case Code:
			e.Code = a
		case Hint:
			e.Hint = a
		case string:
			e.Msg = a
		case *Error:
			e.Err = a
		case error:
			e.Err = a
		case nil:
		default:
			panic(fmt.Sprintf("errs.E: bad argument of type %T", a))
		}
	}
	var prev *Error
	if errors.As(e.Err, &prev) {
		if e.Kind == Other {
			e.Kind = prev.Kind
		}
		if e.Code == "" {
			e.Code = prev.Code
		}
		if e.Hint == "" {
			e.Hint = prev.Hint
		}
	}
	return e
}

// Errorf is E with a formatted message.
func Errorf(op Op, kind Kind, code Code, format string, args ...any) error {
	return E(op, kind, code, fmt.Sprintf(format, args...))
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(string(e.Op))
		b.WriteString(": ")
	}
	switch {
	case e.Msg != "":
		b.WriteString(e.Msg)
		if e.Err != nil {
			b.WriteString(": ")
			b.WriteString(e.Err.Error())
		}
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString(e.Kind.String())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// UserMessage is the message shown to a user: the outermost message and the
// messages of wrapped *Errors, joined by ": ", without operation names and
// without the text of foreign causes (which may carry internal detail). It is
// "" when no *Error in the chain has a message; a plain error that is not an
// *Error at all is shown as is.
func UserMessage(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	var parts []string
	for err != nil {
		if !errors.As(err, &e) {
			break
		}
		if e.Msg != "" {
			parts = append(parts, e.Msg)
		}
		err = e.Err
	}
	return strings.Join(parts, ": ")
}

// KindOf is the kind of the outermost *Error with a kind, or Other.
func KindOf(err error) Kind {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return Other
		}
		if e.Kind != Other {
			return e.Kind
		}
		err = e.Err
	}
	return Other
}

// Is reports whether err has kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// CodeOf is the code of the outermost *Error with a code, or "".
func CodeOf(err error) Code {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Code != "" {
			return e.Code
		}
		err = e.Err
	}
	return ""
}

// HintOf is the hint of the outermost *Error with a hint, or "".
func HintOf(err error) Hint {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}
