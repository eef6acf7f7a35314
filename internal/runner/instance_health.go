package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

// How a ready instance's model server is watched: a liveness probe every
// period (the first one a period after it became ready), GET /health/live
// with the instance's secret over its Unix socket, which must answer 200
// within the probe timeout. The model server answers the probe on its event
// loop, never behind a request, so a busy handler does not fail it; it
// answers 503 when every worker has been running one request for longer
// than the service's timeout (--stuck-after). The threshold of failed probes
// in a row fails the instance: the runner reports it Failed at once (the
// controller takes it out of the gateway's routes and restarts it with its
// backoff), then kills the model server.

// liveness counts failed probes in a row. It is pure: the caller feeds it
// the probes' outcomes.
type liveness struct {
	threshold int
	failed    int // probes failed in a row
}

// observe records a probe's outcome (why it failed, "" when it passed)
// and reports whether the instance has failed, with the message that says
// why: "liveness probe failed 3 times: no answer in 5s".
func (l *liveness) observe(why string) (dead bool, msg string) {
	if why == "" {
		l.failed = 0
		return false, ""
	}
	l.failed++
	if l.failed < max(l.threshold, 1) {
		return false, ""
	}
	times := "times"
	if l.failed == 1 {
		times = "time"
	}
	return true, fmt.Sprintf("liveness probe failed %d %s: %s", l.failed, times, why)
}

// probeFunc is one liveness probe with a timeout: "" when it passed, else
// why it failed.
type probeFunc func(ctx context.Context, timeout time.Duration) string

// watchLiveness probes every period of h until threshold probes in a row
// failed, and returns the message saying so; "" when ctx ends first. A
// probe that takes a period or longer is followed at once by the next.
func watchLiveness(ctx context.Context, h api.InstanceHealth, probe probeFunc) string {
	h = h.WithDefaults()
	period, timeout := seconds(h.LivenessPeriodSeconds), seconds(h.LivenessTimeoutSeconds)
	l := liveness{threshold: h.LivenessFailureThreshold}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ""
		case <-t.C:
		}
		why := probe(ctx, timeout)
		if ctx.Err() != nil {
			return ""
		}
		if dead, msg := l.observe(why); dead {
			return msg
		}
	}
}

// maxProbeAnswer bounds the body of a probe's answer that is read.
const maxProbeAnswer = 4 << 10

// probeLive is the liveness probe of the model server listening on the Unix
// socket sock: GET /health/live with the instance's secret on a new
// connection, answered 200 within timeout.
func probeLive(sock, secret string) probeFunc {
	return func(ctx context.Context, timeout time.Duration) string {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		noAnswer := "no answer in " + shortDuration(timeout)
		c, err := relay.DialUnix(ctx, &net.Dialer{}, sock)
		if err != nil {
			if ctx.Err() != nil {
				return noAnswer
			}
			return "cannot connect to the model server: " + err.Error()
		}
		defer c.Close()
		deadline, _ := ctx.Deadline()
		c.SetDeadline(deadline)
		req := "GET /health/live HTTP/1.1\r\nHost: instance\r\n" + api.InstanceSecretHeader + ": " + secret +
			"\r\nX-Request-Id: liveness-probe\r\nConnection: close\r\n\r\n"
		if _, err := io.WriteString(c, req); err != nil {
			return probeError(err, noAnswer)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return probeError(err, noAnswer)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(io.LimitReader(res.Body, maxProbeAnswer))
		if err != nil {
			return probeError(err, noAnswer)
		}
		if res.StatusCode == http.StatusOK {
			return ""
		}
		why := fmt.Sprintf("answered %d", res.StatusCode)
		var e api.Error
		if json.Unmarshal(body, &e) == nil && e.ErrorMsg != "" {
			why += ": " + e.ErrorMsg
		}
		return why
	}
}

// probeError is why a probe failed with err after it connected.
func probeError(err error, noAnswer string) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return noAnswer
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "the model server closed the connection without an answer"
	}
	return "no answer: " + err.Error()
}

// seconds is a number of seconds as a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// shortDuration formats a duration compactly: 5s, 1.5s, 10m, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
