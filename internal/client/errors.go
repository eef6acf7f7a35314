package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// APIError is an answer outside 2xx, decoded from the api.Error body.
type APIError struct {
	Status    int    // HTTP status
	Code      string // stable code, e.g. "ATL.IAM.0004"; empty when the body was not an api.Error
	Msg       string // the server's message
	Hint      string // what to do about it; may be empty
	RequestID string // the server's request id, for its logs
}

// Error is the server's message.
func (e *APIError) Error() string { return e.Msg }

// Kind is the errs.Kind that matches the HTTP status.
func (e *APIError) Kind() errs.Kind {
	switch e.Status {
	case http.StatusBadRequest:
		return errs.Invalid
	case http.StatusUnauthorized:
		return errs.Unauthenticated
	case http.StatusForbidden:
		return errs.PermissionDenied
	case http.StatusNotFound:
		return errs.NotFound
	case http.StatusConflict:
		return errs.Conflict
	case http.StatusRequestEntityTooLarge:
		return errs.TooLarge
	case http.StatusServiceUnavailable:
		return errs.Unavailable
	case http.StatusNotImplemented:
		return errs.Unsupported
	case http.StatusInsufficientStorage:
		return errs.NoSpace
	}
	return errs.Other
}

// StatusOf is the HTTP status of the *APIError in err's chain, or 0.
func StatusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// decodeAPIError builds the *APIError of a non-2xx answer.
func decodeAPIError(resp *http.Response, body []byte) *APIError {
	e := &APIError{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	var b api.Error
	if json.Unmarshal(body, &b) == nil && (b.ErrorMsg != "" || b.ErrorCode != "") {
		e.Code, e.Msg, e.Hint = b.ErrorCode, b.ErrorMsg, b.Hint
		if b.RequestID != "" {
			e.RequestID = b.RequestID
		}
	}
	if e.Msg == "" {
		e.Msg = fmt.Sprintf("the server answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if e.Code == "" {
			e.Hint = "check that the endpoint is an Atelier server"
		}
	}
	return e
}

// transportError explains a request that got no answer.
func (c *Client) transportError(ctx context.Context, op errs.Op, err error) error {
	if ctx.Err() != nil {
		return errs.E(op, fmt.Sprintf("request to %s interrupted", c.endpoint), ctx.Err())
	}
	where := c.configPath
	if where == "" {
		where = "the client config"
	}
	return errs.E(op, errs.Unavailable, CodeUnreachable,
		fmt.Sprintf("cannot reach the Atelier server at %s: %s", c.endpoint, networkReason(err)),
		errs.Hint(fmt.Sprintf("is `atelier server` running? check endpoint in %s", where)),
		err)
}

// networkReason is a short description of a transport failure.
func networkReason(err error) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dns):
		return fmt.Sprintf("cannot resolve host %q", dns.Name)
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return strings.TrimPrefix(err.Error(), "dial tcp: ")
		}
		err = next
	}
}
