package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of the job calls.
const (
	// CodeLogStreamLost: following a job log failed to reconnect for longer
	// than FollowOptions.RetryFor.
	CodeLogStreamLost errs.Code = "ATL.CLI.0140"
	// CodeCodeUpload: the code dir stream could not be produced while it was
	// being sent (the reader's own error, code and hint are kept when it has
	// them).
	CodeCodeUpload errs.Code = "ATL.CLI.0141"
)

// Training jobs (/api/v1/training-jobs).

// JobListOptions filters and pages the job list. Name matches a substring
// of the job name; Phases keeps jobs in any of the listed phases.
type JobListOptions struct {
	Name   string
	Phases []string
	Offset int
	Limit  int
}

// CreateJob submits a job (POST /api/v1/training-jobs) and returns it as
// stored, with metadata.id and status set.
func (c *Client) CreateJob(ctx context.Context, j *api.Job) (*api.Job, error) {
	out := &api.Job{}
	err := c.do(ctx, "client.CreateJob", call{method: http.MethodPost, path: apiPath("training-jobs"), body: j, out: out})
	return ret(out, err)
}

// ValidateJob checks j as CreateJob would and creates nothing; it returns
// the job as it would be created. With codeUpload j has no code_dir: the
// caller uploads a local one (UploadCode) once the rest is valid.
func (c *Client) ValidateJob(ctx context.Context, j *api.Job, codeUpload bool) (*api.Job, error) {
	out := &api.Job{}
	q := url.Values{"dry_run": {"true"}}
	if codeUpload {
		q.Set("code_upload", "true")
	}
	err := c.do(ctx, "client.ValidateJob", call{method: http.MethodPost, path: apiPath("training-jobs"), query: q, body: j, out: out})
	return ret(out, err)
}

// GetJob gets a job by id.
func (c *Client) GetJob(ctx context.Context, id string) (*api.Job, error) {
	out := &api.Job{}
	err := c.do(ctx, "client.GetJob", call{method: http.MethodGet, path: apiPath("training-jobs", id), out: out})
	return ret(out, err)
}

// ListJobs lists one page of jobs, newest first.
func (c *Client) ListJobs(ctx context.Context, opts JobListOptions) (*api.List[api.Job], error) {
	q := url.Values{}
	if opts.Name != "" {
		q.Set("name", opts.Name)
	}
	if len(opts.Phases) > 0 {
		q.Set("phase", strings.Join(opts.Phases, ","))
	}
	return getList[api.Job](ctx, c, "client.ListJobs", apiPath("training-jobs"), q,
		ListOptions{Offset: opts.Offset, Limit: opts.Limit})
}

// StopJob asks the server to stop a job (the "terminate" action) and
// returns the job in its new phase.
func (c *Client) StopJob(ctx context.Context, id string) (*api.Job, error) {
	out := &api.Job{}
	err := c.do(ctx, "client.StopJob", call{method: http.MethodPost, path: apiPath("training-jobs", id, "actions"),
		body: api.JobActionRequest{ActionType: "terminate"}, out: out})
	return ret(out, err)
}

// DeleteJob deletes a job that has ended, with its logs, metrics and events.
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	return c.do(ctx, "client.DeleteJob", call{method: http.MethodDelete, path: apiPath("training-jobs", id)})
}

// JobLogs reads up to limit log lines after the cursor after ("" = from
// the start; limit 0 = the server's default). The answer's Next continues.
func (c *Client) JobLogs(ctx context.Context, id, after string, limit int) (*api.JobLogs, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	out := &api.JobLogs{}
	err := c.do(ctx, "client.JobLogs", call{method: http.MethodGet, path: apiPath("training-jobs", id, "logs"), query: q, out: out})
	if err == nil && out.Lines == nil {
		out.Lines = []api.LogLine{}
	}
	return ret(out, err)
}

// JobMetrics gets the system and user metric samples of a job.
func (c *Client) JobMetrics(ctx context.Context, id string) (*api.JobMetrics, error) {
	out := &api.JobMetrics{}
	err := c.do(ctx, "client.JobMetrics", call{method: http.MethodGet, path: apiPath("training-jobs", id, "metrics"), out: out})
	if err == nil && out.Samples == nil {
		out.Samples = []api.MetricSample{}
	}
	return ret(out, err)
}

// JobEvents lists one page of the events of a job.
func (c *Client) JobEvents(ctx context.Context, id string, opts ListOptions) (*api.List[api.Event], error) {
	return getList[api.Event](ctx, c, "client.JobEvents", apiPath("training-jobs", id, "events"), nil, opts)
}

// JobEngines lists the engines (interpreters) jobs can run with.
func (c *Client) JobEngines(ctx context.Context) (*api.List[api.Engine], error) {
	return getList[api.Engine](ctx, c, "client.JobEngines", apiPath("training-job-engines"), nil, ListOptions{})
}

// JobFlavors lists the resource flavors jobs can run on; the first is the
// default.
func (c *Client) JobFlavors(ctx context.Context) (*api.List[api.Flavor], error) {
	return getList[api.Flavor](ctx, c, "client.JobFlavors", apiPath("training-job-flavors"), nil, ListOptions{})
}

// LogCursor is the cursor that continues after l ("<attempt>.<seq>").
func LogCursor(l api.LogLine) string {
	return strconv.Itoa(l.Attempt) + "." + strconv.FormatInt(l.Seq, 10)
}

// parseLogCursor reads "<attempt>.<seq>"; ok is false for any other form.
func parseLogCursor(s string) (attempt int, seq int64, ok bool) {
	a, q, found := strings.Cut(s, ".")
	if !found {
		return 0, 0, false
	}
	attempt, err1 := strconv.Atoi(a)
	seq, err2 := strconv.ParseInt(q, 10, 64)
	if err1 != nil || err2 != nil || attempt < 0 || seq < 0 {
		return 0, 0, false
	}
	return attempt, seq, true
}

// FollowOptions tune FollowJobLogsWith. Zero values select the defaults.
type FollowOptions struct {
	// RetryFor is how long reconnecting may keep failing, without a line
	// received in between, before giving up (default 2 minutes).
	RetryFor time.Duration
	// Backoff is the first wait before a reconnect, doubled after each
	// failure up to MaxBackoff (defaults 250 ms and 5 s).
	Backoff, MaxBackoff time.Duration
	// OnReconnect, when set, is called before each reconnect with the error
	// that broke the stream and the number of consecutive failures (1 for
	// the first failure of an outage).
	OnReconnect func(err error, failures int)
}

func (o FollowOptions) withDefaults() FollowOptions {
	if o.RetryFor <= 0 {
		o.RetryFor = 2 * time.Minute
	}
	if o.Backoff <= 0 {
		o.Backoff = 250 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	return o
}

// FollowJobLogs streams the log of a job from the cursor after ("" = from
// the start), calling fn for every line in order, until the server ends the
// stream (the job has ended and every line was delivered). A connection
// that drops earlier is reopened from the last line received, so fn sees
// every line once. An error from fn stops the stream and is returned as is.
func (c *Client) FollowJobLogs(ctx context.Context, id, after string, fn func(api.LogLine) error) error {
	return c.FollowJobLogsWith(ctx, id, after, FollowOptions{}, fn)
}

// FollowJobLogsWith is FollowJobLogs with explicit reconnect options.
func (c *Client) FollowJobLogsWith(ctx context.Context, id, after string, o FollowOptions, fn func(api.LogLine) error) error {
	const op errs.Op = "client.FollowJobLogs"
	o = o.withDefaults()
	f := &follower{cursor: after}
	f.lastAttempt, f.lastSeq, f.haveLast = parseLogCursor(after)
	var (
		failingSince time.Time
		failures     int
		wait         = o.Backoff
	)
	for {
		n, err := c.followOnce(ctx, op, id, f, fn)
		if err == nil {
			// The server ends the stream once the job has ended; a server
			// shutting down may end it early, so check.
			if err = c.jobEnded(ctx, op, id); err == nil {
				return nil
			}
		}
		var stop *stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		if ctx.Err() != nil || !isRetryable(err) {
			return unwrapRetryable(err)
		}
		if n > 0 || failingSince.IsZero() {
			failingSince, failures, wait = c.now(), 0, o.Backoff
		}
		failures++
		if c.now().Sub(failingSince) > o.RetryFor {
			return errs.E(op, errs.Unavailable, CodeLogStreamLost,
				fmt.Sprintf("lost the log stream of job %s: no connection for %s after %d attempts", id, o.RetryFor, failures),
				errs.Hint(fmt.Sprintf("check that the server at %s is running, then follow the log again", c.endpoint)),
				unwrapRetryable(err))
		}
		if o.OnReconnect != nil {
			o.OnReconnect(unwrapRetryable(err), failures)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return errs.E(op, fmt.Sprintf("following the log of job %s interrupted", id), err)
		}
		wait = min(2*wait, o.MaxBackoff)
	}
}

// JobEnded reports whether phase is one a job ends in.
func JobEnded(phase string) bool {
	switch phase {
	case api.PhaseCompleted, api.PhaseFailed, api.PhaseTerminated, api.PhaseAbnormal:
		return true
	}
	return false
}

// jobEnded returns nil when the job has ended (or is gone), and a
// retryable error while it still runs.
func (c *Client) jobEnded(ctx context.Context, op errs.Op, id string) error {
	j, err := c.GetJob(ctx, id)
	switch {
	case StatusOf(err) == http.StatusNotFound:
		return nil
	case err != nil:
		if ctx.Err() == nil && (errs.KindOf(err) == errs.Unavailable || isGatewayStatus(StatusOf(err))) {
			return &retryableError{err}
		}
		return err
	case j.Status != nil && JobEnded(j.Status.Phase):
		return nil
	}
	phase := "no phase"
	if j.Status != nil {
		phase = j.Status.Phase
	}
	return &retryableError{errs.E(op, errs.Unavailable, CodeUnreachable,
		fmt.Sprintf("the log stream of job %s ended while the job is %s", id, phase))}
}

func isGatewayStatus(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// follower is the position of a log stream across reconnects.
type follower struct {
	cursor      string
	haveLast    bool
	lastAttempt int
	lastSeq     int64
}

// deliver passes l to fn unless it is at or before the last line delivered
// (a reconnect may repeat lines) and advances the cursor.
func (f *follower) deliver(l api.LogLine, fn func(api.LogLine) error) (bool, error) {
	if f.haveLast && (l.Attempt < f.lastAttempt || (l.Attempt == f.lastAttempt && l.Seq <= f.lastSeq)) {
		return false, nil
	}
	if err := fn(l); err != nil {
		return false, &stopError{err}
	}
	f.haveLast, f.lastAttempt, f.lastSeq, f.cursor = true, l.Attempt, l.Seq, LogCursor(l)
	return true, nil
}

// stopError carries the error of the caller's callback out of the stream.
type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }
func (e *stopError) Unwrap() error { return e.err }

// retryableError marks a failure a reconnect may cure.
type retryableError struct{ err error }

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

func isRetryable(err error) bool {
	var r *retryableError
	return errors.As(err, &r)
}

func unwrapRetryable(err error) error {
	var r *retryableError
	if errors.As(err, &r) {
		return r.err
	}
	return err
}

// followOnce opens the stream once and reads it to its end; n counts the
// lines delivered. A nil error means the server ended the stream.
func (c *Client) followOnce(ctx context.Context, op errs.Op, id string, f *follower, fn func(api.LogLine) error) (n int, err error) {
	q := url.Values{"follow": {"true"}}
	if f.cursor != "" {
		q.Set("after", f.cursor)
	}
	req, _, err := c.newRequest(ctx, op, call{method: http.MethodGet, path: apiPath("training-jobs", id, "logs"), query: q})
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/x-ndjson")
	if err := c.authenticate(op, req, nil); err != nil {
		return 0, err
	}
	resp, err := c.streamingHTTP().Do(req)
	if err != nil {
		return 0, &retryableError{c.transportError(ctx, op, err)}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
		ae := decodeAPIError(resp, data)
		if isGatewayStatus(resp.StatusCode) {
			return 0, &retryableError{ae}
		}
		return 0, ae
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			// The connection broke; a partial last line is read again
			// after the reconnect.
			if ctx.Err() != nil {
				return n, errs.E(op, fmt.Sprintf("following the log of job %s interrupted", id), ctx.Err())
			}
			return n, &retryableError{errs.E(op, errs.Unavailable, CodeUnreachable,
				fmt.Sprintf("the log stream of job %s from %s broke: %s", id, c.endpoint, networkReason(rerr)), rerr)}
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			var l api.LogLine
			if err := json.Unmarshal(line, &l); err != nil {
				return n, errs.E(op, errs.IO, CodeBadResponse,
					fmt.Sprintf("unexpected line in the log stream of job %s from %s: %v", id, c.endpoint, err),
					errs.Hint("check that the endpoint is an Atelier server of a compatible version"))
			}
			ok, err := f.deliver(l, fn)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
	}
}

// streamingHTTP is the HTTP client for long requests (log streams, code
// uploads): the configured one without its overall timeout.
func (c *Client) streamingHTTP() *http.Client {
	hc := *c.hc
	hc.Timeout = 0
	return &hc
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// UploadCode streams a tar archive of a code dir named name (the dir's base
// name) to the server, which stores it in the platform bucket, and returns
// the obs:// code_dir to put in a job with the number of files and bytes
// stored. The body is sent as it is read (chunked, signed as
// UNSIGNED-PAYLOAD); when tarStream fails, its error is returned.
func (c *Client) UploadCode(ctx context.Context, name string, tarStream io.Reader) (codeDir string, files int, size int64, err error) {
	const op errs.Op = "client.UploadCode"
	req, _, err := c.newRequest(ctx, op, call{method: http.MethodPost, path: apiPath("training-jobs", "code"),
		query: url.Values{"name": {name}}})
	if err != nil {
		return "", 0, 0, err
	}
	body := &recordingReader{r: tarStream}
	req.Body, req.GetBody, req.ContentLength = body, nil, -1
	req.Header.Set("Content-Type", "application/x-tar")
	if err := c.authenticateStream(op, req); err != nil {
		return "", 0, 0, err
	}
	resp, err := c.streamingHTTP().Do(req)
	if rerr := body.failure(); rerr != nil {
		if resp != nil {
			_ = resp.Body.Close()
		}
		code := errs.CodeOf(rerr)
		if code == "" {
			code = CodeCodeUpload
		}
		return "", 0, 0, errs.E(op, code, "cannot send the code dir", rerr)
	}
	if err != nil {
		return "", 0, 0, c.transportError(ctx, op, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return "", 0, 0, c.transportError(ctx, op, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", 0, 0, decodeAPIError(resp, data)
	}
	var out api.CodeUploadResponse
	if err := json.Unmarshal(data, &out); err != nil || out.CodeDir == "" {
		return "", 0, 0, errs.E(op, errs.IO, CodeBadResponse,
			fmt.Sprintf("unexpected answer to the code upload from %s: %s", c.endpoint, strings.TrimSpace(string(data))),
			errs.Hint("check that the endpoint is an Atelier server of a compatible version"))
	}
	return out.CodeDir, out.Files, out.Bytes, nil
}

// authenticateStream authenticates a request whose body cannot be hashed
// before it is sent: by token, or SigV4 with UNSIGNED-PAYLOAD.
func (c *Client) authenticateStream(op errs.Op, req *http.Request) error {
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
		return nil
	}
	if c.creds.AccessKey == "" || c.creds.SecretKey == "" {
		return c.authenticate(op, req, nil) // the same "no credentials" error
	}
	sigv4.SignRequest(req, c.creds, Region, Service, sigv4.UnsignedPayload, c.now())
	return nil
}

// recordingReader remembers the first error of r other than io.EOF, so
// that a failing body is reported as itself rather than as a network error.
// The transport closes it; closing closes r when r is an io.Closer.
type recordingReader struct {
	r   io.Reader
	mu  sync.Mutex
	err error
}

func (b *recordingReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *recordingReader) Close() error {
	if c, ok := b.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (b *recordingReader) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
