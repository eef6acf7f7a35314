// Package gateway is the inference gateway: it answers
// /v1/infers/{service_id}[/…] and the KServe Open Inference Protocol v2
// paths (/v2/health/ready, /v2/models/{name}[/ready|/infer]) by forwarding
// each request to a ready instance of the service.
//
// The controller pushes a Route per service with Set and drops it with
// Remove; the gateway keeps an immutable table of compiled routes and swaps
// it atomically, so ServeHTTP reads it without a lock. A request:
//
//  1. is matched to its service (by id, or by name for v2) and turned away
//     with a JSON error when the service is stopped (503, with the reason),
//     has no ready instance (503, but see scale from zero below), or the
//     caller is not let in (401/403 by the service's auth mode: token,
//     appcode or none);
//  2. has its body read into memory up to the route's MaxBody (413 beyond,
//     checked on Content-Length up front and counted for chunked bodies), so
//     it can be sent again;
//  3. goes to a model version chosen by smooth weighted round robin over the
//     versions that have a ready instance (package split), then to that
//     version's instance with the fewest outstanding requests below the
//     per-instance concurrency limit, waiting briefly for a free slot when
//     all are busy (503 when none frees up);
//  4. is retried once, on another instance of the same version (else on a
//     new connection to the same one, when the first attempt was on a
//     kept-alive connection), only when the instance cannot have run it:
//     no connection could be made, writing the request failed, or the
//     instance reset the connection before answering (a socket closed
//     with the request unread); or, for a GET, a HEAD or a request with
//     an Idempotency-Key header, after any failure before the first byte
//     of an answer. A POST the instance read whole and then closed the
//     connection on (it crashed on it, perhaps) is answered 502
//     ATL.GW.0042, not sent to a second instance. A timeout and a failure
//     after the first byte of an answer are never retried, and neither is
//     an answer, even a 500 (mayRetry states the rule and its reasons);
//  5. is answered 504 with a JSON body when the route's timeout (default
//     40 s, counted from the request's arrival) passes first. A request
//     given up on after it was written to an instance keeps its slot there
//     until the instance answers it (the answer is dropped), breaks the
//     connection or leaves the routes (at most 10 minutes): the instance
//     still works on it, so a hung one fills its slots rather than take one
//     more request per timeout.
//
// Instances that fail are set aside. One that refuses connections is
// skipped for DownFor (2 s) while another is up. One whose exchanges fail
// EjectAfter (3) times in a row — it was connected to but gave no whole
// answer: the request could not be written, the connection broke, the
// answer was malformed or cut, or the timeout passed — is ejected: skipped
// for EjectFor (10 s) while another instance of its version is up, then
// given requests again; a whole answer (any status) ends the count, a
// failure before one ejects it again at once. The controller drops an
// instance from the route as soon as its runner reports it failed (its
// liveness probe, see internal/runner).
//
// Scale from zero, as Knative's activator: when the route has
// ScaleFromZero (autoscale min 0) and the service, not stopped, failed or
// being deleted, has no ready instance of the model version the request
// may go to, the request is held instead of answered 503. It counts in
// InFlight from its arrival, Options.Demand is told at once (the
// controller starts an instance without waiting for its next tick), and it
// waits on the service's wait queue, which every Set and Remove wakes: at
// the first route with a ready instance it is forwarded as any other
// request (and waits for a free slot from then on). A route update that
// stops, fails or deletes the service ends the wait with that 503 or 404
// at once; the timeout ends it with a 504 saying that no instance became
// ready. The wait counts in the request's latency; Stats counts the held
// requests as cold_starts.
//
// Instances are called with the gateway's own keep-alive HTTP/1.1 client
// (upstream.go) rather than net/http.Transport: the request is written and
// the response read on the handler's goroutine, with no goroutine handoffs
// and no per-request context or timer, which halves the gateway's CPU per
// request, and the client knows exactly whether a byte of a response
// arrived. A client that goes away does not free its instance slot before
// the instance answers (or the timeout passes): the instance is still busy
// with the request, and the slot counts that.
//
// The server does not serve the gateway from net/http alone: a Front
// (front.go, fast.go) accepts the API listener's connections and answers
// plain inference requests — HTTP/1.1, a path under /v1/infers/ or /v2/,
// a Content-Length body of at most 1 MiB, no Expect, Upgrade or
// Transfer-Encoding, a clean head — with its own HTTP/1.1 loop, calling
// ServeHTTP with its own ResponseWriter. Anything else, and every later
// request of that connection, goes to the API's net/http server with the
// bytes already read (which serves inference too, through the same
// ServeHTTP). The loop runs a connection inside one RawConn.Read call, so
// it waits for readiness instead of trying reads that fail with EAGAIN, and
// makes its reads and writes as raw non-blocking system calls, so the
// scheduler does not hand its P to another thread when the kernel runs the
// woken peer first; the instance side writes a request and waits for the
// answer the same way. A request then costs a read and a write on each
// side, as in nginx, instead of net/http's eight system calls and a
// background read. Clients and instances on kept-alive connections repeat
// their heads: a request whose header section is its connection's last
// one but for the Content-Length digits takes the fields parsed last time
// (headCache.repeat), and an instance's response head that is its
// connection's last one but for the Date and Content-Length values takes
// the header lines made from it last time (headMemo.repeat); the fuzz
// tests check both against a fresh parse. Differences from net/http on the loop: a client that
// goes away is noticed (and counted as 499) only for requests that took at
// least 20 ms, and request contexts are never cancelled.
//
// Every response carries X-Request-Id and, when an instance answered,
// X-Atelier-Instance and X-Atelier-Model. Per-service figures (requests,
// errors, QPS over the last minute, latency percentiles, per model version
// and per status code, in flight) are kept in atomics and served by Stats
// and as Prometheus metrics (atelier_inference_requests_total,
// atelier_inference_duration_seconds, atelier_inference_inflight) that are
// read from those atomics at scrape time.
package gateway
