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
//     has no ready instance (503), or the caller is not let in (401/403 by
//     the service's auth mode: token, appcode or none);
//  2. has its body read into memory up to the route's MaxBody (413 beyond,
//     checked on Content-Length up front and counted for chunked bodies), so
//     it can be sent again;
//  3. goes to a model version chosen by smooth weighted round robin over the
//     versions that have a ready instance (package split), then to that
//     version's instance with the fewest outstanding requests below the
//     per-instance concurrency limit, waiting briefly for a free slot when
//     all are busy (503 when none frees up);
//  4. is retried once, on another instance of the same version, when the
//     first attempt failed at the connection level before any byte of a
//     response arrived (refused, reset, EOF on a reused connection) —
//     never once a response started, even a 500;
//  5. is answered 504 with a JSON body when the route's timeout (default
//     40 s, counted from the request's arrival) passes first.
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
// Every response carries X-Request-Id and, when an instance answered,
// X-Atelier-Instance and X-Atelier-Model. Per-service figures (requests,
// errors, QPS over the last minute, latency percentiles, per model version
// and per status code, in flight) are kept in atomics and served by Stats
// and as Prometheus metrics (atelier_inference_requests_total,
// atelier_inference_duration_seconds, atelier_inference_inflight) that are
// read from those atomics at scrape time.
package gateway
