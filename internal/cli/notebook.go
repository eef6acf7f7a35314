package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/text"
)

// Error codes of the notebook commands (ATL.NB.0080–0099).
const (
	codeNotebookFailed    errs.Code = "ATL.NB.0080" // notebook wait: it failed or stopped before it ran
	codeNotebookWaitLimit errs.Code = "ATL.NB.0081" // notebook wait: --timeout passed first
	codeNotebookNotAsked  errs.Code = "ATL.NB.0082" // notebook delete: not confirmed
)

const notebookHelp = `Jupyter notebooks on the platform's engines, reached only through the
server's notebook listener (its own origin), stopped when idle.

  atelier notebook create --name dev --flavor cpu.small --volume 10GiB --idle-stop 60m --wait
  atelier notebook open dev           # a single-use login link, opened in the browser
  atelier notebook get dev            # status, lease, and why it counts as active or idle
  atelier notebook extend dev --for 2h
  atelier notebook stop dev && atelier notebook start dev    # the work dir is kept
  atelier job create --from-notebook dev --boot-file train.py …

A notebook is idle when no kernel is busy, no cell was run and no terminal
had input for its idle-stop time, and its CPU is below the idle threshold;
an open browser tab alone does not keep it running. Where a command takes a
NOTEBOOK, it is an id or the name of one of your notebooks.`

type notebookCmds struct {
	a    *app
	poll pollPolicy
}

// newNotebookCmd builds `atelier notebook`.
func newNotebookCmd(a *app) *cobra.Command {
	n := &notebookCmds{a: a, poll: defaultPoll()}
	cmd := group("notebook", "Run Jupyter notebooks on the platform's engines",
		n.create(), n.list(), n.get(), n.start(), n.stop(), n.url(), n.open(), n.signOut(), n.extend(), n.events(), n.wait(), n.delete())
	cmd.Long = notebookHelp
	return cmd
}

func (n *notebookCmds) create() *cobra.Command {
	var (
		req                          api.CreateNotebookRequest
		volume, idleStop, maxRuntime string
		wait                         bool
		timeout                      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create --name NAME [--flavor FLAVOR]",
		Short: "Create a notebook and start it",
		Long: `Create a notebook: a Jupyter server with the engine's interpreter as its
kernel, the Python SDK (moxing, atelier) importable and OBS credentials for
your buckets. Its work dir /home/ma-user/work is a volume of --volume that
survives stops and restarts; a venv there (--system-site-packages over the
engine) keeps what you pip install. It stops after --idle-stop without work
("off": never) and after --max-runtime even when busy; a warning event
comes first.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if volume != "" {
				req.Volume = &api.NotebookVolumeRequest{Capacity: volume}
			}
			req.IdleStop, req.MaxRuntime = idleStop, maxRuntime
			c, err := n.a.client()
			if err != nil {
				return err
			}
			v, err := c.CreateNotebook(cmd.Context(), &req)
			if err != nil {
				return err
			}
			if wait {
				return n.waitAndShow(cmd.Context(), c, v.ID, timeout)
			}
			return n.a.show(v, func(w io.Writer) {
				fmt.Fprintf(w, "notebook %s (%s) is %s; `atelier notebook open %s` when it runs\n", v.Name, v.ID, v.Status, v.Name)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Name, "name", "", "notebook name (1-64 letters, digits, '.', '_' or '-')")
	f.StringVar(&req.Description, "description", "", "description")
	f.StringVar(&req.Engine, "engine", "", "engine of the kernel (default: the server's default engine)")
	f.StringVar(&req.Flavor, "flavor", "", "flavor (resource size; default: the first flavor)")
	f.StringVar(&volume, "volume", "", "size of the work dir, e.g. 10GiB (default: the server's notebooks.volume)")
	f.StringVar(&idleStop, "idle-stop", "", "stop after this long idle, e.g. 60m, or off (default: the server's notebooks.idle_stop)")
	f.StringVar(&maxRuntime, "max-runtime", "", "stop after this long running, even when busy, e.g. 8h (default: never)")
	f.BoolVar(&wait, "wait", false, "wait until Jupyter runs")
	f.DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (default: no limit)")
	return cmd
}

func (n *notebookCmds) list() *cobra.Command {
	var (
		lf   listFlags
		name string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List notebooks, newest first",
		Long:  "List notebooks, newest first. --name keeps notebooks whose name contains the text." + listHelp,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), n.a, lf, func(ctx context.Context, o client.ListOptions) (*api.List[api.Notebook], error) {
				return c.ListNotebooks(ctx, name, o)
			})
			if err != nil {
				return err
			}
			return n.a.show(l, func(w io.Writer) {
				row(w, "ID", "NAME", "STATUS", "ENGINE", "FLAVOR", "VOLUME", "ACTIVITY", "CREATED")
				for _, v := range l.Items {
					act := "-"
					if v.Activity != nil {
						act = v.Activity.State
					}
					row(w, v.ID, v.Name, statusWithReason(&v), v.Engine, v.Flavor, volumeWords(v.Volume), act, timeMs(v.CreateTime))
				}
			})
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "only notebooks whose name contains this text")
	return cmd
}

// statusWithReason is a notebook's status with why it stopped or failed.
func statusWithReason(v *api.Notebook) string {
	switch {
	case v.Status == api.NotebookStopped && v.StopReason != "":
		return v.Status + " (" + v.StopReason + ")"
	case v.Status == api.NotebookCreating && v.Waiting != "":
		return v.Status + " (waiting)"
	}
	return v.Status
}

func volumeWords(v api.NotebookVolume) string {
	if v.Used > 0 {
		return text.Bytes(v.Used) + " of " + text.Bytes(v.Capacity)
	}
	return text.Bytes(v.Capacity)
}

// leaseWords is a lease duration in ms, "never" for none.
func leaseWords(d int64) string {
	if d <= 0 {
		return "never"
	}
	return durationMs(d)
}

func (n *notebookCmds) get() *cobra.Command {
	return &cobra.Command{
		Use:   "get NOTEBOOK",
		Short: "Show a notebook: status, lease, volume, and why it counts as active or idle",
		Args:  exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			v, err := c.GetNotebook(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return n.a.show(v, func(w io.Writer) { notebookDetail(w, v, time.Now()) })
		},
	}
}

func notebookDetail(w io.Writer, v *api.Notebook, now time.Time) {
	field(w, "ID", v.ID)
	field(w, "Name", v.Name)
	if v.Description != "" {
		field(w, "Description", oneLine(v.Description))
	}
	field(w, "Status", statusWithReason(v))
	if v.FailReason != "" {
		field(w, "Failure", oneLine(v.FailReason))
	}
	if v.Waiting != "" {
		field(w, "Waiting", oneLine(v.Waiting))
	}
	field(w, "Engine", v.Engine+" (the kernel)")
	field(w, "Flavor", v.Flavor)
	field(w, "Volume", fmt.Sprintf("%s at %s (%s)", volumeWords(v.Volume), v.Volume.MountPath, orDash(v.Volume.Limit)))
	field(w, "Idle stop", leaseWords(v.Lease.IdleStop))
	field(w, "Max runtime", leaseWords(v.Lease.MaxRuntime))
	if v.Lease.ExtendedUntil > 0 {
		field(w, "Extended until", relTimeMs(v.Lease.ExtendedUntil, now))
	}
	if a := v.Activity; a != nil {
		field(w, "Activity", a.State+": "+oneLine(a.Reason))
		field(w, "CPU", fmt.Sprintf("%.2f cores", a.CPU))
		for _, k := range a.Kernels {
			field(w, "Kernel", k.ID+" "+k.State)
		}
	}
	if v.Lease.IdleStopAt > 0 {
		field(w, "Idle stop at", relTimeMs(v.Lease.IdleStopAt, now))
	}
	if v.Lease.MaxRuntimeAt > 0 {
		field(w, "Max runtime at", relTimeMs(v.Lease.MaxRuntimeAt, now))
	}
	field(w, "Started", timeMs(v.StartTime))
	if v.StopTime > 0 {
		field(w, "Stopped", timeMs(v.StopTime))
	}
	field(w, "Created", timeMs(v.CreateTime))
	field(w, "URL", v.URL+" (sign in with `atelier notebook open "+v.Name+"`)")
}

func (n *notebookCmds) start() *cobra.Command {
	var (
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "start NOTEBOOK",
		Short: "Start a stopped notebook on its volume",
		Args:  exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			v, err := c.StartNotebook(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if wait {
				return n.waitAndShow(cmd.Context(), c, v.ID, timeout)
			}
			return n.a.show(v, func(w io.Writer) { fmt.Fprintf(w, "notebook %s is %s\n", v.Name, v.Status) })
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until Jupyter runs")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (default: no limit)")
	return cmd
}

func (n *notebookCmds) stop() *cobra.Command {
	return &cobra.Command{
		Use:   "stop NOTEBOOK",
		Short: "Stop a notebook; its volume is kept",
		Args:  exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			v, err := c.StopNotebook(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return n.a.show(v, func(w io.Writer) { fmt.Fprintf(w, "notebook %s is %s\n", v.Name, v.Status) })
		},
	}
}

func (n *notebookCmds) url() *cobra.Command {
	return &cobra.Command{
		Use:   "url NOTEBOOK",
		Short: "Print a single-use login link to a notebook (valid for a minute)",
		Long: `Print a single-use login link to a notebook. Opening it signs the browser in
on the notebook listener (a cookie valid there only) and leads to Jupyter; the
link works once and for a minute, and the server never logs it.`,
		Args: exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			l, err := c.NotebookLogin(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return n.a.show(l, func(w io.Writer) { fmt.Fprintln(w, l.URL) })
		},
	}
}

func (n *notebookCmds) signOut() *cobra.Command {
	return &cobra.Command{
		Use:   "sign-out NOTEBOOK",
		Short: "Sign every browser out of a notebook",
		Long: `Sign every browser out of a notebook: the session cookies its login links
set stop working at once, on every browser, and login links not yet opened
are void. Use it after using a shared computer, or when a cookie may have
leaked. A new link (notebook open, notebook url) signs in again. Websockets
already open (a kernel's channels, a terminal) are closed within 30 seconds.`,
		Args: exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			v, err := c.SignOutNotebook(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return n.a.show(v, func(w io.Writer) { fmt.Fprintf(w, "every browser is signed out of notebook %s\n", v.Name) })
		},
	}
}

func (n *notebookCmds) open() *cobra.Command {
	return &cobra.Command{
		Use:   "open NOTEBOOK",
		Short: "Open a notebook in the browser (through a single-use login link)",
		Args:  exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			l, err := c.NotebookLogin(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return n.a.openInBrowser(cmd.Context(), l.URL, "notebook "+args[0])
		},
	}
}

func (n *notebookCmds) extend() *cobra.Command {
	var d time.Duration
	cmd := &cobra.Command{
		Use:   "extend NOTEBOOK --for DURATION",
		Short: "Keep a running notebook from an idle stop for a while",
		Args:  exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if d <= 0 {
				return usagef("--for must be a positive duration such as 2h")
			}
			c, err := n.a.client()
			if err != nil {
				return err
			}
			v, err := c.ExtendNotebook(cmd.Context(), args[0], &api.ExtendNotebookRequest{For: d.String()})
			if err != nil {
				return err
			}
			return n.a.show(v, func(w io.Writer) {
				fmt.Fprintf(w, "notebook %s is kept from an idle stop until %s\n", v.Name, timeMs(v.Lease.ExtendedUntil))
			})
		},
	}
	cmd.Flags().DurationVar(&d, "for", time.Hour, "how long, e.g. 2h")
	return cmd
}

func (n *notebookCmds) events() *cobra.Command {
	var lf listFlags
	cmd := &cobra.Command{
		Use:   "events NOTEBOOK",
		Short: "Show a notebook's events: starts, readiness, idle warnings, stops and why",
		Args:  exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), n.a, lf, func(ctx context.Context, o client.ListOptions) (*api.List[api.NotebookEvent], error) {
				return c.NotebookEvents(ctx, args[0], o)
			})
			if err != nil {
				return err
			}
			return n.a.show(l, func(w io.Writer) {
				row(w, "TIME", "LEVEL", "SOURCE", "MESSAGE")
				for _, e := range l.Items {
					row(w, timeMs(e.Time), e.Level, e.Source, oneLine(e.Message))
				}
			})
		},
	}
	lf.register(cmd)
	return cmd
}

func (n *notebookCmds) wait() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait NOTEBOOK",
		Short: "Wait until a notebook runs; exit 1 if it failed or stopped",
		Args:  exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			return n.waitAndShow(cmd.Context(), c, args[0], timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (default: no limit)")
	return cmd
}

// waitAndShow waits until the notebook runs or ends, and shows it.
func (n *notebookCmds) waitAndShow(ctx context.Context, c *client.Client, ref string, timeout time.Duration) error {
	const op errs.Op = "cli.notebook.wait"
	if timeout < 0 {
		return usagef("--timeout must not be negative")
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	delay := n.poll.First
	for {
		v, err := c.GetNotebook(ctx, ref)
		if err != nil {
			if ctx.Err() != nil {
				return errs.E(op, errs.Unavailable, codeNotebookWaitLimit, fmt.Sprintf("notebook %s did not run within %s", ref, timeout))
			}
			return err
		}
		switch v.Status {
		case api.NotebookRunning:
			return n.a.show(v, func(w io.Writer) {
				fmt.Fprintf(w, "notebook %s is RUNNING; `atelier notebook open %s`\n", v.Name, v.Name)
			})
		case api.NotebookStopped, api.NotebookStartFailed, api.NotebookError, api.NotebookDeleting:
			msg := fmt.Sprintf("notebook %s is %s", v.Name, statusWithReason(v))
			if v.FailReason != "" {
				msg += ": " + v.FailReason
			}
			return errs.E(op, errs.Conflict, codeNotebookFailed, msg, errs.Hint("`atelier notebook events "+v.Name+"` says what happened"))
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return errs.E(op, errs.Unavailable, codeNotebookWaitLimit, fmt.Sprintf("notebook %s did not run within %s (it is %s)", ref, timeout, v.Status))
		case <-t.C:
		}
		delay = min(delay*2, n.poll.Max)
	}
}

func (n *notebookCmds) delete() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete NOTEBOOK",
		Short: "Delete a notebook and its volume (asks first; --yes skips)",
		Args:  exactArgs("NOTEBOOK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := n.a.client()
			if err != nil {
				return err
			}
			v, err := c.GetNotebook(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !yes {
				if !n.a.interactive {
					return errs.E("cli.notebook.delete", errs.Invalid, codeNotebookNotAsked,
						fmt.Sprintf("deleting notebook %s removes its volume (%s) for good", v.Name, volumeWords(v.Volume)),
						errs.Hint("add --yes to delete without asking"))
				}
				ans, err := n.a.prompt(fmt.Sprintf("Delete notebook %s and its volume (%s) for good? Type its name", v.Name, volumeWords(v.Volume)), "")
				if err != nil {
					return err
				}
				if strings.TrimSpace(ans) != v.Name {
					return errs.E("cli.notebook.delete", errs.Invalid, codeNotebookNotAsked, "not deleted: the name typed does not match")
				}
			}
			if err := c.DeleteNotebook(cmd.Context(), v.ID); err != nil {
				return err
			}
			n.a.done("notebook %s is being deleted with its volume", v.Name)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask")
	return cmd
}
