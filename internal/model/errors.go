package model

import (
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of the model registry (ATL.MDL.0001–0099).
const (
	CodeNotFound         errs.Code = "ATL.MDL.0001" // no model version has the id (or the caller may not see it)
	CodeInvalidRequest   errs.Code = "ATL.MDL.0002" // the import request is invalid (name, version, source fields)
	CodeDuplicateVersion errs.Code = "ATL.MDL.0003" // the caller already has this name and version
	CodeSource           errs.Code = "ATL.MDL.0004" // the source location cannot be read (no bucket, access denied)
	CodeSourceEmpty      errs.Code = "ATL.MDL.0005" // the source location holds no files
	CodeJobNotFound      errs.Code = "ATL.MDL.0006" // the source job does not exist (or the caller may not see it)
	CodeJobNotFinished   errs.Code = "ATL.MDL.0007" // the source job has not completed
	CodeJobNoOutput      errs.Code = "ATL.MDL.0008" // the source job has no OBS output to import from
	CodeInvalidPackage   errs.Code = "ATL.MDL.0009" // the package fails validation (every problem listed)
	CodeUnknownRuntime   errs.Code = "ATL.MDL.0010" // --runtime names no configured engine
	CodeNoEngine         errs.Code = "ATL.MDL.0011" // the server has no engine configured
	CodeCheckFailed      errs.Code = "ATL.MDL.0012" // the dry load of the handler failed (the message has the traceback)
	CodeCheckUnavailable errs.Code = "ATL.MDL.0013" // the dry load cannot run on this server (sandbox, runtime)
	CodeInUse            errs.Code = "ATL.MDL.0014" // delete refused: services use the version
	CodeTooLarge         errs.Code = "ATL.MDL.0015" // the package has too many files or bytes
	CodeCopy             errs.Code = "ATL.MDL.0016" // copying the package into the registry failed
	CodePublishing       errs.Code = "ATL.MDL.0017" // delete refused: the version is still being imported
)

// Problem is one thing wrong with an import: File is the package file it is
// in ("config.json", "customize_service.py", another path) or "" for a
// field of the request; Field locates it in the file ("apis[0].method",
// "line 12") or names the request field.
type Problem struct {
	File    string `json:"file,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// String is "FILE: FIELD: MESSAGE", without the parts that are empty.
func (p Problem) String() string {
	var parts []string
	for _, s := range []string{p.File, p.Field, p.Message} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ": ")
}

// problemsError joins problems into one error: "HEAD: P" or
// "HEAD (N problems): P1; P2; …".
func problemsError(op errs.Op, code errs.Code, head string, ps []Problem, hint string) error {
	if len(ps) == 0 {
		return nil
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	msg := head + ": " + parts[0]
	if len(ps) > 1 {
		msg = fmt.Sprintf("%s (%d problems): %s", head, len(ps), strings.Join(parts, "; "))
	}
	return errs.E(op, errs.Invalid, code, msg, errs.Hint(hint))
}

// clip shortens s to at most n bytes for a message.
