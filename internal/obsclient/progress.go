package obsclient

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/atelier-dev/atelier/internal/text"
)

// Reporter follows a run of transfers. Progress is called from many
// goroutines at once; implementations must be safe for that.
type Reporter interface {
	// Begin is called once the plan is known, with the number of
	// transfers and their bytes.
	Begin(files int, bytes int64)
	// Progress adds n bytes moved; n is negative when a retried request
	// rewinds its body.
	Progress(n int64)
	// Warn reports something the user should know that is not an error.
	Warn(msg string)
	// Done is called once at the end of a successful run.
	Done(s Summary)
}

// Summary is the outcome of a run.
type Summary struct {
	Action    string // "uploaded", "downloaded", "copied", "moved" or "synced"
	Files     int    // transferred
	Bytes     int64  // transferred
	Unchanged int    // sync: already equal at the destination
	Deleted   int    // sync --delete: removed from the destination
	Skipped   int    // left out by the .git/__pycache__ rule
	Resumed   int64  // bytes of resumed uploads sent by an earlier run (not in Bytes)
	Elapsed   time.Duration
}

// String is the one-line summary, e.g. "uploaded 500 files, 1.9 MiB in
// 1.2s (1.6 MiB/s)".
func (s Summary) String() string {
	secs := s.Elapsed.Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(s.Bytes) / mib / secs
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s, %s in %.1fs (%.1f MiB/s)", s.Action, s.Files, text.Plural(s.Files, "file", "files"),
		text.Bytes(s.Bytes), secs, rate)
	if s.Resumed > 0 {
		fmt.Fprintf(&b, ", %s uploaded before", text.Bytes(s.Resumed))
	}
	if s.Unchanged > 0 {
		fmt.Fprintf(&b, ", %d unchanged", s.Unchanged)
	}
	if s.Deleted > 0 {
		fmt.Fprintf(&b, ", %d deleted", s.Deleted)
	}
	return b.String()
}

// Quiet is a Reporter that says nothing.
func Quiet() Reporter { return quiet{} }

type quiet struct{}

func (quiet) Begin(int, int64) {}
func (quiet) Progress(int64)   {}
func (quiet) Warn(string)      {}
func (quiet) Done(Summary)     {}

// NewSummaryReporter is the Reporter for output that is not a terminal:
// warnings go to warn as "atelier: warning: …" lines, and Done writes the
// summary line to out.
func NewSummaryReporter(out, warn io.Writer) Reporter {
	return &summaryReporter{out: out, warn: warn}
}

type summaryReporter struct {
	mu        sync.Mutex
	out, warn io.Writer
}

func (r *summaryReporter) Begin(int, int64) {}
func (r *summaryReporter) Progress(int64)   {}

func (r *summaryReporter) Warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.warn, "atelier: warning: %s\n", msg)
}

func (r *summaryReporter) Done(s Summary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(r.out, s.String())
}

// NewBarReporter is the Reporter for a terminal: a progress bar with bytes,
// rate and ETA on term (where warnings go too), and the summary line on out
// at the end.
func NewBarReporter(term, out io.Writer) Reporter {
	return &barReporter{term: term, out: out}
}

type barReporter struct {
	mu        sync.Mutex
	term, out io.Writer
	bar       *progressbar.ProgressBar
}

func (r *barReporter) Begin(files int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bar = progressbar.NewOptions64(max(bytes, 1),
		progressbar.OptionSetWriter(r.term),
		progressbar.OptionSetDescription(fmt.Sprintf("%d %s", files, text.Plural(files, "file", "files"))),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
}

func (r *barReporter) Progress(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		_ = r.bar.Add64(n)
	}
}

func (r *barReporter) Warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		_ = r.bar.Clear()
	}
	fmt.Fprintf(r.term, "atelier: warning: %s\n", msg)
	if r.bar != nil {
		_ = r.bar.RenderBlank()
	}
}

func (r *barReporter) Done(s Summary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		_ = r.bar.Finish()
	}
	fmt.Fprintln(r.out, s.String())
}

// stop removes the bar from the terminal after a failed run.
func (r *barReporter) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		_ = r.bar.Clear()
		_ = r.bar.Exit()
	}
}

// stopper is a Reporter that tidies the terminal after a failed run.
type stopper interface{ stop() }
