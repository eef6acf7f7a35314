package errs

import (
	"errors"
	"io"
	"net/http"
	"testing"
)

func TestE(t *testing.T) {
	base := E("meta.GetUser", NotFound, "no such user")
	wrapped := E("auth.GetUser", Code("ATL.IAM.0004"), Hint("list users with `atelier user list`"), `user "bob" not found`, base)
	tests := []struct {
		name string
		err  error
		kind Kind
		code Code
		hint Hint
		msg  string
		text string
	}{
		{"plain", base, NotFound, "", "", "no such user", "meta.GetUser: no such user"},
		{"wrapped inherits kind", wrapped, NotFound, "ATL.IAM.0004", "list users with `atelier user list`",
			`user "bob" not found: no such user`, `auth.GetUser: user "bob" not found: meta.GetUser: no such user`},
		{"foreign cause hidden from users", E("x", Internal, "reading config", io.ErrUnexpectedEOF), Internal, "", "",
			"reading config", "x: reading config: unexpected EOF"},
		{"foreign cause alone is not shown", E("x", io.EOF), Other, "", "", "", "x: EOF"},
		{"plain error", io.EOF, Other, "", "", "EOF", "EOF"},
		{"kind only", E("x", Conflict), Conflict, "", "", "", "x: conflict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KindOf(tt.err); got != tt.kind {
				t.Errorf("KindOf = %v, want %v", got, tt.kind)
			}
			if got := CodeOf(tt.err); got != tt.code {
				t.Errorf("CodeOf = %q, want %q", got, tt.code)
			}
			if got := HintOf(tt.err); got != tt.hint {
				t.Errorf("HintOf = %q, want %q", got, tt.hint)
			}
			if got := UserMessage(tt.err); got != tt.msg {
				t.Errorf("UserMessage = %q, want %q", got, tt.msg)
			}
			if got := tt.err.Error(); got != tt.text {
				t.Errorf("Error() = %q, want %q", got, tt.text)
			}
		})
	}
	if !errors.Is(E("y", io.EOF), io.EOF) {
		t.Error("errors.Is does not see through *Error")
	}
	if Is(nil, Other) {
		t.Error("Is(nil, Other) = true")
	}
}

func TestHTTPStatus(t *testing.T) {
	want := map[Kind]int{
		Invalid: 400, NotFound: 404, Exists: 409, Conflict: 409, Unauthenticated: 401,
		PermissionDenied: 403, TooLarge: 413, Unavailable: 503, Internal: 500, Other: 500,
		Unsupported: http.StatusNotImplemented, IO: 500, NoSpace: http.StatusInsufficientStorage,
	}
	for k, s := range want {
		if got := k.HTTPStatus(); got != s {
			t.Errorf("%v.HTTPStatus() = %d, want %d", k, got, s)
		}
	}
}

func TestEPanicsOnBadArg(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an int argument")
		}
	}()
	_ = E("x", 42)
}
