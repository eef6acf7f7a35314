package apiserver

import (
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
)

// TestErrorBody: the REST status follows the error's kind; a full store
// is 507 with its code, message and hint, never a generic 500.
func TestErrorBody(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		code   string
		msg    string
		hint   string
	}{
		{"storage full", errs.E("obs.PutObject", errs.NoSpace, errs.Code("ATL.OBS.0043"), "storing the body: the server's storage is full",
			errs.Hint("delete objects you no longer need")), 507, "ATL.OBS.0043", "storing the body: the server's storage is full", "delete objects you no longer need"},
		{"storage full without a code", errs.E("x", errs.NoSpace), 507, "ATL.API.0507", "server storage is full", ""},
		{"not found", errs.E("x", errs.NotFound, errs.Code("ATL.IAM.0004"), `user "x" not found`), 404, "ATL.IAM.0004", `user "x" not found`, ""},
		{"internal", errs.E("x", errs.Internal, "secret detail"), 500, "ATL.API.0500", "internal server error", "the server log has the details under request id r1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := errorBody(tt.err, "r1")
			if status != tt.status || body.ErrorCode != tt.code || body.ErrorMsg != tt.msg || body.Hint != tt.hint {
				t.Errorf("errorBody = %d %+v; want %d %s %q %q", status, body, tt.status, tt.code, tt.msg, tt.hint)
			}
		})
	}
}
