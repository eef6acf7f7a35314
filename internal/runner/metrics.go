package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/userfs"
)

// Metric kinds.
const (
	KindSystem = "system"
	KindUser   = "user"
)

const (
	// maxQueuedSamples bounds the samples kept while the server is away;
	// the oldest go first.
	maxQueuedSamples = 10000
	// maxMetricWarnings is how many malformed lines of the metrics file
	// are reported in the job log.
	maxMetricWarnings = 10
	// maxMetricLine is the longest line of the metrics file read.
	maxMetricLine = 1 << 20
	// maxMetricRead bounds what one poll of the metrics file reads.
	maxMetricRead = 8 << 20
)

// userMetric is one line of the metrics file: {"time": ms, "step": int|null,
// "values": {name: number}}.
type userMetric struct {
	Time   int64
	Step   *int64
	Values map[string]float64
}

// parseMetricLine parses one line of the metrics file written by
// atelier.report. Non-finite values (Python writes NaN and Infinity) are
// left out; a line without any finite value is an error.
func parseMetricLine(line []byte) (userMetric, error) {
	const op errs.Op = "runner.parseMetricLine"
	bad := func(why string) error {
		return errs.E(op, errs.Invalid, CodeMetricLine, why)
	}
	var raw struct {
		Time   *float64            `json:"time"`
		Step   *float64            `json:"step"`
		Values map[string]*float64 `json:"values"`
	}
	d := json.NewDecoder(bytes.NewReader(nullNonFinite(bytes.TrimSpace(line))))
	if err := d.Decode(&raw); err != nil {
		return userMetric{}, bad("not a JSON object {\"time\", \"step\", \"values\"}: " + err.Error())
	}
	if d.More() {
		return userMetric{}, bad("data after the JSON object")
	}
	var m userMetric
	if raw.Time != nil {
		if *raw.Time < 0 || *raw.Time > 1e15 {
			return userMetric{}, bad("time is not milliseconds since 1970")
		}
		m.Time = int64(*raw.Time)
	}
	if raw.Step != nil {
		s := *raw.Step
		if s != math.Trunc(s) || math.Abs(s) > 1<<53 {
			return userMetric{}, bad("step is not an integer")
		}
		n := int64(s)
		m.Step = &n
	}
	m.Values = map[string]float64{}
	for k, v := range raw.Values {
		if k == "" {
			return userMetric{}, bad("a value has an empty name")
		}
		if v != nil {
			m.Values[k] = *v
		}
	}
	if len(m.Values) == 0 {
		return userMetric{}, bad("no numeric values")
	}
	return m, nil
}

// nullNonFinite replaces the tokens NaN, Infinity and -Infinity outside
// strings by null, so the line parses as JSON.
func nullNonFinite(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	var out []byte
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		replaced := false
		for _, tok := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(b[i:], []byte(tok)) {
				out = append(out, "null"...)
				i += len(tok) - 1
				replaced = true
				break
			}
		}
		if replaced {
			continue
		}
		if c == '"' {
			inStr = true
		}
		out = append(out, c)
	}
	return out
}

// gpuUsage is what nvidia-smi reports for the job's GPUs.
type gpuUsage struct {
	Util   float64 // mean utilization, percent
	Memory int64   // bytes used, all GPUs together
	Count  int
}

// parseNvidiaSMI reads the output of nvidia-smi
// --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits:
// one "util, MiB" line per GPU. "[N/A]"-style fields count as 0.
func parseNvidiaSMI(out []byte) (gpuUsage, error) {
	var g gpuUsage
	var sum float64
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 2 {
			return gpuUsage{}, errs.E("runner.parseNvidiaSMI", errs.Invalid, CodeNvidiaSMI,
				fmt.Sprintf("nvidia-smi printed %q, not \"utilization, memory\"", line))
		}
		num := func(s string) (float64, error) {
			s = strings.TrimSpace(s)
			if strings.HasPrefix(s, "[") {
				return 0, nil
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return 0, errs.E("runner.parseNvidiaSMI", errs.Invalid, CodeNvidiaSMI,
					fmt.Sprintf("nvidia-smi printed %q, not a number", s))
			}
			return v, nil
		}
		u, err := num(f[0])
		if err != nil {
			return gpuUsage{}, err
		}
		m, err := num(f[1])
		if err != nil {
			return gpuUsage{}, err
		}
		sum += u
		g.Memory += int64(m * (1 << 20))
		g.Count++
	}
	if g.Count > 0 {
		g.Util = sum / float64(g.Count)
	}
	return g, nil
}

// queryGPUs runs nvidia-smi for the GPUs of the job; ok is false when
// nvidia-smi is not installed or the job has no GPU.
func queryGPUs(ctx context.Context, gpus []int) (g gpuUsage, ok bool, err error) {
	if len(gpus) == 0 {
		return gpuUsage{}, false, nil
	}
	bin, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return gpuUsage{}, false, nil
	}
	ids := make([]string, len(gpus))
	for i, id := range gpus {
		ids[i] = strconv.Itoa(id)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--query-gpu=utilization.gpu,memory.used",
		"--format=csv,noheader,nounits", "-i", strings.Join(ids, ",")).Output()
	if err != nil {
		return gpuUsage{}, true, errs.E("runner.queryGPUs", errs.IO, CodeNvidiaSMI, because("nvidia-smi failed", err), err)
	}
	g, err = parseNvidiaSMI(out)
	return g, true, err
}

// metricsOut queues samples (per-attempt seq) and delivers them in
// batches. While the server is away at most maxQueuedSamples are kept.
type metricsOut struct {
	attempt int
	log     *slog.Logger

	mu    sync.Mutex
	seq   int64
	queue []api.MetricSample

	sending sync.Mutex // one batch at a time
}

// add queues a sample taken at t.
func (m *metricsOut) add(kind string, t time.Time, step *int64, values map[string]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	m.queue = append(m.queue, api.MetricSample{Attempt: m.attempt, Seq: m.seq, Time: t.UnixMilli(), Kind: kind, Step: step, Values: values})
	if over := len(m.queue) - maxQueuedSamples; over > 0 {
		m.queue = append(m.queue[:0], m.queue[over:]...)
	}
}

// sendOne posts the oldest queued samples; sent is false when none waited.
func (m *metricsOut) sendOne(ctx context.Context, srv *server) (sent bool, err error) {
	m.sending.Lock()
	defer m.sending.Unlock()
	m.mu.Lock()
	n := min(len(m.queue), batchLines)
	b := append([]api.MetricSample(nil), m.queue[:n]...)
	m.mu.Unlock()
	if n == 0 {
		return false, nil
	}
	err = srv.call(ctx, "POST", "metrics", api.RunnerMetrics{Attempt: m.attempt, Samples: b}, nil)
	if err != nil && temporary(err) {
		return false, err
	}
	if err != nil {
		m.log.Error("the server refused metric samples; dropping them", "samples", n, "err", err)
	}
	m.mu.Lock()
	// Samples dropped for room meanwhile shifted the queue: remove by seq.
	last := b[n-1].Seq
	i := 0
	for i < len(m.queue) && m.queue[i].Seq <= last {
		i++
	}
	m.queue = append(m.queue[:0], m.queue[i:]...)
	m.mu.Unlock()
	return true, nil
}

// deliver sends queued samples every interval until ctx ends.
func (m *metricsOut) deliver(ctx context.Context, srv *server, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	b := newBackoff(interval, 10*time.Second)
	for {
		sent, err := m.sendOne(ctx, srv)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			m.log.Warn("cannot deliver metrics; keeping them", "err", err)
			if !b.wait(ctx) {
				return
			}
			continue
		}
		if sent {
			b = newBackoff(interval, 10*time.Second)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// flush delivers the queue for at most limit.
func (m *metricsOut) flush(ctx context.Context, srv *server, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	b := newBackoff(100*time.Millisecond, 2*time.Second)
	for {
		sent, err := m.sendOne(ctx, srv)
		if err == nil && !sent {
			return
		}
		if err != nil && !b.wait(ctx) {
			return
		}
	}
}

// metricsTail reads the lines appended to the metrics file since the last
// poll.
type metricsTail struct {
	// dir and rel locate the file beneath the job's home; it is opened
	// there without following links (user code may replace it by one).
	dir      *userfs.Dir
	rel      string
	off      int64
	warnings int
	refused  string // the last refusal reported
	note     func(format string, args ...any)
}

// poll returns the complete lines added since the last poll; with final,
// also a last line without its newline. A file that shrank is read again
// from its start. A metrics file that is a symlink, a FIFO or anything but
// a regular file of the job is refused (once said in the job log).
func (t *metricsTail) poll(final bool) [][]byte {
	if t.dir == nil || t.rel == "" {
		return nil
	}
	f, err := t.dir.Open(t.rel)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			if msg := errs.UserMessage(err); msg != t.refused && t.note != nil {
				t.refused = msg
				t.note("warning: ATELIER_METRICS_FILE is not read: %s", msg)
			}
		}
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	if fi.Size() < t.off {
		t.off = 0
	}
	if fi.Size() == t.off {
		return nil
	}
	// At most maxMetricRead a poll: user code may append faster than it
	// is read, the rest waits for the next poll.
	data, err := io.ReadAll(io.NewSectionReader(f, t.off, min(fi.Size()-t.off, maxMetricRead)))
	if err != nil {
		return nil
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	if final {
		end = len(data)
	} else if end == 0 && len(data) > maxMetricLine {
		end = len(data) // a runaway line without newline: skip it
	}
	t.off += int64(end)
	var lines [][]byte
	for l := range bytes.SplitSeq(data[:end], []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	return lines
}

// warn reports a malformed line in the job log, up to maxMetricWarnings
// times.
func (t *metricsTail) warn(k *logSink, line []byte, err error) {
	t.warnings++
	switch {
	case t.warnings <= maxMetricWarnings:
		if len(line) > 200 {
			line = append(line[:200:200], "…"...)
		}
		k.Runner("warning: ignoring a line of %s: %s: %s", "ATELIER_METRICS_FILE", errs.UserMessage(err), line)
	case t.warnings == maxMetricWarnings+1:
		k.Runner("warning: more malformed lines in ATELIER_METRICS_FILE are ignored without notice")
	}
}
