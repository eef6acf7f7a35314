package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Log streams.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	StreamRunner = "runner"
)

const (
	// MaxLineBytes is the longest log line; longer output is split.
	MaxLineBytes = 64 << 10
	// tailLines is how many of user code's last lines the failure
	// classification sees.
	tailLines = 200
	// batchLines and batchBytes bound one POST …/logs.
	batchLines = 500
	batchBytes = 1 << 20
)

// logSink numbers the lines of an attempt (seq from 1, strictly
// increasing, user code's and the runner's own), keeps the full log in
// job.log and the undelivered lines in the spool, and remembers the last
// lines of user code. Without a spool (a notebook's) nothing is delivered.
type logSink struct {
	attempt int
	log     *slog.Logger
	now     func() time.Time

	mu          sync.Mutex
	seq         int64
	spool       *spool
	full        *os.File // job.log
	fullBytes   int64    // its size
	fullLimit   int64    // its limit (0: DefaultFullLogLimit)
	tail        []string // ring of user code's last lines
	tailAt      int
	firstStderr string
	unsent      int // lines appended since the deliverer last woke

	lastOutput atomic.Int64 // ms of user code's last line
	wake       chan struct{}
	// sending serializes batches: the deliverer and the final flush must
	// not send the same lines at once.
	sending sync.Mutex
}

func newLogSink(attempt int, sp *spool, full *os.File, log *slog.Logger) *logSink {
	k := &logSink{attempt: attempt, spool: sp, full: full, log: log, now: time.Now, wake: make(chan struct{}, 1)}
	if full != nil {
		if fi, err := full.Stat(); err == nil {
			k.fullBytes = fi.Size()
		}
	}
	return k
}

// add appends texts of one stream as lines.
func (k *logSink) add(stream string, texts []string) {
	if len(texts) == 0 {
		return
	}
	now := k.now()
	ms := now.UnixMilli()
	k.mu.Lock()
	defer k.mu.Unlock()
	lines := make([]api.LogLine, len(texts))
	var full strings.Builder
	for i, t := range texts {
		k.seq++
		lines[i] = api.LogLine{Attempt: k.attempt, Seq: k.seq, Time: ms, Stream: stream, Text: t}
		if stream == StreamRunner {
			full.WriteString("[atelier] ")
		} else {
			k.remember(t)
			if stream == StreamStderr && k.firstStderr == "" {
				k.firstStderr = t
			}
		}
		full.WriteString(t)
		full.WriteByte('\n')
	}
	if stream != StreamRunner {
		k.lastOutput.Store(ms)
	}
	k.writeFull(full.String())
	if k.spool == nil {
		return // a notebook's log: kept in its file only
	}
	dropped, err := k.spool.append(lines)
	if err != nil {
		k.log.Error("log lines cannot be buffered for delivery", "err", err)
		return
	}
	if dropped > 0 {
		k.seq++
		msg := fmt.Sprintf("%d log lines were dropped: the server was unreachable and the log buffer (%d MiB) was full", dropped, k.spool.max>>20)
		k.log.Warn(msg)
		_, _ = k.spool.append([]api.LogLine{{Attempt: k.attempt, Seq: k.seq, Time: ms, Stream: StreamRunner, Text: msg}})
		k.writeFull("[atelier] " + msg + "\n")
	}
	k.unsent += len(texts)
	if k.unsent >= batchLines {
		k.unsent = 0
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
}

// DefaultFullLogLimit bounds the full log file of a workload (job.log,
// instance.log): what user code prints past it is still delivered to the
// server, but no longer kept in the file, so no workload fills the disk
// of the work dir with output.
const DefaultFullLogLimit = 1 << 30

// writeFull appends s to the full log, up to its limit, where it says
// once that the file ends there. Called with mu held.
func (k *logSink) writeFull(s string) {
	if k.full == nil {
		return
	}
	limit := k.fullLimit
	if limit <= 0 {
		limit = DefaultFullLogLimit
	}
	if k.fullBytes+int64(len(s)) > limit {
		_, _ = k.full.WriteString(fmt.Sprintf("[atelier] this log file stops here: it reached its limit of %d MiB\n", limit>>20))
		k.full = nil
		return
	}
	if _, err := k.full.WriteString(s); err != nil {
		k.log.Warn("cannot write the full log", "err", err)
		k.full = nil
		return
	}
	k.fullBytes += int64(len(s))
}

// remember keeps t among the last tailLines lines. Called with mu held.
func (k *logSink) remember(t string) {
	if len(k.tail) < tailLines {
		k.tail = append(k.tail, t)
		return
	}
	k.tail[k.tailAt] = t
	k.tailAt = (k.tailAt + 1) % tailLines
}

// Runner logs a message of the runner into the job log (stream "runner")
// and runner.log.
func (k *logSink) Runner(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	k.log.Info(msg)
	k.add(StreamRunner, splitText(msg))
}

// splitText splits a message into lines of at most MaxLineBytes.
func splitText(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		for len(l) > MaxLineBytes {
			out = append(out, l[:MaxLineBytes])
			l = l[MaxLineBytes:]
		}
		out = append(out, strings.TrimSuffix(l, "\r"))
	}
	return out
}

// Tail is user code's last lines, oldest first.
func (k *logSink) Tail() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]string, 0, len(k.tail))
	out = append(out, k.tail[k.tailAt:]...)
	return append(out, k.tail[:k.tailAt]...)
}

// FirstStderr is the first line user code (or the sandbox) wrote to stderr.
func (k *logSink) FirstStderr() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.firstStderr
}

// LastSeq is the seq of the last line.
func (k *logSink) LastSeq() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seq
}

// read copies r into the sink as lines of stream until EOF or an error,
// splitting lines longer than MaxLineBytes and handing over the lines that
// arrived together in one batch.
func (k *logSink) read(stream string, r io.Reader) {
	br := bufio.NewReaderSize(r, MaxLineBytes)
	var texts []string
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			t := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			texts = append(texts, strings.ToValidUTF8(t, "\uFFFD"))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			k.add(stream, texts)
			return
		}
		if br.Buffered() == 0 || len(texts) >= batchLines {
			k.add(stream, texts)
			texts = nil
		}
	}
}

// deliver sends the spool's lines to the server in batches, every interval
// or as soon as batchLines are waiting, until ctx ends. A failed batch stays
// in the spool and is sent again after a backoff; the server stores a line
// once however often it arrives.
func (k *logSink) deliver(ctx context.Context, srv *server, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	b := newBackoff(interval, 5*time.Second)
	for {
		sent, err := k.sendOne(ctx, srv)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			k.log.Warn("cannot deliver log lines; keeping them", "err", err)
			if !b.wait(ctx) {
				return
			}
			continue
		case sent:
			b = newBackoff(interval, 5*time.Second)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.wake:
		}
	}
}

// sendOne sends one batch; sent is false when nothing was waiting.
func (k *logSink) sendOne(ctx context.Context, srv *server) (sent bool, err error) {
	k.sending.Lock()
	defer k.sending.Unlock()
	b, err := k.spool.peek(batchLines, batchBytes)
	if err != nil {
		return false, err
	}
	if len(b.Lines) == 0 {
		if b.end > 0 {
			k.spool.ack(b) // lines already delivered or dropped
		}
		return false, nil
	}
	err = srv.call(ctx, "POST", "logs", api.RunnerLogs{Attempt: k.attempt, Lines: b.Lines}, nil)
	if err != nil && temporary(err) {
		return false, err
	}
	if err != nil {
		// The server refuses this batch for good; keeping it would stop
		// every later line.
		k.log.Error("the server refused log lines; dropping them", "first_seq", b.Lines[0].Seq, "lines", len(b.Lines), "err", err)
	}
	k.spool.ack(b)
	return true, nil
}

// flush delivers what the spool holds, for at most limit; it reports
// whether everything was delivered.
func (k *logSink) flush(ctx context.Context, srv *server, limit time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	b := newBackoff(100*time.Millisecond, 2*time.Second)
	for k.spool.pending() {
		sent, err := k.sendOne(ctx, srv)
		if err != nil || !sent {
			if !b.wait(ctx) {
				return false
			}
		}
	}
	return true
}

// openJobLog opens the attempt's full log for appending.
func openJobLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, errs.E("runner.openJobLog", errs.IO, CodeLogBuffer, because(fmt.Sprintf("cannot create %s", path), err), err)
	}
	return f, nil
}
