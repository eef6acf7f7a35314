// Command loadgen is a closed-loop HTTP/1.1 load generator for the serving
// benchmarks: -c workers, each with its own keep-alive connection, send the
// same request back to back for -d (after an unmeasured -warmup) and it
// reports requests per second and latency percentiles, as text or as one
// JSON line (-format json).
//
// It speaks just enough HTTP/1.1 to be cheap: the request bytes are built
// once; responses are read with Content-Length or chunked framing, and a
// connection the server closes (Connection: close, EOF) is reopened.
//
//	loadgen -url http://127.0.0.1:8080/v1/infers/ID -c 16 -d 10s -method POST \
//	    -body '{"x":1}' -header 'Content-Type: application/json' [-format json]
//	loadgen -url … -body @image.jpg -header 'Content-Type: image/jpeg'
//
// With -url given more than once it loads the targets in turn, a -slice
// at a time (see interleave.go), and reports them side by side:
//
//	loadgen -url http://A/… -url http://B/… -label a,b -c 16 -d 30s -slice 250ms -format json
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

// Result is the JSON report.
type Result struct {
	Label       string           `json:"label,omitempty"`
	URL         string           `json:"url"`
	Method      string           `json:"method"`
	Concurrency int              `json:"concurrency"`
	Seconds     float64          `json:"seconds"`
	Requests    int64            `json:"requests"`
	Errors      int64            `json:"errors"`  // connection or protocol errors
	Non2xx      int64            `json:"non_2xx"` // responses with a status outside 200..299
	RPS         float64          `json:"rps"`
	MeanMs      float64          `json:"mean_ms"`
	P50Ms       float64          `json:"p50_ms"`
	P90Ms       float64          `json:"p90_ms"`
	P99Ms       float64          `json:"p99_ms"`
	P999Ms      float64          `json:"p999_ms"`
	MaxMs       float64          `json:"max_ms"`
	Status      map[string]int64 `json:"status"`
	Reconnects  int64            `json:"reconnects"`
	FirstError  string           `json:"first_error,omitempty"`
}

type worker struct {
	lat        []time.Duration
	status     map[int]int64
	errors     int64
	reconnects int64
	firstErr   error
}

func main() {
	var hdrs, urls headers
	flag.Var(&urls, "url", "URL to load (http only); more than once: the URLs are loaded in turn, a -slice at a time")
	conc := flag.Int("c", 16, "concurrency: workers, each with one connection")
	dur := flag.Duration("d", 10*time.Second, "measured duration")
	warmup := flag.Duration("warmup", time.Second, "unmeasured warm-up before the measured duration")
	method := flag.String("method", "", "request method (default GET, POST with -body)")
	body := flag.String("body", "", "request body, or @FILE to send a file")
	flag.Var(&hdrs, "header", "request header \"Name: value\" (repeatable)")
	timeout := flag.Duration("timeout", 30*time.Second, "per-request timeout")
	format := flag.String("format", "text", "text or json")
	label := flag.String("label", "", "label copied into the JSON (with several -url: comma-separated, one per URL)")
	slice := flag.Duration("slice", 250*time.Millisecond, "with several -url: how long each is loaded at a time")
	flag.Parse()
	var err error
	switch len(urls) {
	case 0:
		err = errors.New("-url is required")
	case 1:
		err = run(urls[0], *conc, *dur, *warmup, *method, *body, hdrs, *timeout, *format, *label)
	default:
		err = runMany(urls, strings.Split(*label, ","), *conc, *dur, *warmup, *slice, *method, *body, hdrs, *timeout, *format)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// parseTarget checks a -url and returns it with its host:port.
func parseTarget(rawURL string) (*url.URL, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, "", fmt.Errorf("-url must be an http:// URL, not %q", rawURL)
	}
	addr := u.Host
	if u.Port() == "" {
		addr += ":80"
	}
	return u, addr, nil
}

// requestBody reads -body (@FILE: the file) and settles the method.
func requestBody(method, body string) (string, []byte, error) {
	var payload []byte
	if strings.HasPrefix(body, "@") {
		var err error
		if payload, err = os.ReadFile(body[1:]); err != nil {
			return "", nil, err
		}
	} else {
		payload = []byte(body)
	}
	if method == "" {
		method = "GET"
		if len(payload) > 0 {
			method = "POST"
		}
	}
	return method, payload, nil
}

func runMany(urls, labels []string, conc int, dur, warmup, slice time.Duration, method, body string, hdrs []string, timeout time.Duration, format string) error {
	if conc < 1 {
		return errors.New("-c must be at least 1")
	}
	method, payload, err := requestBody(method, body)
	if err != nil {
		return err
	}
	res, err := runInterleaved(urls, labels, conc, dur, warmup, slice, method, payload, hdrs, timeout)
	if err != nil {
		return err
	}
	if format == "json" {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("interleaved, %d targets, c=%d, slices of %.0fms, %d cycles measured\n", len(urls), conc, res.SliceMs, len(res.Cycles))
	for _, t := range res.Targets {
		fmt.Printf("  %s %s: requests %d  req/s %.0f  errors %d  non-2xx %d  p50 %.3f  p99 %.3f ms\n",
			t.Label, t.URL, t.Requests, t.RPS, t.Errors, t.Non2xx, t.P50Ms, t.P99Ms)
	}
	if len(res.Ratios) > 0 {
		fmt.Printf("  median per-cycle ratio first/second: %.3f\n", median(slices.Clone(res.Ratios)))
	}
	return nil
}

func run(rawURL string, conc int, dur, warmup time.Duration, method, body string, hdrs []string, timeout time.Duration, format, label string) error {
	u, addr, err := parseTarget(rawURL)
	if err != nil {
		return err
	}
	if conc < 1 {
		return errors.New("-c must be at least 1")
	}
	method, payload, err := requestBody(method, body)
	if err != nil {
		return err
	}
	req := buildRequest(method, u, payload, hdrs)
	head := method == "HEAD"

	start := time.Now()
	measure := start.Add(warmup)
	end := measure.Add(dur)
	workers := make([]*worker, conc)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{status: map[int]int64{}, lat: make([]time.Duration, 0, 1<<14)}
		workers[i] = w
		wg.Go(func() { w.run(addr, req, head, timeout, measure, end) })
	}
	wg.Wait()

	res := Result{Label: label, URL: rawURL, Method: method, Concurrency: conc, Seconds: dur.Seconds(), Status: map[string]int64{}}
	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.lat...)
		res.Errors += w.errors
		res.Reconnects += w.reconnects
		for c, n := range w.status {
			res.Status[strconv.Itoa(c)] += n
			if c < 200 || c > 299 {
				res.Non2xx += n
			}
		}
		if w.firstErr != nil && res.FirstError == "" {
			res.FirstError = w.firstErr.Error()
		}
	}
	res.Requests = int64(len(all))
	res.RPS = float64(res.Requests) / dur.Seconds()
	fillLatency(&res, all)
	if format == "json" {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("%s %s  c=%d  %.0fs\n", method, rawURL, conc, dur.Seconds())
	fmt.Printf("  requests %d  req/s %.0f  errors %d  non-2xx %d  reconnects %d\n", res.Requests, res.RPS, res.Errors, res.Non2xx, res.Reconnects)
	fmt.Printf("  latency ms: mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
		res.MeanMs, res.P50Ms, res.P90Ms, res.P99Ms, res.P999Ms, res.MaxMs)
	if res.FirstError != "" {
		fmt.Printf("  first error: %s\n", res.FirstError)
	}
	return nil
}

// fillLatency sets res's latency figures from all (which it sorts).
func fillLatency(res *Result, all []time.Duration) {
	if len(all) > 0 {
		slices.Sort(all)
		var sum time.Duration
		for _, d := range all {
			sum += d
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		pct := func(p float64) float64 {
			k := max(min(int(math.Ceil(float64(len(all))*p-1e-9))-1, len(all)-1), 0)
			return ms(all[k])
		}
		res.MeanMs = ms(sum / time.Duration(len(all)))
		res.P50Ms, res.P90Ms, res.P99Ms, res.P999Ms = pct(0.5), pct(0.9), pct(0.99), pct(0.999)
		res.MaxMs = ms(all[len(all)-1])
	}
}

func buildRequest(method string, u *url.URL, body []byte, hdrs []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: atelier-loadgen\r\n", method, u.RequestURI(), u.Host)
	for _, h := range hdrs {
		k, v, _ := strings.Cut(h, ":")
		fmt.Fprintf(&b, "%s: %s\r\n", strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if len(body) > 0 || method == "POST" || method == "PUT" || method == "PATCH" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

func (w *worker) fail(err error) {
	w.errors++
	if w.firstErr == nil {
		w.firstErr = err
	}
}

func (w *worker) run(addr string, req []byte, head bool, timeout time.Duration, measure, end time.Time) {
	c := &conn{}
	defer c.close()
	for {
		t0 := time.Now()
		if !t0.Before(end) {
			return
		}
		status, reopen, err := c.do(addr, req, head, timeout, t0)
		t1 := time.Now()
		if reopen {
			w.reconnects++
		}
		if err != nil {
			if c.dialFailed {
				if !t0.Before(measure) {
					w.fail(err)
				}
				time.Sleep(10 * time.Millisecond)
			} else if !t0.Before(measure) && t1.Before(end) {
				w.fail(err)
			}
			continue
		}
		if !t0.Before(measure) && !t1.After(end) {
			w.lat = append(w.lat, t1.Sub(t0))
			w.status[status]++
		}
	}
}

// conn is a worker's keep-alive connection, dialled when needed.
type conn struct {
	c          net.Conn
	br         *bufio.Reader
	dialFailed bool // the last do failed to connect
}

// do sends req and reads the response. reopen reports that the connection
// was closed after it (an error, or the server's wish), so the next do
// dials again.
func (c *conn) do(addr string, req []byte, head bool, timeout time.Duration, t0 time.Time) (status int, reopen bool, err error) {
	c.dialFailed = false
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			c.dialFailed = true
			return 0, false, err
		}
		c.c = nc
		if c.br == nil {
			c.br = bufio.NewReaderSize(nc, 64<<10)
		} else {
			c.br.Reset(nc)
		}
	}
	c.c.SetDeadline(t0.Add(timeout))
	status, keep, err := roundTrip(c.c, c.br, req, head)
	if err != nil || !keep {
		c.close()
		return status, true, err
	}
	return status, false, nil
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// roundTrip writes req and reads one response, discarding its body. keep
// reports whether the connection may carry the next request.
func roundTrip(conn net.Conn, br *bufio.Reader, req []byte, head bool) (status int, keep bool, err error) {
	if _, err := conn.Write(req); err != nil {
		return 0, false, err
	}
	for {
		line, err := readLine(br)
		if err != nil {
			return 0, false, err
		}
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
			return 0, false, fmt.Errorf("bad status line %q", line)
		}
		status, err = strconv.Atoi(string(line[9:12]))
		if err != nil {
			return 0, false, fmt.Errorf("bad status line %q", line)
		}
		keep = line[7] == '1'
		cl, chunked := int64(-1), false
		for {
			h, err := readLine(br)
			if err != nil {
				return 0, false, err
			}
			if len(h) == 0 {
				break
			}
			k, v, ok := bytes.Cut(h, []byte(":"))
			if !ok {
				continue
			}
			v = bytes.TrimSpace(v)
			switch {
			case bytes.EqualFold(k, []byte("Content-Length")):
				if cl, err = strconv.ParseInt(string(v), 10, 64); err != nil {
					return 0, false, fmt.Errorf("bad Content-Length %q", v)
				}
			case bytes.EqualFold(k, []byte("Transfer-Encoding")):
				chunked = bytes.Contains(bytes.ToLower(v), []byte("chunked"))
			case bytes.EqualFold(k, []byte("Connection")):
				if bytes.EqualFold(v, []byte("close")) {
					keep = false
				} else if bytes.EqualFold(v, []byte("keep-alive")) {
					keep = true
				}
			}
		}
		if status >= 100 && status < 200 {
			continue // informational: the real response follows
		}
		switch {
		case head || status == 204 || status == 304:
		case chunked:
			if err := discardChunked(br); err != nil {
				return 0, false, err
			}
		case cl >= 0:
			if _, err := br.Discard(int(cl)); err != nil {
				return 0, false, err
			}
		default: // until close
			io.Copy(io.Discard, br)
			keep = false
		}
		return status, keep, nil
	}
}

func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

func discardChunked(br *bufio.Reader) error {
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		sz, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(sz)), 16, 64)
		if err != nil {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			for { // trailers up to the empty line
				l, err := readLine(br)
				if err != nil {
					return err
				}
				if len(l) == 0 {
					return nil
				}
			}
		}
		if _, err := br.Discard(int(n) + 2); err != nil {
			return err
		}
	}
}
