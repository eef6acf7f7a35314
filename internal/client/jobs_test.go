package client

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
)

func testJob() api.Job {
	return api.Job{Kind: "job",
		Metadata:  api.JobMetadata{ID: "3f2a0c1e-1111-2222-3333-444455556666", Name: "mnist", CreateTime: 1700000000000},
		Algorithm: api.JobAlgorithm{CodeDir: "obs://b/code/", BootFile: "train.py", Engine: api.JobEngine{EngineName: "python3"}},
		Spec:      api.JobSpec{Resource: api.JobResource{FlavorID: "cpu.1"}},
		Status:    &api.JobStatus{Phase: api.PhaseRunning, SecondaryPhase: api.SecondaryRunning, Tasks: []string{}, TaskStatuses: []api.TaskStatus{}, RunningRecords: []api.RunningRecord{}},
	}
}

func TestJobMethods(t *testing.T) {
	ctx := context.Background()
	job := testJob()
	id := job.Metadata.ID
	step := int64(3)
	logs := api.JobLogs{Lines: []api.LogLine{{Attempt: 1, Seq: 1, Time: 1, Stream: "stdout", Text: "hi"}}, Next: "1.1"}
	metrics := api.JobMetrics{Samples: []api.MetricSample{{Attempt: 1, Seq: 1, Kind: "user", Step: &step, Values: map[string]float64{"loss": 0.5}}}}
	events := api.List[api.Event]{Total: 1, Count: 1, Items: []api.Event{{Time: 1, Level: "Info", Source: "Job", Message: "queued"}}}
	engines := api.List[api.Engine]{Total: 1, Count: 1, Items: []api.Engine{{Name: "python3", Python: "/usr/bin/python3"}}}
	flavors := api.List[api.Flavor]{Total: 1, Count: 1, Items: []api.Flavor{{ID: "cpu.1", CPU: 1, Memory: 1 << 30}}}
	jobs := api.List[api.Job]{Total: 1, Count: 1, Items: []api.Job{job}}
	tests := []struct {
		name       string
		status     int
		answer     any
		call       func(c *Client) (any, error)
		wantMethod string
		wantPath   string
		wantQuery  string
		wantBody   string
		want       any
	}{
		{"CreateJob", 201, job, func(c *Client) (any, error) {
			return c.CreateJob(ctx, &api.Job{Kind: "job", Metadata: api.JobMetadata{Name: "mnist"}, Algorithm: api.JobAlgorithm{Command: "true"}})
		}, "POST", "/api/v1/training-jobs", "", `{"kind":"job","metadata":{"name":"mnist"},"algorithm":{"command":"true","engine":{}},"spec":{"resource":{}}}`, &job},
		{"GetJob", 200, job, func(c *Client) (any, error) { return c.GetJob(ctx, id) },
			"GET", "/api/v1/training-jobs/" + id, "", "", &job},
		{"ListJobs filters", 200, jobs, func(c *Client) (any, error) {
			return c.ListJobs(ctx, JobListOptions{Name: "mn ist", Phases: []string{"Running", "Pending"}, Offset: 2, Limit: 5})
		}, "GET", "/api/v1/training-jobs", "limit=5&name=mn+ist&offset=2&phase=Running%2CPending", "", &jobs},
		{"ListJobs plain", 200, api.List[api.Job]{}, func(c *Client) (any, error) { return c.ListJobs(ctx, JobListOptions{}) },
			"GET", "/api/v1/training-jobs", "", "", &api.List[api.Job]{Items: []api.Job{}}},
		{"StopJob", 200, job, func(c *Client) (any, error) { return c.StopJob(ctx, id) },
			"POST", "/api/v1/training-jobs/" + id + "/actions", "", `{"action_type":"terminate"}`, &job},
		{"DeleteJob", 204, nil, func(c *Client) (any, error) { return nil, c.DeleteJob(ctx, id) },
			"DELETE", "/api/v1/training-jobs/" + id, "", "", nil},
		{"JobLogs", 200, logs, func(c *Client) (any, error) { return c.JobLogs(ctx, id, "1.0", 100) },
			"GET", "/api/v1/training-jobs/" + id + "/logs", "after=1.0&limit=100", "", &logs},
		{"JobLogs empty", 200, api.JobLogs{}, func(c *Client) (any, error) { return c.JobLogs(ctx, id, "", 0) },
			"GET", "/api/v1/training-jobs/" + id + "/logs", "", "", &api.JobLogs{Lines: []api.LogLine{}}},
		{"JobMetrics", 200, metrics, func(c *Client) (any, error) { return c.JobMetrics(ctx, id) },
			"GET", "/api/v1/training-jobs/" + id + "/metrics", "", "", &metrics},
		{"JobEvents", 200, events, func(c *Client) (any, error) { return c.JobEvents(ctx, id, ListOptions{Limit: 10}) },
			"GET", "/api/v1/training-jobs/" + id + "/events", "limit=10", "", &events},
		{"JobEngines", 200, engines, func(c *Client) (any, error) { return c.JobEngines(ctx) },
			"GET", "/api/v1/training-job-engines", "", "", &engines},
		{"JobFlavors", 200, flavors, func(c *Client) (any, error) { return c.JobFlavors(ctx) },
			"GET", "/api/v1/training-job-flavors", "", "", &flavors},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(*http.Request) (int, any) { return tt.status, tt.answer })
			got, err := tt.call(f.client(t))
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tt.wantMethod || r.Path != tt.wantPath || r.Query != tt.wantQuery {
				t.Errorf("request %s %s?%s, want %s %s?%s", r.Method, r.Path, r.Query, tt.wantMethod, tt.wantPath, tt.wantQuery)
			}
			checkBody(t, r.Body, tt.wantBody)
			checkAuth(t, r, false)
		})
	}
}

// logServer serves a job's log stream from a script: each call of the
// follow route runs the next step; GET of the job answers phase.
type logServer struct {
	*httptest.Server
	mu     sync.Mutex
	steps  []func(w http.ResponseWriter, r *http.Request)
	afters []string
	phases []string // answered by GET job, one per call (the last repeats)
	gets   int
}

func newLogServer(t *testing.T, phases []string, steps ...func(w http.ResponseWriter, r *http.Request)) *logServer {
	t.Helper()
	s := &logServer{steps: steps, phases: phases}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if !strings.HasSuffix(r.URL.Path, "/logs") {
			phase := s.phases[min(s.gets, len(s.phases)-1)]
			s.gets++
			s.mu.Unlock()
			j := testJob()
			j.Status.Phase = phase
			_ = json.NewEncoder(w).Encode(j)
			return
		}
		if r.URL.Query().Get("follow") != "true" || r.Header.Get("Accept") != "application/x-ndjson" {
			s.mu.Unlock()
			t.Errorf("follow request %s with Accept %q", r.URL, r.Header.Get("Accept"))
			w.WriteHeader(400)
			return
		}
		i := len(s.afters)
		s.afters = append(s.afters, r.URL.Query().Get("after"))
		s.mu.Unlock()
		if i >= len(s.steps) {
			t.Errorf("unexpected request %d: %s", i+1, r.URL)
			w.WriteHeader(500)
			return
		}
		s.steps[i](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// stream writes lines as NDJSON, flushing each.
func stream(w http.ResponseWriter, lines ...api.LogLine) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	for _, l := range lines {
		b, _ := json.Marshal(l)
		_, _ = w.Write(append(b, '\n'))
		w.(http.Flusher).Flush()
	}
}

func ll(attempt int, seq int64, text string) api.LogLine {
	return api.LogLine{Attempt: attempt, Seq: seq, Time: 1700000000000 + seq, Stream: "stdout", Text: text}
}

func (s *logServer) client(t *testing.T) *Client {
	t.Helper()
	c, err := New(&config.ClientConfig{Endpoint: s.URL, AccessKey: "AKTEST", SecretKey: "SKTEST"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fastFollow(reconnects *[]string) FollowOptions {
	return FollowOptions{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, RetryFor: time.Second,
		OnReconnect: func(err error, n int) { *reconnects = append(*reconnects, fmt.Sprintf("%d: %v", n, err)) }}
}

func TestFollowJobLogsReconnects(t *testing.T) {
	s := newLogServer(t, []string{api.PhaseCompleted},
		func(w http.ResponseWriter, r *http.Request) {
			stream(w, ll(1, 1, "one"), ll(1, 2, "two"))
			_, _ = w.Write([]byte(`{"attempt":1,"seq":3,"te`)) // a line cut by the drop
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // drop the connection mid-stream
		},
		func(w http.ResponseWriter, r *http.Request) {
			stream(w, ll(1, 2, "two again"), ll(1, 3, "three"), ll(2, 1, "retry one"))
		})
	var got []string
	var reconnects []string
	err := s.client(t).FollowJobLogsWith(context.Background(), "j1", "", fastFollow(&reconnects), func(l api.LogLine) error {
		got = append(got, LogCursor(l)+" "+l.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1.1 one", "1.2 two", "1.3 three", "2.1 retry one"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	if !reflect.DeepEqual(s.afters, []string{"", "1.2"}) {
		t.Errorf("after cursors %q, want resumed from 1.2", s.afters)
	}
	if len(reconnects) != 1 || !strings.HasPrefix(reconnects[0], "1: ") || !strings.Contains(reconnects[0], "broke") {
		t.Errorf("reconnects %q", reconnects)
	}
}

func TestFollowJobLogsEndedEarly(t *testing.T) {
	// A server shutting down ends the stream cleanly while the job runs:
	// the client sees the job is not over and reconnects.
	s := newLogServer(t, []string{api.PhaseRunning, api.PhaseFailed},
		func(w http.ResponseWriter, r *http.Request) { stream(w, ll(1, 1, "a")) },
		func(w http.ResponseWriter, r *http.Request) { stream(w, ll(1, 2, "b")) })
	var got []string
	var reconnects []string
	err := s.client(t).FollowJobLogsWith(context.Background(), "j1", "", fastFollow(&reconnects), func(l api.LogLine) error {
		got = append(got, l.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"a", "b"}) || !reflect.DeepEqual(s.afters, []string{"", "1.1"}) {
		t.Errorf("lines %q, afters %q", got, s.afters)
	}
	if len(reconnects) != 1 || !strings.Contains(reconnects[0], "ended while the job is Running") {
		t.Errorf("reconnects %q", reconnects)
	}
}

func TestFollowJobLogsResumesFromCursor(t *testing.T) {
	s := newLogServer(t, []string{api.PhaseCompleted},
		func(w http.ResponseWriter, r *http.Request) { stream(w, ll(3, 7, "old"), ll(3, 8, "new")) })
	var got []string
	err := s.client(t).FollowJobLogs(context.Background(), "j1", "3.7", func(l api.LogLine) error {
		got = append(got, l.Text)
		return nil
	})
	if err != nil || !reflect.DeepEqual(got, []string{"new"}) || s.afters[0] != "3.7" {
		t.Errorf("err %v, lines %q, afters %q", err, got, s.afters)
	}
}

func TestFollowJobLogsGivesUp(t *testing.T) {
	unavailable := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		_ = json.NewEncoder(w).Encode(api.Error{ErrorCode: "ATL.API.0503", ErrorMsg: "starting"})
	}
	steps := make([]func(http.ResponseWriter, *http.Request), 1000)
	for i := range steps {
		steps[i] = unavailable
	}
	s := newLogServer(t, []string{api.PhaseRunning}, steps...)
	var reconnects []string
	o := fastFollow(&reconnects)
	o.RetryFor = 100 * time.Millisecond
	err := s.client(t).FollowJobLogsWith(context.Background(), "j1", "", o, func(api.LogLine) error { return nil })
	if errs.CodeOf(err) != CodeLogStreamLost || !strings.Contains(errs.UserMessage(err), "lost the log stream of job j1") {
		t.Fatalf("err %v (code %q), want %s", err, errs.CodeOf(err), CodeLogStreamLost)
	}
	if len(reconnects) < 2 || !strings.HasPrefix(reconnects[1], "2: starting") {
		t.Errorf("reconnects %q", reconnects)
	}
}

func TestFollowJobLogsPermanentErrors(t *testing.T) {
	t.Run("not found", func(t *testing.T) {
		s := newLogServer(t, []string{api.PhaseRunning}, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			_ = json.NewEncoder(w).Encode(api.Error{ErrorCode: "ATL.JOB.0001", ErrorMsg: "job j1 not found"})
		})
		err := s.client(t).FollowJobLogs(context.Background(), "j1", "", func(api.LogLine) error { return nil })
		if StatusOf(err) != 404 || len(s.afters) != 1 {
			t.Errorf("err %v after %d requests", err, len(s.afters))
		}
	})
	t.Run("callback error", func(t *testing.T) {
		s := newLogServer(t, []string{api.PhaseRunning}, func(w http.ResponseWriter, r *http.Request) {
			stream(w, ll(1, 1, "a"), ll(1, 2, "b"))
		})
		stop := errors.New("enough")
		n := 0
		err := s.client(t).FollowJobLogs(context.Background(), "j1", "", func(api.LogLine) error { n++; return stop })
		if err != stop || n != 1 {
			t.Errorf("err %v after %d lines, want the callback's error after 1", err, n)
		}
	})
	t.Run("garbage line", func(t *testing.T) {
		s := newLogServer(t, []string{api.PhaseRunning}, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "<html>\n")
		})
		err := s.client(t).FollowJobLogs(context.Background(), "j1", "", func(api.LogLine) error { return nil })
		if errs.CodeOf(err) != CodeBadResponse {
			t.Errorf("err %v, want %s", err, CodeBadResponse)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		s := newLogServer(t, []string{api.PhaseRunning}, func(w http.ResponseWriter, r *http.Request) {
			stream(w, ll(1, 1, "a"))
			<-r.Context().Done()
		})
		err := s.client(t).FollowJobLogs(ctx, "j1", "", func(api.LogLine) error { cancel(); return nil })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
	})
}

func FuzzLogCursor(f *testing.F) {
	for _, s := range []string{"1.2", "0.0", "", ".", "1.", ".2", "-1.2", "1.2.3", "99999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, q, ok := parseLogCursor(s)
		if !ok {
			return
		}
		if a < 0 || q < 0 {
			t.Fatalf("negative cursor from %q", s)
		}
		back := LogCursor(api.LogLine{Attempt: a, Seq: q})
		if a2, q2, ok := parseLogCursor(back); !ok || a2 != a || q2 != q {
			t.Fatalf("%q → %d.%d → %q does not round-trip", s, a, q, back)
		}
	})
}

// tarOf builds a tar archive of name → content.
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for n, c := range files {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(c)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(tw, c)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestUploadCodeStreams(t *testing.T) {
	archive := tarOf(t, map[string]string{"train.py": strings.Repeat("print(1)\n", 5000)})
	half := len(archive) / 2
	gotHalf := make(chan struct{})
	v := sigv4.Verifier{Region: Region, Service: Service, Lookup: func(context.Context, string) (string, error) { return "SKTEST", nil }}
	var (
		received []byte
		header   http.Header
		query    string
		chunked  bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := v.Verify(r); err != nil {
			w.WriteHeader(403)
			_ = json.NewEncoder(w).Encode(api.Error{ErrorCode: "SIG", ErrorMsg: err.Error()})
			return
		}
		header, query, chunked = r.Header.Clone(), r.URL.RawQuery, r.ContentLength == -1
		first := make([]byte, half)
		if _, err := io.ReadFull(r.Body, first); err != nil {
			t.Errorf("first half: %v", err)
		}
		close(gotHalf) // the client has not written the second half yet
		rest, _ := io.ReadAll(r.Body)
		received = append(first, rest...)
		w.WriteHeader(201)
		_, _ = io.WriteString(w, `{"code_dir":"obs://atelier-system/code/u/1/src/","files":1,"bytes":45000}`)
	}))
	defer srv.Close()
	c, err := New(&config.ClientConfig{Endpoint: srv.URL, AccessKey: "AKTEST", SecretKey: "SKTEST"})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(archive[:half])
		select {
		case <-gotHalf:
		case <-time.After(10 * time.Second):
			pw.CloseWithError(errors.New("the server never saw the first half: the body was buffered"))
			return
		}
		_, _ = pw.Write(archive[half:])
		_ = pw.Close()
	}()
	dir, files, size, err := c.UploadCode(context.Background(), "my src", pr)
	if err != nil {
		t.Fatal(err)
	}
	if dir != "obs://atelier-system/code/u/1/src/" || files != 1 || size != 45000 {
		t.Errorf("got %q %d %d", dir, files, size)
	}
	if !bytes.Equal(received, archive) {
		t.Errorf("server received %d bytes, want the %d of the archive", len(received), len(archive))
	}
	if query != "name=my+src" || header.Get("Content-Type") != "application/x-tar" || !chunked ||
		header.Get("X-Amz-Content-Sha256") != sigv4.UnsignedPayload {
		t.Errorf("query %q, headers %v, chunked %v", query, header, chunked)
	}
}

func TestUploadCodeFailures(t *testing.T) {
	t.Run("reader error keeps its code", func(t *testing.T) {
		f := newFake(t, func(r *http.Request) (int, any) { return 201, `{"code_dir":"obs://x/"}` })
		pr, pw := io.Pipe()
		go func() {
			_, _ = pw.Write([]byte("partial"))
			pw.CloseWithError(errs.E("test", errs.IO, errs.Code("ATL.TEST.0001"), "train.py shrank"))
		}()
		_, _, _, err := f.client(t).UploadCode(context.Background(), "src", pr)
		if errs.CodeOf(err) != "ATL.TEST.0001" || !strings.Contains(errs.UserMessage(err), "train.py shrank") {
			t.Errorf("err %v (code %q)", err, errs.CodeOf(err))
		}
	})
	t.Run("api error", func(t *testing.T) {
		f := newFake(t, func(r *http.Request) (int, any) {
			return 413, api.Error{ErrorCode: "ATL.JOB.0042", ErrorMsg: "code dir over 1 GiB"}
		})
		_, _, _, err := f.client(t).UploadCode(context.Background(), "src", strings.NewReader("x"))
		if StatusOf(err) != 413 || err.Error() != "code dir over 1 GiB" {
			t.Errorf("err %v", err)
		}
	})
	t.Run("bad answer", func(t *testing.T) {
		f := newFake(t, func(r *http.Request) (int, any) { return 201, `{}` })
		_, _, _, err := f.client(t).UploadCode(context.Background(), "src", strings.NewReader("x"))
		if errs.CodeOf(err) != CodeBadResponse {
			t.Errorf("err %v", err)
		}
	})
	t.Run("token", func(t *testing.T) {
		f := newFake(t, func(r *http.Request) (int, any) { return 201, `{"code_dir":"obs://x/","files":0}` })
		if _, _, _, err := f.client(t, WithToken("tok")).UploadCode(context.Background(), "src", strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
		r := f.requests()[0]
		if r.Header.Get("X-Auth-Token") != "tok" || r.Header.Get("Authorization") != "" || r.Body != "x" {
			t.Errorf("headers %v body %q", r.Header, r.Body)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		c, _ := New(&config.ClientConfig{Endpoint: "http://127.0.0.1:1"})
		_, _, _, err := c.UploadCode(context.Background(), "src", strings.NewReader("x"))
		if errs.CodeOf(err) != CodeNoCredentials {
			t.Errorf("err %v", err)
		}
	})
}
