package runner

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/atelier-dev/atelier/internal/errs"
)

// States of the model server's ready file.
const (
	ReadyStateReady  = "ready"
	ReadyStateFailed = "failed"
)

// ReadyFile is what model_service.server writes to --ready-file once the
// handler is loaded and warmed up ({"state":"ready","socket":PATH} on
// the runner's socket, {"state":"ready","port":N} on TCP) or when that
// failed ({"state":"failed","stage":"load|warmup","error":…,"traceback":…}).
type ReadyFile struct {
	State     string `json:"state"`
	Port      int    `json:"port,omitempty"`
	Socket    string `json:"socket,omitempty"`
	Stage     string `json:"stage,omitempty"`
	Error     string `json:"error,omitempty"`
	Traceback string `json:"traceback,omitempty"`
}

// ParseReadyFile parses the ready file's content. Empty content (the file
// is being written) is the zero ReadyFile and no error; a state other than
// ready or failed, or a ready file without a usable port, is an error.
func ParseReadyFile(b []byte) (ReadyFile, error) {
	const op errs.Op = "runner.ParseReadyFile"
	if len(bytes.TrimSpace(b)) == 0 {
		return ReadyFile{}, nil
	}
	var rf ReadyFile
	if err := json.Unmarshal(b, &rf); err != nil {
		return ReadyFile{}, errs.E(op, errs.Invalid, CodeReadyFile, "the ready file is not valid JSON: "+jsonProblem(err))
	}
	switch rf.State {
	case ReadyStateReady:
		if rf.Socket == "" && (rf.Port < 1 || rf.Port > 65535) {
			return ReadyFile{}, errs.E(op, errs.Invalid, CodeReadyFile, fmt.Sprintf("the ready file names no socket and no usable port (%d)", rf.Port))
		}
	case ReadyStateFailed:
	default:
		return ReadyFile{}, errs.E(op, errs.Invalid, CodeReadyFile, fmt.Sprintf("the ready file has the unknown state %q", rf.State))
	}
	return rf, nil
}

// Message is a failed ready file's error in one line, e.g. "the model
// failed to load: ValueError: bad weights".
func (rf ReadyFile) Message() string {
	msg := rf.Error
	if msg == "" {
		msg = "no error message"
	}
	if rf.Stage == "warmup" {
		return "the model's warmup failed: " + msg
	}
	return "the model failed to load: " + msg
}
