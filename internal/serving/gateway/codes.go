package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of the gateway (ATL.GW.NNNN).
const (
	CodeNoToken         errs.Code = "ATL.GW.0001" // 401: token mode and no X-Auth-Token
	CodeBadToken        errs.Code = "ATL.GW.0002" // 401: the token is not valid (expired, revoked, unknown)
	CodeDenied          errs.Code = "ATL.GW.0003" // 403: a valid token of a user who may not call the service
	CodeBadAppCode      errs.Code = "ATL.GW.0004" // 401: appcode mode and a missing or wrong X-Apig-AppCode
	CodeNoService       errs.Code = "ATL.GW.0010" // 404: no service with that id (or v2 name)
	CodeBadPath         errs.Code = "ATL.GW.0011" // 404: not a gateway path
	CodeMethod          errs.Code = "ATL.GW.0012" // 405: wrong method for a v2 path
	CodeAmbiguousName   errs.Code = "ATL.GW.0013" // 409: two services have the v2 model name
	CodeNoVersion       errs.Code = "ATL.GW.0014" // 404: v2 versions/{v} names no model version of the service
	CodeBodyTooLarge    errs.Code = "ATL.GW.0020" // 413: the body exceeds the service's max body
	CodeBodyRead        errs.Code = "ATL.GW.0021" // 400: the request body could not be read
	CodeStopped         errs.Code = "ATL.GW.0030" // 503: the service is stopped (or stopping), with the reason
	CodeNoInstance      errs.Code = "ATL.GW.0031" // 503: no ready instance
	CodeBusy            errs.Code = "ATL.GW.0032" // 503: every instance is at its concurrency limit and none freed up in time
	CodeNotRunning      errs.Code = "ATL.GW.0033" // 503: the service is failed or being deleted
	CodeTimeout         errs.Code = "ATL.GW.0040" // 504: no answer within the service's timeout (scaling from zero: no instance ready within it)
	CodeInstanceFailed  errs.Code = "ATL.GW.0041" // 502: the instance could not be reached or broke the connection before answering (after the retry)
	CodeInstanceLost    errs.Code = "ATL.GW.0042" // 502: the instance received the whole request and broke the connection before answering; not retried (it may have run)
	CodeAuthUnavailable errs.Code = "ATL.GW.0005" // 503: the token could not be checked (the auth store does not answer)
)

// gwError is an error answered by the gateway itself.
type gwError struct {
	status int
	code   errs.Code
	msg    string
	hint   string
}

// write answers e as the API error body.
func (e *gwError) write(w http.ResponseWriter, rid string) {
	b, _ := json.Marshal(api.Error{ErrorCode: string(e.code), ErrorMsg: e.msg, Hint: e.hint, RequestID: rid})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(e.status)
	w.Write(append(b, '\n'))
}

var nosniff = []string{"nosniff"}
