package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/errs"
)

// logPageSize is how many lines one request of `job logs` asks for.
const logPageSize = 1000

func (j *jobCmds) logs() *cobra.Command {
	var (
		follow, timestamps bool
		attempt            int
	)
	cmd := &cobra.Command{
		Use:   "logs JOB",
		Short: "Print a job's log (stdout and stderr of every attempt)",
		Long: `Print the log of a job: the merged stdout and stderr of its user code and the
platform's own lines (staging, installing requirements), attempt after
attempt. With -f, keep printing new lines until the job ends (Ctrl-C stops
earlier); a dropped connection is resumed where it stopped. --attempt N
prints only the Nth attempt. With -o json the API object {"lines", "next"} is
printed, or with -f one JSON line per log line.`,
		Args: exactArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if attempt < 0 {
				return usagef("--attempt must be 1 or more")
			}
			c, id, err := j.clientAndJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			p := &logPrinter{a: j.a, timestamps: timestamps, attempt: attempt}
			if follow {
				return j.followLogs(cmd.Context(), c, id, p)
			}
			return j.printLogs(cmd.Context(), c, id, p)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until the job ends")
	cmd.Flags().BoolVar(&timestamps, "timestamps", false, "start each line with its time")
	cmd.Flags().IntVar(&attempt, "attempt", 0, "print only this attempt (1 is the first run)")
	return cmd
}

// logPrinter writes log lines in the selected format.
type logPrinter struct {
	a          *app
	timestamps bool
	attempt    int // only this attempt; 0 = all
	last       int // attempt of the last line printed
	collected  []api.LogLine
}

// attemptDone stops reading once the lines of the wanted attempt are all
// printed.
type attemptDone struct{}

func (attemptDone) Error() string { return "attempt printed" }

// startCursor is where reading starts: before the wanted attempt.
func (p *logPrinter) startCursor() string {
	if p.attempt > 0 {
		return fmt.Sprintf("%d.0", p.attempt)
	}
	return ""
}

// line prints one streamed line.
func (p *logPrinter) line(l api.LogLine) error {
	if p.attempt > 0 {
		if l.Attempt > p.attempt {
			return attemptDone{}
		}
		if l.Attempt < p.attempt {
			return nil
		}
	}
	w := p.a.stdout
	var err error
	switch p.a.output {
	case formatJSON:
		var b []byte
		if b, err = json.Marshal(l); err == nil {
			_, err = fmt.Fprintf(w, "%s\n", b)
		}
	case formatYAML:
		var b []byte
		if b, err = yaml.Marshal(l); err == nil {
			_, err = fmt.Fprintf(w, "---\n%s", b)
		}
	default:
		if p.last != 0 && l.Attempt != p.last {
			p.a.note("--- attempt %d ---", l.Attempt)
		}
		if p.timestamps {
			_, err = fmt.Fprintf(w, "%s %s\n", time.UnixMilli(l.Time).Local().Format("2006-01-02T15:04:05.000Z07:00"), l.Text)
		} else {
			_, err = fmt.Fprintln(w, l.Text)
		}
	}
	p.last = l.Attempt
	if err != nil {
		return errs.E("cli.job.logs", errs.IO, fmt.Sprintf("cannot write the log: %v", err))
	}
	return nil
}

// printLogs prints the log as it is now, page by page; with -o json or
// yaml the lines are collected and printed as one api.JobLogs.
func (j *jobCmds) printLogs(ctx context.Context, c *client.Client, id string, p *logPrinter) error {
	structured := j.a.output != formatTable
	after := p.startCursor()
	next := after
pages:
	for {
		page, err := c.JobLogs(ctx, id, after, logPageSize)
		if err != nil {
			return err
		}
		next = page.Next
		for _, l := range page.Lines {
			if p.attempt > 0 && l.Attempt > p.attempt {
				break pages
			}
			if structured {
				if p.attempt == 0 || l.Attempt == p.attempt {
					p.collected = append(p.collected, l)
				}
				continue
			}
			if err := p.line(l); err != nil {
				return err
			}
		}
		if len(page.Lines) == 0 || page.Next == "" || page.Next == after {
			break
		}
		after = page.Next
	}
	if structured {
		if p.collected == nil {
			p.collected = []api.LogLine{}
		}
		return j.a.show(&api.JobLogs{Lines: p.collected, Next: next}, nil)
	}
	return nil
}

// followLogs prints the log until the server ends the stream (the job
// ended) or the wanted attempt is printed.
func (j *jobCmds) followLogs(ctx context.Context, c *client.Client, id string, p *logPrinter) error {
	opts := client.FollowOptions{OnReconnect: func(err error, failures int) {
		if failures == 1 {
			j.a.note("log stream interrupted (%s); reconnecting", errs.UserMessage(err))
		}
	}}
	err := c.FollowJobLogsWith(ctx, id, p.startCursor(), opts, p.line)
	if errors.As(err, new(attemptDone)) {
		return nil
	}
	return err
}

func (j *jobCmds) wait() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait JOB",
		Short: "Wait for a job to end; exit 0 only if it Completed",
		Long: `Wait until a job ends. The exit code is 0 when it Completed; otherwise the
phase, the classified failure and a hint are printed on stderr and the exit
code is 1 (also when --timeout passes first). A server that is restarted
meanwhile is waited for. With -o json the final job is printed.`,
		Args: exactArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 {
				return usagef("--timeout must not be negative")
			}
			c, id, err := j.clientAndJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			job, err := j.waitJob(cmd.Context(), c, id, timeout)
			if err != nil {
				return err
			}
			return j.finish(job, true)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long, e.g. 30m or 2h (default: no limit)")
	return cmd
}

// waitJob polls a job until it is in a terminal phase. Between polls it
// waits for the capacity ledger to change (queueWatch), at most
// j.poll.First growing to j.poll.Max, and prints each change of what the
// job waits for and of its queue position on stderr; a job that can never
// fit ends the wait at once (exit 1). An unreachable server is retried for
// j.poll.Outage.
func (j *jobCmds) waitJob(ctx context.Context, c *client.Client, id string, timeout time.Duration) (*api.Job, error) {
	const op errs.Op = "cli.job.wait"
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var (
		last         *api.Job
		delay        = j.poll.First
		failingSince time.Time
		q            = &queueWatch{a: j.a, c: c, subject: "job " + id}
	)
	timedOut := func() error {
		what := "job " + id
		phase := "not ended"
		if last != nil {
			what = "job " + jobRef(last)
			phase = "still " + phaseOf(last)
		}
		msg := fmt.Sprintf("%s is %s after %s", what, phase, timeout)
		if l := q.lastLine(); l != "" {
			msg += "; " + l
		}
		return errs.E(op, errs.Unavailable, codeJobWaitLimit, msg,
			errs.Hint(fmt.Sprintf("wait again with a longer --timeout, or stop it with `atelier job stop %s`", id)))
	}
	q.refresh(wctx)
	for {
		job, err := c.GetJob(wctx, id)
		switch {
		case err == nil:
			failingSince, last = time.Time{}, job
			q.subject = "job " + jobRef(job)
			st := q.jobState(job)
			q.note(st, phaseOf(job))
			if client.JobEnded(phaseOf(job)) {
				return job, nil
			}
			if st.never {
				return nil, neverError(op, q.subject, st.reason,
					fmt.Sprintf("stop it with `atelier job stop %s` and create it with a smaller flavor; `atelier capacity` shows what the machine can book", id))
			}
		case ctx.Err() == nil && wctx.Err() != nil:
			return nil, timedOut()
		case transient(err):
			if failingSince.IsZero() {
				failingSince = time.Now()
				j.a.note("cannot reach the server (%s); still waiting", errs.UserMessage(err))
			} else if time.Since(failingSince) > j.poll.Outage {
				return nil, err
			}
		default:
			return nil, err
		}
		if err := q.pause(wctx, delay); err != nil {
			if ctx.Err() == nil {
				return nil, timedOut()
			}
			return nil, errs.E(op, "waiting interrupted", err)
		}
		delay = min(delay*3/2, j.poll.Max)
	}
}

// transient reports whether err may go away by itself: no answer from the
// server, or a gateway's or a restarting server's 502/503/504.
func transient(err error) bool {
	switch client.StatusOf(err) {
	case 502, 503, 504:
		return true
	case 0:
		return errs.KindOf(err) == errs.Unavailable
	}
	return false
}

// sleepFor waits for d or until ctx is done.
func sleepFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// finish reports how an ended job ended: nil when it Completed, else an
// error naming the phase, the classified failure and its hint. With show,
// JSON and YAML output print the job.
func (j *jobCmds) finish(job *api.Job, show bool) error {
	phase := phaseOf(job)
	var dur int64
	if job.Status != nil {
		dur = job.Status.Duration
	}
	if show && j.a.output != formatTable {
		if err := j.a.show(job, nil); err != nil {
			return err
		}
	}
	if phase == api.PhaseCompleted {
		j.a.done("job %s Completed in %s", jobRef(job), durationMs(dur))
		return nil
	}
	msg, hint := "no failure was reported", ""
	if ts, ok := failureOf(job); ok {
		msg, hint = ts.Message, ts.Hint
	} else if sp := secondaryOf(job); sp != "-" && sp != phase {
		msg = "secondary phase " + sp
	}
	if hint == "" {
		hint = fmt.Sprintf("see `atelier job logs %s` and `atelier job events %s`", job.Metadata.ID, job.Metadata.ID)
	}
	return errs.E("cli.job.wait", codeJobFailed, fmt.Sprintf("job %s ended %s: %s", jobRef(job), phase, msg), errs.Hint(hint))
}

// followAndFinish streams a job's log until it ends, then reports how it
// ended like `job wait`.
func (j *jobCmds) followAndFinish(ctx context.Context, c *client.Client, id string) error {
	if err := j.followLogs(ctx, c, id, &logPrinter{a: j.a}); err != nil {
		return err
	}
	job, err := j.waitJob(ctx, c, id, 0)
	if err != nil {
		return err
	}
	return j.finish(job, false)
}
