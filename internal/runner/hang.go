package runner

import "time"

// hangDetector decides whether user code hangs: no output line for the
// timeout, and CPU time grown by less than 1% of one CPU over a window of
// at least the timeout, and the GPUs idle. It is pure: the caller feeds it
// readings.
type hangDetector struct {
	timeout time.Duration
	samples []cpuSample // oldest first; the first is at or before now-timeout once the window is covered
}

type cpuSample struct {
	at  time.Time
	cpu time.Duration
}

// observe records the CPU time used so far at now and reports whether the
// job is hung, given when user code last wrote a line (or started) and
// whether a GPU of the job is busy.
func (h *hangDetector) observe(now, lastOutput time.Time, cpu time.Duration, gpuBusy bool) bool {
	h.samples = append(h.samples, cpuSample{at: now, cpu: cpu})
	cut := now.Add(-h.timeout)
	i := 0
	for i+1 < len(h.samples) && !h.samples[i+1].at.After(cut) {
		i++
	}
	h.samples = h.samples[i:]
	if h.timeout <= 0 || gpuBusy || now.Sub(lastOutput) < h.timeout {
		return false
	}
	first := h.samples[0]
	if first.at.After(cut) {
		return false // not watched for a whole timeout yet
	}
	window := now.Sub(first.at)
	return cpu-first.cpu < window/100
}
