package gateway

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// principalKey marks a context as an in-process call made for a principal.
type principalKey struct{}

// inProcess is the principal an in-process call is made for, or nil. A
// request from the network never carries one: only code in the server
// process can put it in a request's context.
func inProcess(r *http.Request) *auth.Principal {
	p, _ := r.Context().Value(principalKey{}).(*auth.Principal)
	return p
}

// MaxPredictAnswer bounds the answer Predict keeps.
const MaxPredictAnswer = 8 << 20

// Predict calls a service from inside the server for p (an auto-labeling
// pass of the dataset service): POST /v1/infers/{serviceID} with body,
// routed, limited and counted like any request, and authorized as p
// (atelier:service:Predict) whatever the service's auth mode — the token
// or app code a network client sends is not needed, nor accepted in its
// place. It returns the answer's status and body.
func (g *Gateway) Predict(ctx context.Context, p *auth.Principal, serviceID, contentType string, body []byte) (int, []byte, error) {
	a, err := g.Invoke(ctx, p, serviceID, contentType, body)
	if err != nil {
		return 0, nil, err
	}
	return a.Status, a.Body, nil
}

// Answer is what an in-process call got back.
type Answer struct {
	Status int
	Header http.Header // X-Request-Id, X-Atelier-Model, X-Atelier-Instance, Content-Type …
	Body   []byte      // at most MaxPredictAnswer
}

// Invoke is Predict with the answer's headers: the same in-process call,
// routed, counted and authorized as p (atelier:service:Predict).
func (g *Gateway) Invoke(ctx context.Context, p *auth.Principal, serviceID, contentType string, body []byte) (*Answer, error) {
	const op errs.Op = "gateway.Predict"
	if p == nil {
		return nil, errs.E(op, errs.Unauthenticated, "an in-process call needs a principal")
	}
	ctx = context.WithValue(ctx, principalKey{}, p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/infers/"+url.PathEscape(serviceID), bytes.NewReader(body))
	if err != nil {
		return nil, errs.E(op, errs.Invalid, err)
	}
	req.Header.Set("Content-Type", contentType)
	req.ContentLength = int64(len(body))
	req.RemoteAddr = "in-process"
	rec := &recorder{h: http.Header{}}
	func() {
		defer func() {
			if v := recover(); v != nil && v != http.ErrAbortHandler {
				panic(v)
			} else if v != nil {
				rec.aborted = true
			}
		}()
		g.ServeHTTP(rec, req)
	}()
	if rec.aborted {
		return nil, errs.E(op, errs.IO, "the service's answer was cut off")
	}
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return &Answer{Status: rec.code, Header: rec.h, Body: rec.body.Bytes()}, nil
}

// recorder is the ResponseWriter of an in-process call.
type recorder struct {
	h       http.Header
	code    int
	body    bytes.Buffer
	aborted bool
}

func (r *recorder) Header() http.Header { return r.h }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.body.Len()+len(b) > MaxPredictAnswer {
		return 0, errs.E("gateway.Predict", errs.Invalid, "the answer is larger than 8 MiB")
	}
	return r.body.Write(b)
}

// Flush is a no-op: the answer is kept whole.
func (r *recorder) Flush() {}
