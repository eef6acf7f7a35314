package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// server speaks the runner protocol (internal/api/jobs.go) for one job
// attempt, or (kind "instances") for one service instance.
type server struct {
	base   string // e.g. http://127.0.0.1:8080, no trailing slash
	kind   string // "jobs", "instances" or "notebooks": the collection of the runner protocol
	job    string // the job's or the instance's id
	token  string
	hc     *http.Client // calls, with a timeout
	stream *http.Client // the code archive, as long as it takes
}

func newServer(base, job, token string) *server {
	tr := &http.Transport{
		Proxy:               nil, // the server is reached directly, never through a proxy of the environment
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	return &server{
		base: strings.TrimRight(base, "/"), kind: "jobs", job: job, token: token,
		hc:     &http.Client{Timeout: 60 * time.Second, Transport: tr},
		stream: &http.Client{Transport: tr},
	}
}

// callError is a failed runner call: no answer (Status 0) or an answer
// outside 2xx.
type callError struct {
	Path   string
	Status int
	Body   api.Error
	Err    error // transport error when Status is 0
}

func (e *callError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: the server did not answer: %v", e.Path, e.Err)
	}
	msg := e.Body.ErrorMsg
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Body.ErrorCode != "" {
		return fmt.Sprintf("%s: %d %s (%s)", e.Path, e.Status, msg, e.Body.ErrorCode)
	}
	return fmt.Sprintf("%s: %d %s", e.Path, e.Status, msg)
}

func (e *callError) Unwrap() error { return e.Err }

// temporary reports whether a failed call may succeed later: no answer, a
// server error, 408 or 429. Other answers (401 for a token of an attempt
// that has ended, 400 for a bad body) are final.
func temporary(err error) bool {
	var ce *callError
	if !errors.As(err, &ce) {
		return false
	}
	switch {
	case ce.Status == 0, ce.Status >= 500:
		return true
	}
	return ce.Status == http.StatusRequestTimeout || ce.Status == http.StatusTooManyRequests
}

// path is the URL path of a runner call ("" for the job itself).
func (s *server) path(suffix string) string {
	p := "/api/v1/runner/" + s.kind + "/" + url.PathEscape(s.job)
	if suffix != "" {
		p += "/" + suffix
	}
	return p
}

// open sends one request and returns the answer's body when it is 2xx.
func (s *server) open(ctx context.Context, method, suffix string, in any) (io.ReadCloser, error) {
	p := s.path(suffix)
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, errs.E("runner.call", errs.Internal, fmt.Sprintf("cannot encode %s", p), err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+p, body)
	if err != nil {
		return nil, &callError{Path: p, Err: err}
	}
	req.Header.Set(api.RunnerTokenHeader, s.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := s.hc
	if (in == nil && suffix == "code") || strings.HasSuffix(suffix, "/objects") {
		hc = s.stream // an archive: as long as it takes
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, &callError{Path: p, Err: err}
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		ce := &callError{Path: p, Status: resp.StatusCode}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = json.Unmarshal(b, &ce.Body)
		return nil, ce
	}
	return resp.Body, nil
}

// call sends one request with in as JSON (nil: no body) and decodes a 2xx
// answer into out (nil: discarded).
func (s *server) call(ctx context.Context, method, suffix string, in, out any) error {
	rc, err := s.open(ctx, method, suffix, in)
	if err != nil {
		return err
	}
	defer rc.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, rc)
		return nil
	}
	if err := json.NewDecoder(rc).Decode(out); err != nil {
		return &callError{Path: s.path(suffix), Err: fmt.Errorf("bad answer: %w", err)}
	}
	return nil
}

// backoff is an exponential delay between retries.
type backoff struct {
	next, max time.Duration
}

func newBackoff(first, max time.Duration) *backoff { return &backoff{next: first, max: max} }

// wait sleeps for the next delay or until ctx ends (false).
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.next)
	defer t.Stop()
	b.next = min(b.next*2, b.max)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retry runs fn until it succeeds, fails for good (not temporary), ctx ends
// or limit has passed; onRetry sees each temporary failure.
func retry(ctx context.Context, limit time.Duration, b *backoff, fn func() error, onRetry func(error)) error {
	end := time.Now().Add(limit)
	for {
		err := fn()
		if err == nil || !temporary(err) {
			return err
		}
		if time.Now().After(end) {
			return err
		}
		if onRetry != nil {
			onRetry(err)
		}
		if !b.wait(ctx) {
			return err
		}
	}
}

// fetchSpec is what fetchWorkload fetches: the runner protocol's record
// of one instance or notebook.
type fetchSpec struct {
	what, kind, id string // "instance", "instances", its id
	server         string
	tokenFile, dir string
	limit          time.Duration // how long the fetch is retried
	code           errs.Code     // of a fetch that failed
	reason         string        // final.json's reason when it fails
}

// fetchWorkload reads the runner token, fetches the workload into out
// (retrying while the server is away) and returns the server client. When
// that fails it says so in the log and in final.json (as reason), so the
// server learns why the runner ended.
func fetchWorkload(ctx context.Context, f fetchSpec, log *slog.Logger, sink *logSink, out any) (*server, error) {
	op := errs.Op("runner.fetch " + f.what)
	fail := func(err error) error {
		ex := api.RunnerExit{Attempt: 1, ExitCode: -1, Reason: f.reason,
			Message: "the runner could not start the " + f.what + ": " + errs.UserMessage(err), EndTime: time.Now().UnixMilli()}
		sink.Runner("%s", ex.Message)
		ex.LastLogSeq = sink.LastSeq()
		if werr := writeFinal(f.dir, &ex); werr != nil {
			log.Error("cannot write final.json", "err", werr)
		}
		return err
	}
	token, err := os.ReadFile(f.tokenFile)
	if err != nil {
		return nil, fail(errs.E(op, errs.IO, CodeToken, because(fmt.Sprintf("cannot read the token file %s", f.tokenFile), err), err))
	}
	srv := newServer(f.server, f.id, strings.TrimSpace(string(token)))
	srv.kind = f.kind
	log.Info("fetching the "+f.what, "server", f.server)
	err = retry(ctx, f.limit, newBackoff(250*time.Millisecond, 5*time.Second), func() error {
		return srv.call(ctx, "GET", "", nil, out)
	}, func(err error) { log.Warn("cannot fetch the "+f.what+"; retrying", "err", err) })
	if err != nil {
		return nil, fail(errs.E(op, errs.Unavailable, f.code,
			errs.Hint("check that the server is running and reachable at --server (advertise_url)"),
			because(fmt.Sprintf("cannot fetch %s %s from %s", f.what, f.id, f.server), err), err))
	}
	return srv, nil
}
