package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/text"
)

// Authenticator checks the X-Auth-Token of token-mode services.
// *auth.Service implements it.
type Authenticator interface {
	AuthenticateToken(ctx context.Context, token string) (*auth.Principal, error)
	Allowed(p *auth.Principal, area, verb, resource, ownerID string) bool
}

// Options configure a Gateway. Only Authenticator is needed for token-mode
// services; the rest have defaults.
type Options struct {
	Authenticator Authenticator
	Logger        *slog.Logger         // default slog.Default()
	Registry      *prometheus.Registry // nil: no metrics
	Now           func() time.Time     // clock of the QPS and latency windows; default time.Now

	// MaxConnsPerBackend caps the connections in use to one instance; as
	// every request in flight holds one, it lowers the concurrency limit
	// when smaller (0: no cap beyond it).
	MaxConnsPerBackend int
	// ConcurrencyPerInstance is how many requests one instance gets at a
	// time (default 8; < 0: no limit). More wait for a free slot.
	ConcurrencyPerInstance int
	// QueueTimeout is how long a request waits for a free slot before a
	// 503 (default 10 s, never past the route's timeout).
	QueueTimeout time.Duration
	// AuthCacheTTL is how long an authenticated token is reused without
	// asking the Authenticator (default 2 s, like the access-key cache;
	// < 0: never).
	AuthCacheTTL time.Duration
	// DownFor is how long an instance that refused a connection is skipped
	// while another one is up (default 2 s).
	DownFor time.Duration
	// EjectAfter is how many exchanges in a row with an instance may fail
	// (connected, but no whole answer: the request could not be written,
	// the connection broke before or during the answer, the answer was
	// malformed, or the timeout passed) before the instance is ejected:
	// skipped for EjectFor while another one is up (default 3; < 0:
	// never). After EjectFor it takes requests again; a whole answer (any
	// status) ends the count, and another failure first ejects it again.
	EjectAfter int
	// EjectFor is how long an ejected instance is skipped (default 10 s).
	EjectFor time.Duration
	// Demand is told, on the request's goroutine, each time a request
	// starts to wait for an instance of a service scaled to zero
	// (Route.ScaleFromZero), so that the controller starts one at once
	// rather than at its next tick. It must not block. nil: nobody is told
	// (the request still counts in InFlight).
	Demand func(serviceID string)
}

// Gateway routes inference requests to service instances. Its methods are
// safe for concurrent use.
type Gateway struct {
	o     Options
	log   *slog.Logger
	now   func() time.Time
	limit int32

	table atomic.Pointer[table]

	mu       sync.Mutex // serialises Set and Remove; guards services and routes
	services map[string]*svcState
	routes   map[string]*route

	tokens     sync.Map // token → *cachedPrincipal
	tokenCount atomic.Int32
}

type cachedPrincipal struct {
	p     *auth.Principal
	until time.Time
}

// New returns a Gateway with no routes.
func New(o Options) *Gateway {
	g := &Gateway{o: o, log: o.Logger, now: o.Now, services: map[string]*svcState{}, routes: map[string]*route{}}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.now == nil {
		g.now = time.Now
	}
	switch c := o.ConcurrencyPerInstance; {
	case c == 0:
		g.limit = DefaultConcurrencyPerInstance
	case c > 0:
		g.limit = int32(min(c, 1<<30))
	}
	if g.o.QueueTimeout <= 0 {
		g.o.QueueTimeout = DefaultQueueTimeout
	}
	if g.o.AuthCacheTTL == 0 {
		g.o.AuthCacheTTL = 2 * time.Second
	}
	if g.o.DownFor <= 0 {
		g.o.DownFor = 2 * time.Second
	}
	if g.o.EjectAfter == 0 {
		g.o.EjectAfter = DefaultEjectAfter
	}
	if g.o.EjectFor <= 0 {
		g.o.EjectFor = DefaultEjectFor
	}
	if m := int32(o.MaxConnsPerBackend); m > 0 && (g.limit <= 0 || m < g.limit) {
		g.limit = m // every request in flight holds one connection
	}
	g.table.Store(newTable(nil))
	if o.Registry != nil {
		o.Registry.MustRegister(newCollector(g))
	}
	return g
}

// Set adds or replaces the route of r.ServiceID.
func (g *Gateway) Set(r Route) {
	if r.ServiceID == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	svc := g.services[r.ServiceID]
	if svc == nil {
		svc = newSvcState(r.ServiceID)
		g.services[r.ServiceID] = svc
	}
	g.routes[r.ServiceID] = compile(r, svc)
	g.table.Store(newTable(g.routes))
	for _, q := range svc.waits {
		q.signalAll()
	}
	svc.cold.signalAll()
}

// Remove drops the route of a service and its figures.
func (g *Gateway) Remove(serviceID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	svc := g.services[serviceID]
	if svc == nil {
		return
	}
	delete(g.services, serviceID)
	delete(g.routes, serviceID)
	for _, b := range svc.backends {
		b.pool.close()
	}
	g.table.Store(newTable(g.routes))
	for _, q := range svc.waits {
		q.signalAll()
	}
	svc.cold.signalAll()
}

// Stats are the figures of a service (zero for an unknown one).
func (g *Gateway) Stats(serviceID string) api.ServiceStats {
	g.mu.Lock()
	svc := g.services[serviceID]
	g.mu.Unlock()
	if svc == nil {
		return api.ServiceStats{ServiceID: serviceID}
	}
	return svc.stats(&g.mu, g.now())
}

// InFlight is the number of requests of a service being served or waiting
// for an instance.
func (g *Gateway) InFlight(serviceID string) int {
	if rt := g.table.Load().byID[serviceID]; rt != nil {
		return int(rt.svc.inflight.Load())
	}
	return 0
}

// ServeHTTP answers a request under /v1/infers/ or /v2/.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rid := requestID(w, r, start)
	t := parsePath(r.URL.EscapedPath())
	switch t.kind {
	case pathNone:
		(&gwError{http.StatusNotFound, CodeBadPath, "no inference endpoint at " + r.URL.Path,
			"call /v1/infers/{service_id}[/…] or the KServe v2 paths /v2/health/ready, /v2/models/{name}[/ready|/infer]"}).write(w, rid)
		return
	case pathV2Server, pathV2Live, pathV2Ready:
		if e := onlyMethods(r, "GET", "HEAD"); e != nil {
			e.write(w, rid)
			return
		}
		switch t.kind {
		case pathV2Server:
			writeJSON(w, http.StatusOK, map[string]any{"name": "atelier", "version": "2", "extensions": []string{}})
		case pathV2Live:
			writeJSON(w, http.StatusOK, map[string]any{"live": true})
		default:
			writeJSON(w, http.StatusOK, map[string]any{"ready": true})
		}
		return
	}

	rt, e := g.table.Load().lookup(t)
	if e != nil {
		e.write(w, rid)
		return
	}
	svc := rt.svc
	svc.inflight.Add(1)
	defer svc.inflight.Add(-1)
	res := g.serve(w, r, rt, t, rid, start)
	now := start
	if g.o.Now != nil {
		now = g.now()
	}
	took := time.Since(start) // the monotonic clock only
	end := start.Add(took)
	if fw, ok := w.(*fastRW); ok {
		fw.end = end // the Front's next deadline reads no clock of its own
	}
	if res.code != 499 && clientGone(w, took) {
		res.code = 499 // the client went away before the answer (the Front tells only now)
	}
	svc.record(res.model, res.code, res.failed, took, now)
	if res.abort {
		// The instance broke the connection or the timeout passed after the
		// status was sent: cut the client's connection so it cannot take a
		// truncated body for a whole one.
		panic(http.ErrAbortHandler)
	}
}

// result is how a request ended, for the figures.
type result struct {
	code   int // status sent; 499 when the client went away first
	model  *modelStats
	failed bool // an error after the status was sent
	abort  bool
}

func (tab *table) lookup(t target) (*route, *gwError) {
	if t.kind == pathInfer {
		if rt := tab.byID[t.id]; rt != nil {
			return rt, nil
		}
		return nil, &gwError{http.StatusNotFound, CodeNoService, fmt.Sprintf("no service with id %q", t.id),
			"`atelier service list` shows the ids; the address is the service's access_address"}
	}
	rt, ok := tab.byName[t.id]
	if ok && rt == nil {
		return nil, &gwError{http.StatusConflict, CodeAmbiguousName, fmt.Sprintf("more than one service is named %q", t.id),
			"use the service id as the v2 model name: /v2/models/{service_id}/…"}
	}
	if rt == nil {
		rt = tab.byID[t.id]
	}
	if rt == nil {
		return nil, &gwError{http.StatusNotFound, CodeNoService, fmt.Sprintf("no service named %q", t.id),
			"the v2 model name is the service name (or id): `atelier service list` shows them"}
	}
	return rt, nil
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, rt *route, t target, rid string, start time.Time) result {
	res := result{model: rt.svc.none}
	fail := func(e *gwError) result {
		e.write(w, rid)
		res.code = e.status
		return res
	}
	if e := g.authorize(r, rt); e != nil {
		return fail(e)
	}
	switch t.kind {
	case pathV2Model, pathV2ModelReady:
		if e := onlyMethods(r, "GET", "HEAD"); e != nil {
			return fail(e)
		}
		if t.kind == pathV2Model {
			if t.version != "" && !contains(rt.versions, t.version) {
				return fail(noVersion(rt, t.version))
			}
			writeJSON(w, http.StatusOK, map[string]any{"name": t.id, "versions": nonNil(rt.versions), "platform": "atelier"})
			res.code = http.StatusOK
			return res
		}
		ready, why := rt.ready(t.version)
		body := map[string]any{"name": t.id, "ready": ready}
		res.code = http.StatusOK
		if !ready {
			body["reason"] = why
			res.code = http.StatusServiceUnavailable
		}
		writeJSON(w, res.code, body)
		return res
	case pathV2Infer:
		if e := onlyMethods(r, "POST"); e != nil {
			return fail(e)
		}
	}
	grp, e := rt.target(t.version)
	if e != nil {
		return fail(e)
	}
	if grp != nil {
		res.model = grp.stats
	}

	body, buf, e := readBody(r, rt.maxBody)
	if buf != nil {
		defer putBuf(buf)
	}
	if e != nil {
		return fail(e)
	}

	fwd := t.rest
	if t.kind != pathInfer {
		fwd = r.URL.EscapedPath()
	}
	deadline, queued := start.Add(rt.timeout), start
	if _, whole := w.(*fastRW); !whole {
		queued = time.Now() // net/http: the body may have taken a while to arrive (the Front has it whole before the handler runs)
	}
	if grp == nil {
		// Scaled to zero: wait for an instance to become ready.
		if rt, grp, e = g.awaitInstance(r.Context(), rt, t.version, deadline); e != nil {
			switch e.status {
			case 0: // the client went away
				res.code = 499
				return res
			case http.StatusGatewayTimeout:
				rt.svc.timeouts.Add(1)
			}
			return fail(e)
		}
		queued = time.Now() // the wait for a free slot starts now
	}
	return g.forward(w, r, rt, grp, res, body, fwd, rid, queued, deadline)
}

// target is the model version a request goes to: the one it names, else
// one chosen by weight. It returns neither a group nor an error when the
// request is to wait for an instance of a service scaled to zero.
func (rt *route) target(version string) (*group, *gwError) {
	if e := rt.unavailable(); e != nil {
		if e.code == CodeNoInstance && rt.scalesFromZero(version) {
			return nil, nil
		}
		return nil, e
	}
	if version != "" {
		if grp := rt.byModel[version]; grp != nil {
			return grp, nil
		}
		if !contains(rt.versions, version) {
			return nil, noVersion(rt, version)
		}
		if rt.scalesFromZero(version) {
			return nil, nil
		}
		return nil, &gwError{http.StatusServiceUnavailable, CodeNoInstance,
			fmt.Sprintf("model version %s of service %s has no ready instance", version, rt.name()), waitHint(rt)}
	}
	if grp := rt.pick(); grp != nil {
		return grp, nil
	}
	if rt.scalesFromZero("") {
		return nil, nil
	}
	return nil, &gwError{http.StatusServiceUnavailable, CodeNoInstance,
		fmt.Sprintf("service %s has no ready instance of a model version with a weight above 0", rt.name()), waitHint(rt)}
}

// scalesFromZero reports whether a request for version ("": any) that
// finds no ready instance waits for one: the service scales from zero, its
// status lets traffic in, and the version takes a share of the traffic
// (the controller starts instances of those only).
func (rt *route) scalesFromZero(version string) bool {
	if !rt.cfg.ScaleFromZero {
		return false
	}
	switch rt.cfg.Status {
	case api.ServiceStopped, api.ServiceStopping, api.ServiceDeleting, api.ServiceFailed:
		return false
	}
	if version == "" {
		return true
	}
	return contains(rt.versions, version) && (len(rt.cfg.Weights) == 0 || rt.cfg.Weights[version] > 0)
}

// awaitInstance holds a request for a service scaled to zero until a model
// version it may go to has a ready instance, telling Options.Demand first.
// It follows route updates: a service stopped, failed, deleted or no longer
// scaling from zero meanwhile ends the wait with that error at once. The
// wait ends with a 504 at deadline, and with an error of status 0 when the
// client goes away.
func (g *Gateway) awaitInstance(ctx context.Context, rt *route, version string, deadline time.Time) (*route, *group, *gwError) {
	q := rt.svc.cold
	rt.svc.coldStarts.Add(1)
	if g.o.Demand != nil {
		g.o.Demand(rt.cfg.ServiceID)
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		// The update channel is taken before the table is read: an update
		// after this point closes it.
		upd := q.updated()
		cur := g.table.Load().byID[rt.cfg.ServiceID]
		if cur == nil {
			return rt, nil, &gwError{http.StatusNotFound, CodeNoService, fmt.Sprintf("service %s was deleted", rt.name()), ""}
		}
		rt = cur
		if grp, e := rt.target(version); grp != nil || e != nil {
			return rt, grp, e
		}
		select {
		case <-upd:
		case <-timer.C:
			return rt, nil, &gwError{http.StatusGatewayTimeout, CodeTimeout,
				fmt.Sprintf("no instance became ready within %s while the service scaled up from zero", rt.timeout),
				fmt.Sprintf("the first request after a scale to zero waits for an instance to start: keep one running with "+
					"`atelier service update %s --autoscale min=1,max=N`, or deploy with a longer --timeout; "+
					"`atelier service events %s` shows the start", rt.cfg.ServiceID, rt.cfg.ServiceID)}
		case <-ctx.Done():
			return rt, nil, &gwError{} // the client went away
		}
	}
}

// forward sends the request to an instance of grp, once more to another
// one after a connection failure, and copies the response. The request
// waits for a free slot for QueueTimeout from queued at most.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, rt *route, grp *group,
	res result, body []byte, fwd, rid string, queued, deadline time.Time) result {
	queueUntil := queued.Add(g.o.QueueTimeout)
	if queueUntil.After(deadline) {
		queueUntil = deadline
	}
	h := w.Header()
	var kept [4]string // headers set before the instance's (the request id): kept when an attempt fails
	keep := kept[:0]
	fw, _ := w.(*fastRW) // the Front's writer takes the instance's headers as lines (see readHead)
	if fw == nil {
		for k := range h {
			keep = append(keep, k)
		}
	}
	var prev *backend
	var lastErr error
	var fault attemptFault
	tried := 0
	for attempt := 0; attempt < 2; attempt++ {
		var exclude *backend
		if prev != nil && grp.others(prev) {
			exclude = prev
		}
		b, waited, e := g.acquire(r.Context(), &rt, &grp, exclude, queueUntil, deadline)
		if e != nil {
			switch {
			case e.status == 0: // the client went away
				res.code = 499
				return res
			case e.status == http.StatusGatewayTimeout:
				rt.svc.timeouts.Add(1)
			case e.code == CodeBusy:
				rt.svc.busy.Add(1)
			}
			e.write(w, rid)
			res.code = e.status
			return res
		}
		res.model = grp.stats
		if attempt > 0 {
			rt.svc.retries.Add(1)
		}
		tried++
		var x exchange
		// The connection is taken now: queued is still now on the first
		// attempt when no slot was waited for (a clock read saved).
		x.at = queued
		if attempt > 0 || waited {
			x.at = time.Now()
		}
		err := g.send(r.Context(), &x, r, b, body, fwd, rid, deadline, h, keep, fw)
		if err == nil {
			res = g.respond(w, r, &x, b, rt, res, rid, deadline)
			b.release()
			return res
		}
		lastErr = err
		fault = classify(&x, err)
		switch {
		case fault == faultTimeout && x.uc != nil && !x.unsent:
			// The instance has the request and may still be working on it:
			// its slot stays taken until it answers (see orphan).
			g.orphan(b, x.uc, r.Method)
		case x.uc != nil:
			x.uc.c.Close()
			b.release()
		default:
			b.release()
		}
		if fw != nil {
			fw.raw = fw.raw[:0]
		} else {
			dropHeaders(h, keep)
		}
		if fault == faultDial {
			if r.Context().Err() == nil {
				b.downUntil.Store(time.Now().Add(g.o.DownFor).UnixNano())
			}
		} else {
			g.failed(rt, b, rid, err)
		}
		timedOut := fault == faultTimeout || !time.Now().Before(deadline)
		if !timedOut {
			g.log.Warn("gateway: instance connection failed", "service", rt.cfg.ServiceID, "instance", b.id,
				"request_id", rid, "attempt", attempt+1, "fault", fault.String(), "reused_conn", x.reused, "err", err)
		}
		if timedOut || r.Context().Err() != nil || !mayRetry(fault, idempotent(r)) {
			break
		}
		// Retry on another instance; on the same one (on a new connection)
		// only when the failure was on a kept-alive connection.
		if !grp.others(b) && !x.reused {
			break
		}
		prev = b
	}
	if r.Context().Err() != nil {
		res.code = 499
		return res
	}
	if errors.Is(lastErr, os.ErrDeadlineExceeded) || !time.Now().Before(deadline) {
		rt.svc.timeouts.Add(1)
		e := timeoutError(rt, "")
		e.write(w, rid)
		res.code = e.status
		return res
	}
	var e *gwError
	if (fault == faultClosed || fault == faultOther) && !idempotent(r) {
		// The instance had the whole request: it may have run it.
		rt.svc.unretried.Add(1)
		e = &gwError{http.StatusBadGateway, CodeInstanceLost,
			fmt.Sprintf("the service's instance received the request but gave no answer (%v); the request was not sent again, as it may have run (%d tried)", lastErr, tried),
			fmt.Sprintf("the instance may have crashed on this request (see `atelier service events %s`); send it again only if running it twice is harmless "+
				"(a request with an Idempotency-Key header, or a GET, is retried on another instance by the gateway)", rt.cfg.ServiceID)}
	} else {
		e = &gwError{http.StatusBadGateway, CodeInstanceFailed,
			fmt.Sprintf("no answer from the service's instance (%d tried): %v", tried, lastErr),
			fmt.Sprintf("the instance may have crashed and is being restarted: see `atelier service events %s`", rt.cfg.ServiceID)}
	}
	e.write(w, rid)
	res.code = e.status
	return res
}

// attemptFault is how an attempt on an instance failed, as the retry rule
// (mayRetry) sees it.
type attemptFault uint8

const (
	faultNone     attemptFault = iota
	faultDial                  // no connection was made: the instance got nothing
	faultUnsent                // writing the request failed: the instance did not get all of it
	faultReset                 // ECONNRESET before a byte of an answer, the request written whole
	faultClosed                // EOF before a byte of an answer, the request written whole
	faultOther                 // another error before a byte of an answer, the request written whole
	faultTimeout               // the deadline passed
	faultAnswered              // an error after a byte of an answer arrived
)

func (f attemptFault) String() string {
	switch f {
	case faultDial:
		return "connect"
	case faultUnsent:
		return "write"
	case faultReset:
		return "reset"
	case faultClosed:
		return "closed"
	case faultOther:
		return "read"
	case faultTimeout:
		return "timeout"
	case faultAnswered:
		return "answer"
	}
	return "none"
}

// classify says how the attempt x failed with err.
func classify(x *exchange, err error) attemptFault {
	switch {
	case x.dialErr:
		return faultDial
	case errors.Is(err, os.ErrDeadlineExceeded):
		return faultTimeout
	case x.gotByte:
		return faultAnswered
	case x.unsent:
		return faultUnsent
	case errors.Is(err, syscall.ECONNRESET):
		return faultReset
	case errors.Is(err, io.EOF):
		return faultClosed
	}
	return faultOther
}

// mayRetry is the retry rule: whether a request whose attempt failed with
// f may be sent again (to another instance, else on a new connection to
// the same one). A request is sent again only when the instance cannot
// have run it:
//
//   - no connection was made (faultDial);
//   - writing the request failed (faultUnsent): the instance did not get
//     all of it, and the model server reads a request whole (its
//     Content-Length body included) before a handler runs;
//   - the instance reset the connection before answering (faultReset):
//     the kernel resets a stream socket's peer when the socket is closed
//     with bytes left unread in it (a Unix socket's close sets ECONNRESET
//     on the peer exactly then, or when it was never accepted; TCP sends
//     an RST), so the instance closed without having read the whole
//     request — typically a kept-alive connection it closed as the
//     request arrived, or a server that stopped before accepting it.
//
// An EOF (faultClosed) or any other error (faultOther) after the whole
// request was written is retried only for an idempotent request (GET,
// HEAD, or one with an Idempotency-Key header): the instance read the
// request and then closed the connection or died, so it may have run it —
// a request that crashes its instance must not crash a second one. A
// timeout, and an error after a byte of the answer, are never retried.
//
// On TCP (instances listen on Unix sockets; TCP addresses serve tests and
// benchmarks) a kept-alive connection the peer closed before the request
// was written also ends in EOF, so such a POST is not retried either.
func mayRetry(f attemptFault, idempotent bool) bool {
	switch f {
	case faultDial, faultUnsent, faultReset:
		return true
	case faultClosed, faultOther:
		return idempotent
	}
	return false
}

// idempotent reports whether r may run twice: a GET or HEAD, or a request
// with an Idempotency-Key header.
func idempotent(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	v := r.Header["Idempotency-Key"] // the parsers store canonical keys
	return len(v) > 0 && v[0] != ""
}

// orphanFor bounds how long the gateway waits for the answer to a request
// it gave up on (see orphan): as long as the longest service timeout.
const orphanFor = 10 * time.Minute

// orphan keeps the slot on b of a request whose timeout passed after it
// was written to the instance whole: the instance may still be working on
// it (a model server's worker runs a request to its end), so the slot stays
// taken until the answer arrives (it is read and dropped), the instance
// breaks the connection (its runner killed a hung server), it leaves the
// routes, or orphanFor passes. A hung instance thus fills its slots and
// gets no more requests while others have room, instead of one more
// request per timeout.
func (g *Gateway) orphan(b *backend, uc *uconn, method string) {
	if !b.pool.adopt(uc) {
		uc.c.Close()
		b.release()
		return
	}
	go func() {
		defer b.release()
		defer b.pool.disown(uc)
		uc.c.SetDeadline(time.Now().Add(orphanFor))
		if res, err := http.ReadResponse(uc.br, &http.Request{Method: method}); err == nil { // the method: a HEAD's answer has no body
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
}

// failed counts a failed exchange with b, an instance that was connected
// to, and ejects it at the EjectAfter-th failure in a row (and at every
// one after that until it answers again).
func (g *Gateway) failed(rt *route, b *backend, rid string, err error) {
	n := b.fails.Add(1)
	if g.o.EjectAfter < 0 || n < int32(min(g.o.EjectAfter, 1<<30)) {
		return
	}
	b.downUntil.Store(time.Now().Add(g.o.EjectFor).UnixNano())
	rt.svc.ejections.Add(1)
	g.log.Warn("gateway: instance ejected", "service", rt.cfg.ServiceID, "instance", b.id, "request_id", rid,
		"failures_in_a_row", n, "for", g.o.EjectFor.String(), "err", err)
}

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// respond sends the instance's response (its headers are in w already) and
// gives the connection back when the body was read whole.
func (g *Gateway) respond(w http.ResponseWriter, r *http.Request, x *exchange, b *backend, rt *route, res result, rid string, deadline time.Time) result {
	if fw, ok := w.(*fastRW); ok {
		// The instance's headers are lines in fw.raw already.
		fw.raw = append(fw.raw, "X-Atelier-Instance: "...)
		fw.raw = append(fw.raw, b.hdrID[0]...)
		fw.raw = append(fw.raw, "\r\nX-Atelier-Model: "...)
		fw.raw = append(fw.raw, b.hdrModel[0]...)
		fw.raw = append(fw.raw, "\r\n"...)
		fw.rawDate = x.sawDate
		if x.declared >= 0 {
			fw.clen = x.declared
		}
	} else {
		h := w.Header()
		h["X-Atelier-Instance"] = b.hdrID
		h["X-Atelier-Model"] = b.hdrModel
	}
	w.WriteHeader(x.status)
	res.code = x.status
	var flusher http.Flusher
	var buf []byte
	if x.length < 0 && !x.noBody {
		flusher, _ = w.(http.Flusher)
		bp := copyBufPool.Get().(*[]byte)
		defer copyBufPool.Put(bp)
		buf = *bp
	}
	reusable, werr, err := x.copyBody(w, flusher, buf)
	if err == nil {
		if b.fails.Load() != 0 {
			b.fails.Store(0) // a whole answer
		}
		if reusable {
			b.pool.put(x.uc, x.at)
		} else {
			x.uc.c.Close()
		}
		if r.Context().Err() != nil {
			res.code = 499 // the client went away before the answer
		}
		return res
	}
	x.uc.c.Close()
	if werr {
		res.code = 499 // the client went away
		return res
	}
	res.failed, res.abort = true, true
	if errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(deadline) {
		rt.svc.timeouts.Add(1)
	} else {
		rt.svc.aborted.Add(1)
	}
	g.failed(rt, b, rid, err)
	g.log.Warn("gateway: response cut short", "service", rt.cfg.ServiceID, "instance", b.id, "request_id", rid, "err", err)
	return res
}

// acquire takes a slot on an instance of *grp, waiting for one until
// queueUntil. While it waits it follows route updates: new instances of the
// version count, and a version that lost its instances is re-picked.
func (g *Gateway) acquire(ctx context.Context, rtp **route, grpp **group, exclude *backend, queueUntil, deadline time.Time) (*backend, bool, *gwError) {
	rt, grp := *rtp, *grpp
	if b := grp.tryAcquire(g.limit, exclude, 0); b != nil {
		return b, false, nil
	}
	q := grp.wq
	q.waiters.Add(1)
	defer func() { q.waiters.Add(-1) }()
	rt.svc.queued.Add(1)
	timer := time.NewTimer(time.Until(queueUntil))
	defer timer.Stop()
	for {
		// The update channel is taken before the table is read: an update
		// after this point closes it.
		upd := q.updated()
		if cur := g.table.Load().byID[rt.cfg.ServiceID]; cur != rt {
			if cur == nil {
				return nil, true, &gwError{http.StatusNotFound, CodeNoService, fmt.Sprintf("service %s was deleted", rt.name()), ""}
			}
			if e := cur.unavailable(); e != nil {
				return nil, true, e
			}
			next := cur.byModel[grp.model]
			if next == nil {
				if next = cur.pick(); next == nil {
					return nil, true, &gwError{http.StatusServiceUnavailable, CodeNoInstance,
						fmt.Sprintf("service %s has no ready instance of a model version with a weight above 0", cur.name()), waitHint(cur)}
				}
			}
			rt, grp = cur, next
			*rtp, *grpp = rt, grp
			if grp.wq != q {
				q.waiters.Add(-1)
				q = grp.wq
				q.waiters.Add(1)
				continue
			}
		}
		if b := grp.tryAcquire(g.limit, exclude, 0); b != nil {
			return b, true, nil
		}
		select {
		case <-q.ch:
		case <-upd:
		case <-timer.C:
			if !queueUntil.Before(deadline) {
				return nil, true, timeoutError(rt, " (every instance was busy)")
			}
			return nil, true, &gwError{http.StatusServiceUnavailable, CodeBusy,
				fmt.Sprintf("all %d instance(s) of model version %s of service %s are busy (%d requests each) and none freed up within %s",
					len(grp.backends), grp.model, rt.name(), g.limit, g.o.QueueTimeout),
				fmt.Sprintf("add instances (`atelier service update %s --instances N`, or --autoscale) or retry later", rt.cfg.ServiceID)}
		case <-ctx.Done():
			return nil, true, &gwError{} // the client went away
		}
	}
}

// pick chooses the model version of a request by weight.
func (rt *route) pick() *group {
	i := rt.picker.Next()
	if i < 0 {
		return nil
	}
	return rt.groups[i]
}

func (rt *route) name() string {
	if rt.cfg.Name != "" {
		return rt.cfg.Name
	}
	return rt.cfg.ServiceID
}

// unavailable is the 503 of a service that takes no traffic, or nil.
func (rt *route) unavailable() *gwError {
	id := rt.cfg.ServiceID
	switch rt.cfg.Status {
	case api.ServiceStopped, api.ServiceStopping:
		msg := fmt.Sprintf("service %s is %s", rt.name(), rt.cfg.Status)
		if rt.cfg.StoppedReason != "" {
			msg += ": " + rt.cfg.StoppedReason
		}
		return &gwError{http.StatusServiceUnavailable, CodeStopped, msg, fmt.Sprintf("start it: `atelier service start %s`", id)}
	case api.ServiceDeleting:
		return &gwError{http.StatusServiceUnavailable, CodeNotRunning, fmt.Sprintf("service %s is being deleted", rt.name()), ""}
	}
	if len(rt.byModel) == 0 {
		if rt.cfg.Status == api.ServiceFailed {
			return &gwError{http.StatusServiceUnavailable, CodeNotRunning, fmt.Sprintf("service %s failed to deploy", rt.name()),
				fmt.Sprintf("`atelier service events %s` shows why", id)}
		}
		status := rt.cfg.Status
		if status == "" {
			status = "unknown"
		}
		msg := fmt.Sprintf("service %s has no ready instance (status %s)", rt.name(), status)
		if rt.scalesFromZero("") {
			msg += "; it scales from zero: an inference request waits for one to start"
		}
		return &gwError{http.StatusServiceUnavailable, CodeNoInstance, msg, waitHint(rt)}
	}
	return nil
}

// ready answers the v2 readiness of the service or one of its versions.
func (rt *route) ready(version string) (bool, string) {
	if version != "" && !contains(rt.versions, version) {
		return false, "no model version " + version
	}
	if e := rt.unavailable(); e != nil {
		return false, e.msg
	}
	if version != "" {
		if rt.byModel[version] == nil {
			return false, "model version " + version + " has no ready instance"
		}
		return true, ""
	}
	if len(rt.groups) == 0 {
		return false, "no ready instance of a model version with a weight above 0"
	}
	return true, ""
}

func waitHint(rt *route) string {
	return fmt.Sprintf("wait for it with `atelier service wait %s`; `atelier service events %s` shows why instances are not ready",
		rt.cfg.ServiceID, rt.cfg.ServiceID)
}

func noVersion(rt *route, v string) *gwError {
	return &gwError{http.StatusNotFound, CodeNoVersion, fmt.Sprintf("service %s has no model version %q", rt.name(), v),
		fmt.Sprintf("its versions (model ids) are listed by GET /v2/models/%s", rt.name())}
}

func timeoutError(rt *route, why string) *gwError {
	return &gwError{http.StatusGatewayTimeout, CodeTimeout,
		fmt.Sprintf("the service did not answer within %s%s", rt.timeout, why),
		"deploy with a longer --timeout, or make the handler faster"}
}

// authorize lets the request in by the service's auth mode.
func (g *Gateway) authorize(r *http.Request, rt *route) *gwError {
	if p := inProcess(r); p != nil {
		if g.o.Authenticator == nil || !g.o.Authenticator.Allowed(p, "service", "Predict", auth.Resource("service", rt.cfg.ServiceID), rt.cfg.OwnerID) {
			return &gwError{http.StatusForbidden, CodeDenied, fmt.Sprintf("user %q may not call service %s", p.Subject.Name, rt.name()),
				"the owner, an admin, or a user with a policy allowing atelier:service:Predict may call it"}
		}
		return nil
	}
	switch rt.cfg.Auth {
	case api.AuthNone:
		return nil
	case api.AuthAppCode:
		code := r.Header.Get("X-Apig-AppCode")
		if code == "" || rt.cfg.AppCode == "" || subtle.ConstantTimeCompare([]byte(code), []byte(rt.cfg.AppCode)) != 1 {
			msg := "this service needs its app code in X-Apig-AppCode"
			if code != "" {
				msg = "the X-Apig-AppCode is not this service's app code"
			}
			return &gwError{http.StatusUnauthorized, CodeBadAppCode, msg,
				fmt.Sprintf("send X-Apig-AppCode: <app_code>; `atelier service get %s` shows it", rt.cfg.ServiceID)}
		}
		return nil
	}
	tok := r.Header.Get("X-Auth-Token")
	if tok == "" {
		return &gwError{http.StatusUnauthorized, CodeNoToken, "this service needs a token in X-Auth-Token",
			"send X-Auth-Token with a token from POST /api/v1/auth/tokens (`atelier token create`)"}
	}
	p, err := g.principal(r.Context(), tok)
	if err != nil {
		if k := errs.KindOf(err); k == errs.Unavailable || k == errs.Internal || g.o.Authenticator == nil {
			return &gwError{http.StatusServiceUnavailable, CodeAuthUnavailable, "cannot check the X-Auth-Token now", "retry in a moment"}
		}
		msg := errs.UserMessage(err)
		if msg == "" {
			msg = "invalid token"
		}
		return &gwError{http.StatusUnauthorized, CodeBadToken, "X-Auth-Token not accepted: " + msg,
			"get a new token from POST /api/v1/auth/tokens (`atelier token create`) and send it as X-Auth-Token"}
	}
	if !g.o.Authenticator.Allowed(p, "service", "Predict", auth.Resource("service", rt.cfg.ServiceID), rt.cfg.OwnerID) {
		name := "this user"
		if p.User != nil {
			name = fmt.Sprintf("user %q", p.User.Name)
		}
		return &gwError{http.StatusForbidden, CodeDenied, fmt.Sprintf("%s may not call service %s", name, rt.name()),
			"the owner, an admin, or a user with a policy allowing atelier:service:Predict may call it"}
	}
	return nil
}

// principal authenticates a token, from the cache when it is fresh.
func (g *Gateway) principal(ctx context.Context, tok string) (*auth.Principal, error) {
	if g.o.Authenticator == nil {
		return nil, errs.E("gateway.principal", errs.Unavailable, "no authenticator")
	}
	now := time.Now()
	if v, ok := g.tokens.Load(tok); ok {
		c := v.(*cachedPrincipal)
		if now.Before(c.until) {
			return c.p, nil
		}
		g.tokens.Delete(tok)
		g.tokenCount.Add(-1)
	}
	p, err := g.o.Authenticator.AuthenticateToken(ctx, tok)
	if err != nil {
		return nil, err
	}
	if ttl := g.o.AuthCacheTTL; ttl > 0 && p != nil {
		until := now.Add(ttl)
		if !p.ExpiresAt.IsZero() && p.ExpiresAt.Before(until) {
			until = p.ExpiresAt
		}
		if g.tokenCount.Add(1) > 10000 { // bound memory: start over rather than track recency
			g.tokens.Clear()
			g.tokenCount.Store(1)
		}
		if _, loaded := g.tokens.Swap(tok, &cachedPrincipal{p: p, until: until}); loaded {
			g.tokenCount.Add(-1)
		}
	}
	return p, nil
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		bodyPool.Put(b)
	}
}

// readBody reads the request body into a pooled buffer, refusing one larger
// than limit: up front on its Content-Length, else while reading it.
func readBody(r *http.Request, limit int64) ([]byte, *bytes.Buffer, *gwError) {
	tooLarge := func() *gwError {
		return &gwError{http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			fmt.Sprintf("request body is larger than this service's limit of %s", text.Bytes(limit)),
			"send a smaller body, or deploy the service with a larger --max-body"}
	}
	if r.ContentLength > limit {
		return nil, nil, tooLarge()
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, nil, nil
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	var err error
	if r.ContentLength > 0 {
		// Read straight into the buffer's spare room; buf only lends its
		// memory (it goes back to the pool when the request is done).
		buf.Grow(int(r.ContentLength))
		b := buf.AvailableBuffer()[:r.ContentLength]
		if _, err = io.ReadFull(r.Body, b); err == nil {
			return b, buf, nil
		}
	} else {
		var n int64
		n, err = buf.ReadFrom(io.LimitReader(r.Body, limit+1))
		if err == nil && n > limit {
			return nil, buf, tooLarge()
		}
	}
	if err != nil {
		return nil, buf, &gwError{http.StatusBadRequest, CodeBodyRead, "cannot read the request body: " + err.Error(), ""}
	}
	return buf.Bytes(), buf, nil
}

// requestID is the request id already set on the response (by the API
// server's middleware), else the client's X-Request-Id when it is sane,
// else a new one; it is set on the response.
func requestID(w http.ResponseWriter, r *http.Request, now time.Time) string {
	fw, fast := w.(*fastRW)
	h := w.Header()
	if v := h["X-Request-Id"]; len(v) > 0 && v[0] != "" {
		return v[0]
	}
	var id string
	if v := r.Header["X-Request-Id"]; len(v) > 0 { // the parsers store canonical keys
		id = v[0]
	}
	if !saneID(id) {
		id = newRequestID(now)
	}
	if fast {
		fw.rid = id // written by the writer, not through the map (see fastRW.rid)
	} else {
		h["X-Request-Id"] = []string{id}
	}
	return id
}

var (
	ridSeed    = func() uint64 { var b [8]byte; rand.Read(b[:]); return binary.LittleEndian.Uint64(b[:]) }()
	ridCounter atomic.Uint64
)

// newRequestID is a UUIDv7 like the API server's request ids, made without
// a lock or a random read per request: the millisecond time, a counter and
// a per-process random value mixed with the counter.
func newRequestID(now time.Time) string {
	var u [16]byte
	ms := uint64(now.UnixMilli())
	n := ridCounter.Add(1)
	binary.BigEndian.PutUint64(u[:8], ms<<16)
	u[6] = 0x70 | byte(n>>8)&0x0f
	u[7] = byte(n)
	binary.BigEndian.PutUint64(u[8:], ridSeed^(n*0x9e3779b97f4a7c15))
	u[8] = u[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:], u[10:])
	return string(out[:])
}

func saneID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func onlyMethods(r *http.Request, methods ...string) *gwError {
	for _, m := range methods {
		if r.Method == m {
			return nil
		}
	}
	return &gwError{http.StatusMethodNotAllowed, CodeMethod, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path),
		"use " + strings.Join(methods, " or ")}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
