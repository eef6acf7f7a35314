package s3

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/checksum"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
)

// Deps are the S3 server's collaborators.
type Deps struct {
	OBS      *obs.Service
	IAM      *auth.Service
	Region   string
	Domain   string // s3_domain: enables virtual-host-style addressing
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// ConsoleOrigins are the origins the console is served from
	// (scheme://host:port). The console uploads small files with browser
	// POST forms (PostObject) from there, so the server answers CORS for
	// exactly those requests from those origins, whatever the bucket's
	// CORS configuration says (see consoleCORS).
	ConsoleOrigins []string
}

// Server is the S3 API front end: it routes, authenticates and decodes a
// request, calls the obs service, and encodes the answer as S3 does.
type Server struct {
	d       Deps
	metrics *s3Metrics
	bufs    sync.Pool // *[]byte of copyBufferSize, for response bodies
	xmlBufs sync.Pool // *[]byte, for listings (see writeList)
}

// copyBufferSize is the buffer a GET copies the object through.
const copyBufferSize = 256 << 10

// NewServer builds the S3 API server.
func NewServer(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	s := &Server{d: d, metrics: newS3Metrics(d.Registry)}
	s.bufs.New = func() any { b := make([]byte, copyBufferSize); return &b }
	s.xmlBufs.New = func() any { b := make([]byte, 0, 64<<10); return &b }
	return s
}

// request is one S3 request being served.
type request struct {
	w      http.ResponseWriter
	r      *http.Request
	t      Target
	caller *obs.Caller
	id     string
	// chunked is the aws-chunked decoder of a streaming body, if any.
	chunked *sigv4.ChunkedReader
}

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// ServeHTTP serves one S3 request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	q := &request{w: rec, r: r, id: newRequestID()}
	SetRequestID(rec.Header(), q.id)
	op := "unrouted"
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.d.Logger.Error("panic in S3 handler", "request_id", q.id, "panic", v, "op", op)
			if !rec.wrote {
				WriteError(rec, r, NewError(InternalError, "internal error"), q.id)
			}
		}
		s.metrics.observe(op, r.Method, rec.status, rec.bytes, time.Since(start))
		s.d.Logger.Debug("s3", "op", op, "method", r.Method, "bucket", q.t.Bucket, "status", rec.status,
			"ms", time.Since(start).Milliseconds(), "request_id", q.id)
	}()
	t, err := Route(r, s.d.Domain)
	if err != nil {
		s.fail(q, err)
		return
	}
	q.t, op = t, t.Op.String()
	origin := r.Header.Get("Origin")
	console := origin != "" && t.Op == OpPostObject && s.consoleOrigin(origin)
	switch {
	case console:
		// Before authentication: a refused form is an answer the console
		// can read, not a network error.
		consoleCORS(rec.Header(), origin)
	case origin != "" && t.Bucket != "" && t.Op != OpOptions:
		s.corsHeaders(q, origin) // before authentication: its errors carry them too
	}
	if err := s.authenticate(q); err != nil {
		s.fail(q, err)
		return
	}
	if err := s.dispatch(q); err != nil {
		s.fail(q, err)
	}
}

// fail writes err as an S3 error unless the response has begun.
func (s *Server) fail(q *request, err error) {
	e := s.toS3Error(err)
	if e.Code == InternalError {
		s.d.Logger.Error("S3 request failed", "request_id", q.id, "op", q.t.Op.String(), "err", err)
	}
	if sw, ok := q.w.(*statusWriter); ok && sw.wrote {
		s.d.Logger.Warn("S3 error after the response began", "request_id", q.id, "err", err)
		return
	}
	if e.Code == InvalidRange && q.t.Key != "" {
		if res, herr := s.d.OBS.HeadObject(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, obs.GetOptions{}); herr == nil {
			q.w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(res.Object.Size, 10))
		}
	}
	if e.Code == NotModified && q.t.Key != "" {
		if res, herr := s.d.OBS.HeadObject(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, obs.GetOptions{}); herr == nil {
			q.w.Header().Set("ETag", QuoteETag(res.Object.ETag))
			q.w.Header().Set("Last-Modified", res.Object.LastModified.UTC().Format(http.TimeFormat))
		}
	}
	setMarkerHeaders(q.w.Header(), err)
	WriteError(q.w, q.r, e, q.id)
}

// toS3Error maps an error of any layer to its S3 error.
func (s *Server) toS3Error(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if code, _, ok := obs.S3Error(err); ok {
		out := &Error{Code: ErrorCode(code), Message: userMessage(err), Hint: string(errs.HintOf(err)), Err: err}
		if out.Message == "" {
			out.Message = out.Code.DefaultMessage()
		}
		return out
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return NewError(EntityTooLarge, "the request body is larger than "+strconv.FormatInt(mbe.Limit, 10)+" bytes")
	}
	return ToError(err)
}

// authenticate resolves the caller: a SigV4 signature (header or
// presigned), a Signature V2 presigned GET, or anonymous. A streaming body
// is wrapped in its aws-chunked decoder; a body with an x-amz-checksum-*
// header is checked against it.
func (s *Server) authenticate(q *request) error {
	r := q.r
	ctx := r.Context()
	v := sigv4.Verifier{Region: s.d.Region, Service: "s3"}
	var p *auth.Principal
	var res *sigv4.Result
	var err error
	switch {
	case q.t.Op == OpOptions:
		// A CORS preflight is answered from the bucket's CORS
		// configuration alone; browsers do not sign it, and a presigned
		// URL's query it carries (X-Amz-Signature, …) authenticates
		// nothing: the caller stays anonymous.
		q.caller = obs.Anonymous(auth.ClientIP(r.RemoteAddr))
		return nil
	case q.t.Op == OpPostObject:
		// A browser-form upload is signed in its form (see postObject).
		q.caller = obs.Anonymous(auth.ClientIP(r.RemoteAddr))
		return nil
	case sigv4.IsPresignedV2(r):
		bucket := ""
		if q.t.VirtualHost {
			bucket = q.t.Bucket
		}
		p, res, err = s.d.IAM.AuthenticatePresignedV2(ctx, r, v, bucket)
	case sigv4.IsSigned(r):
		p, res, err = s.d.IAM.AuthenticateSigV4(ctx, r, v)
	default:
		q.caller = obs.Anonymous(auth.ClientIP(r.RemoteAddr))
		return nil
	}
	if err != nil {
		return err
	}
	p.SourceIP = auth.ClientIP(r.RemoteAddr)
	q.caller = obs.As(p)
	if sigv4.IsStreaming(res.PayloadHash) {
		cr, err := sigv4.NewChunkedReader(r.Body, res, r.Header)
		if err != nil {
			return err
		}
		q.chunked = cr
		r.Body = readCloser{cr, r.Body}
	}
	return nil
}

type readCloser struct {
	*sigv4.ChunkedReader
	body interface{ Close() error }
}

func (rc readCloser) Close() error { return rc.body.Close() }

// bodySize is the number of payload bytes the request declares, -1 if unknown.
func (q *request) bodySize() int64 {
	if q.chunked != nil {
		return q.chunked.DecodedLength()
	}
	return q.r.ContentLength
}

// checksumOf is the additional checksum the request asks to verify or store:
// an x-amz-checksum-* header, a trailing checksum, or an algorithm only.
func (q *request) checksumOf() (obs.Checksum, error) {
	a, value, err := checksum.FromHeaders(q.r.Header)
	if err != nil {
		return obs.Checksum{}, err
	}
	if a != "" {
		return obs.Checksum{Algo: string(a), Value: value}, nil
	}
	if q.chunked != nil {
		if a, _ := q.chunked.Checksum(); a != "" {
			return obs.Checksum{Algo: string(a), Trailer: true}, nil // the decoder verifies the trailer's value
		}
	}
	if algo := q.r.Header.Get("x-amz-sdk-checksum-algorithm"); algo != "" {
		return obs.Checksum{Algo: strings.ToLower(algo)}, nil
	}
	return obs.Checksum{}, nil
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type s3Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	bytesOut *prometheus.CounterVec
}

func newS3Metrics(reg prometheus.Registerer) *s3Metrics {
	m := &s3Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "atelier_s3_requests_total",
			Help: "S3 API requests by operation, method and status code."}, []string{"op", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "atelier_s3_request_duration_seconds",
			Help:    "S3 API request latency by operation.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"op"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "atelier_s3_response_bytes_total",
			Help: "Bytes sent in S3 API response bodies by operation."}, []string{"op"}),
	}
	reg.MustRegister(m.requests, m.duration, m.bytesOut)
	return m
}

func (m *s3Metrics) observe(op, method string, status int, n int64, d time.Duration) {
	m.requests.WithLabelValues(op, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(op).Observe(d.Seconds())
	if n > 0 {
		m.bytesOut.WithLabelValues(op).Add(float64(n))
	}
}
