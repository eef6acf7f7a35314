package obs

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
)

// codesInSource lists the ATL.OBS codes errors.go defines.
func codesInSource(t *testing.T) []errs.Code {
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []errs.Code
	for _, m := range regexp.MustCompile(`"(ATL\.OBS\.[0-9]{4})"`).FindAllStringSubmatch(string(src), -1) {
		out = append(out, errs.Code(m[1]))
	}
	if len(out) < 40 {
		t.Fatalf("found only %d codes", len(out))
	}
	return out
}

func TestEveryCodeHasAnS3ErrorAndIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[errs.Code]bool{}
	for _, code := range codesInSource(t) {
		if seen[code] {
			t.Errorf("%s defined twice", code)
		}
		seen[code] = true
		in, ok := infoOf(code)
		if !ok {
			t.Errorf("%s has no row in the table", code)
			continue
		}
		err := fail("op", code, "msg", "")
		s3, status, ok := S3Error(err)
		if !ok || s3 != in.s3 || status != in.status || errs.KindOf(err) != in.kind {
			t.Errorf("%s: S3Error = %s %d %v, kind %v", code, s3, status, ok, errs.KindOf(err))
		}
		row := regexp.MustCompile(`\| ` + regexp.QuoteMeta(string(code)) + ` \| ([0-9]+) \| ` + "`" + `([A-Za-z]+)` + "`")
		m := row.FindStringSubmatch(string(doc))
		if m == nil {
			t.Errorf("%s is not documented in docs/api.md as | code | status | `S3Code`: meaning |", code)
			continue
		}
		if m[1] != strconv.Itoa(in.status) {
			t.Errorf("%s documented with status %s; the table says %d", code, m[1], in.status)
		}
		if m[2] != in.s3 {
			t.Errorf("%s documented as %s; the table says %s", code, m[2], in.s3)
		}
	}
}

func TestS3ErrorFallbacks(t *testing.T) {
	tests := []struct {
		err    error
		code   string
		status int
		ok     bool
	}{
		{nil, "", 200, false},
		{errors.New("boom"), "InternalError", 500, false},
		{errs.E("x", errs.Unavailable, "db down"), "ServiceUnavailable", 503, false},
		{errs.E("x", errs.PermissionDenied), "AccessDenied", 403, false},
		{errs.E("outer", fail("inner", CodeNoSuchKey, "gone", "")), "NoSuchKey", 404, true},
	}
	for _, tt := range tests {
		code, status, ok := S3Error(tt.err)
		if code != tt.code || status != tt.status || ok != tt.ok {
			t.Errorf("S3Error(%v) = %s %d %v; want %s %d %v", tt.err, code, status, ok, tt.code, tt.status, tt.ok)
		}
	}
}
