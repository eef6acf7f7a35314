package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/text"
)

// Error codes of the job commands (ATL.CLI.0110–0149).
const (
	codeJobNotFound  errs.Code = "ATL.CLI.0130" // no job has the id or name given
	codeJobAmbiguous errs.Code = "ATL.CLI.0131" // several jobs have the name given
	codeJobFailed    errs.Code = "ATL.CLI.0132" // job wait: the job ended without completing
	codeJobWaitLimit errs.Code = "ATL.CLI.0133" // job wait: --timeout passed first
)

// jobHelp is the long help of `atelier job`.
const jobHelp = `Run training jobs: a code dir (local, uploaded for you, or in OBS), a boot
file or a command, an engine, inputs and outputs in OBS, on a flavor.

  atelier job create --name mnist --code-dir ./src --boot-file train.py \
      --input data_url=obs://bkt/mnist/ --output train_url=obs://bkt/out/ \
      --param epochs=5 --retries 2 --max-runtime 2h --follow
  atelier job create -f job.yaml -o json | jq -r .metadata.id
  atelier job list --phase Running,Pending
  atelier job logs mnist -f
  atelier job wait mnist && atelier obs ls obs://bkt/out/

Where a command takes a JOB, it is a job id or a job name (the exact name of
one of the jobs you can see).`

// jobCmds builds the job commands of one run.
type jobCmds struct {
	a    *app
	poll pollPolicy
}

// pollPolicy is how `job wait` polls: every First, growing by half each
// time up to Max; an unreachable server is retried for Outage.
type pollPolicy struct {
	First, Max, Outage time.Duration
}

// defaultPoll is the poll policy of the real command.
func defaultPoll() pollPolicy {
	return pollPolicy{First: 500 * time.Millisecond, Max: 2 * time.Second, Outage: 2 * time.Minute}
}

// newJobCmd builds `atelier job`.
func newJobCmd(a *app) *cobra.Command {
	return newJobGroup(a, defaultPoll())
}

func newJobGroup(a *app, poll pollPolicy) *cobra.Command {
	j := &jobCmds{a: a, poll: poll}
	cmd := group("job", "Run and watch training jobs",
		j.create(), j.list(), j.get(), j.logs(), j.wait(), j.stop(), j.metrics(), j.events(),
		j.delete(), j.engines(), j.flavors())
	cmd.Long = jobHelp
	return cmd
}

// allPhases lists the job phases in their usual order.
func allPhases() []string {
	return []string{api.PhaseCreating, api.PhasePending, api.PhaseRunning, api.PhaseCompleted,
		api.PhaseFailed, api.PhaseTerminating, api.PhaseTerminated, api.PhaseAbnormal}
}

// parsePhases canonicalizes a --phase list (case-insensitive, comma
// separated values already split).
func parsePhases(in []string) ([]string, error) {
	var out []string
	for _, p := range in {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		i := slices.IndexFunc(allPhases(), func(q string) bool { return strings.EqualFold(p, q) })
		if i < 0 {
			return nil, usagef("unknown phase %q; phases are %s", p, strings.Join(allPhases(), ", "))
		}
		if !slices.Contains(out, allPhases()[i]) {
			out = append(out, allPhases()[i])
		}
	}
	return out, nil
}

// looksLikeUUID reports whether s has the 8-4-4-4-12 hex form of an id.
func looksLikeUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// resolve turns a JOB argument (an id, or the exact name of one job) into
// a job id.
func (j *jobCmds) resolve(ctx context.Context, c *client.Client, arg string) (string, error) {
	const op errs.Op = "cli.job.resolve"
	if looksLikeUUID(arg) {
		return arg, nil
	}
	all, err := client.All(ctx, func(ctx context.Context, o client.ListOptions) (*api.List[api.Job], error) {
		return c.ListJobs(ctx, client.JobListOptions{Name: arg, Offset: o.Offset, Limit: o.Limit})
	})
	if err != nil {
		return "", err
	}
	var ids []string
	for _, job := range all.Items {
		if job.Metadata.Name == arg {
			ids = append(ids, job.Metadata.ID)
		}
	}
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		// Not a name: perhaps an id of another form.
		if _, err := c.GetJob(ctx, arg); err == nil {
			return arg, nil
		} else if client.StatusOf(err) != 404 {
			return "", err
		}
		return "", errs.E(op, errs.NotFound, codeJobNotFound, fmt.Sprintf("no job has the id or name %q", arg),
			errs.Hint("list your jobs with `atelier job list`"))
	}
	return "", errs.E(op, errs.Conflict, codeJobAmbiguous,
		fmt.Sprintf("%d jobs are named %q: %s", len(ids), arg, strings.Join(ids, ", ")),
		errs.Hint("name the job by its id"))
}

// clientAndJob returns a client and the id of the JOB argument.
func (j *jobCmds) clientAndJob(ctx context.Context, arg string) (*client.Client, string, error) {
	c, err := j.a.client()
	if err != nil {
		return nil, "", err
	}
	id, err := j.resolve(ctx, c, arg)
	if err != nil {
		return nil, "", err
	}
	return c, id, nil
}

func (j *jobCmds) list() *cobra.Command {
	var (
		lf     listFlags
		name   string
		phases []string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Long: `List jobs, newest first. --name keeps jobs whose name contains the text;
--phase keeps jobs in the listed phases (` + strings.Join(allPhases(), ", ") + `).` + listHelp,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := parsePhases(phases)
			if err != nil {
				return err
			}
			c, err := j.a.client()
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), j.a, lf, func(ctx context.Context, o client.ListOptions) (*api.List[api.Job], error) {
				return c.ListJobs(ctx, client.JobListOptions{Name: name, Phases: ps, Offset: o.Offset, Limit: o.Limit})
			})
			if err != nil {
				return err
			}
			return j.a.show(l, func(w io.Writer) { jobTable(w, l.Items) })
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "only jobs whose name contains this text")
	cmd.Flags().StringSliceVar(&phases, "phase", nil, "only jobs in these phases (comma separated)")
	return cmd
}

func (j *jobCmds) get() *cobra.Command {
	return &cobra.Command{
		Use:   "get JOB",
		Short: "Show a job: phase, queue position, attempts and why it failed",
		Args:  exactArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := j.clientAndJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			job, err := c.GetJob(cmd.Context(), id)
			if err != nil {
				return err
			}
			return j.a.show(job, func(w io.Writer) { jobDetail(w, job) })
		},
	}
}

func (j *jobCmds) stop() *cobra.Command {
	return &cobra.Command{
		Use:   "stop JOB",
		Short: "Stop a job (SIGTERM, a grace period, SIGKILL; outputs are synced)",
		Args:  exactArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := j.clientAndJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			job, err := c.StopJob(cmd.Context(), id)
			if err != nil {
				return err
			}
			return j.a.show(job, func(w io.Writer) {
				fmt.Fprintf(w, "stopping job %s: %s\n", jobRef(job), phaseOf(job))
			})
		},
	}
}

func (j *jobCmds) delete() *cobra.Command {
	return &cobra.Command{
		Use:   "delete JOB",
		Short: "Delete a job that has ended, with its logs, metrics and events",
		Args:  exactArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := j.clientAndJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := c.DeleteJob(cmd.Context(), id); err != nil {
				return err
			}
			j.a.done("deleted job %s", id)
			return nil
		},
	}
}

func (j *jobCmds) events() *cobra.Command {
	var lf listFlags
	cmd := &cobra.Command{
		Use:   "events JOB",
		Short: "List what happened to a job",
		Long:  "List the events of a job: queueing, starts, retries, failures." + listHelp,
		Args:  exactArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := j.clientAndJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), j.a, lf, func(ctx context.Context, o client.ListOptions) (*api.List[api.Event], error) {
				return c.JobEvents(ctx, id, o)
			})
			if err != nil {
				return err
			}
			return j.a.show(l, func(w io.Writer) {
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

func (j *jobCmds) engines() *cobra.Command {
	return &cobra.Command{
		Use:   "engines",
		Short: "List the engines (interpreters) jobs can use",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := j.a.client()
			if err != nil {
				return err
			}
			l, err := c.JobEngines(cmd.Context())
			if err != nil {
				return err
			}
			return j.a.show(l, func(w io.Writer) {
				row(w, "NAME", "VERSION", "PYTHON", "PIP ARGS")
				for _, e := range l.Items {
					row(w, e.Name, orDash(e.Version), e.Python, orDash(strings.Join(e.PipArgs, " ")))
				}
			})
		},
	}
}

func (j *jobCmds) flavors() *cobra.Command {
	return &cobra.Command{
		Use:   "flavors",
		Short: "List the flavors (resource sizes) jobs can run on; the first is the default",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := j.a.client()
			if err != nil {
				return err
			}
			l, err := c.JobFlavors(cmd.Context())
			if err != nil {
				return err
			}
			return j.a.show(l, func(w io.Writer) { flavorTable(w, l.Items) })
		},
	}
}

func flavorTable(w io.Writer, fs []api.Flavor) {
	row(w, "ID", "CPU", "MEMORY", "GPU", "DISK", "PRICE/HOUR")
	for i, f := range fs {
		id := f.ID
		if i == 0 {
			id += " (default)"
		}
		disk, price := "-", "-"
		if f.Disk > 0 {
			disk = text.Bytes(f.Disk)
		}
		if f.PricePerHour > 0 {
			price = strconv.FormatFloat(f.PricePerHour, 'f', -1, 64)
		}
		row(w, id, strconv.FormatFloat(f.CPU, 'f', -1, 64), text.Bytes(f.Memory), strconv.Itoa(f.GPU), disk, price)
	}
}

// jobRef names a job as "NAME (ID)".
func jobRef(j *api.Job) string {
	if j.Metadata.Name == "" {
		return j.Metadata.ID
	}
	return fmt.Sprintf("%s (%s)", j.Metadata.Name, j.Metadata.ID)
}

// phaseOf is the phase of a job, "-" without a status.
func phaseOf(j *api.Job) string {
	if j.Status == nil || j.Status.Phase == "" {
		return "-"
	}
	return j.Status.Phase
}

func secondaryOf(j *api.Job) string {
	if j.Status == nil {
		return "-"
	}
	return orDash(j.Status.SecondaryPhase)
}

// durationMs formats a running time in milliseconds, "-" for none.
func durationMs(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	d := time.Duration(ms) * time.Millisecond
	if d < time.Second {
		return d.String()
	}
	return d.Round(time.Second).String()
}

func jobTable(w io.Writer, jobs []api.Job) {
	row(w, "ID", "NAME", "PHASE", "SECONDARY", "FLAVOR", "CREATED", "DURATION")
	for i := range jobs {
		job := &jobs[i]
		var dur int64
		if job.Status != nil {
			dur = job.Status.Duration
		}
		row(w, job.Metadata.ID, job.Metadata.Name, phaseOf(job), secondaryOf(job),
			orDash(job.Spec.Resource.FlavorID), timeMs(job.Metadata.CreateTime), durationMs(dur))
	}
}

// createdTable is the short view of a created job.
func createdTable(w io.Writer, job *api.Job) {
	row(w, "ID", "NAME", "PHASE", "FLAVOR", "ENGINE")
	row(w, job.Metadata.ID, job.Metadata.Name, phaseOf(job), orDash(job.Spec.Resource.FlavorID),
		orDash(job.Algorithm.Engine.EngineName))
}

// failureOf is the classified failure of an ended job: the first task
// status with a message.
func failureOf(j *api.Job) (api.TaskStatus, bool) {
	if j.Status == nil {
		return api.TaskStatus{}, false
	}
	for _, ts := range j.Status.TaskStatuses {
		if ts.Message != "" {
			return ts, true
		}
	}
	return api.TaskStatus{}, false
}

func jobDetail(w io.Writer, job *api.Job) {
	st := job.Status
	if st == nil {
		st = &api.JobStatus{}
	}
	field(w, "ID", job.Metadata.ID)
	field(w, "Name", job.Metadata.Name)
	if job.Metadata.Description != "" {
		field(w, "Description", oneLine(job.Metadata.Description))
	}
	field(w, "Phase", fmt.Sprintf("%s (%s)", orDash(st.Phase), orDash(st.SecondaryPhase)))
	if st.Phase == api.PhasePending || st.QueuePosition > 0 {
		q := "-"
		if st.QueuePosition > 0 {
			q = fmt.Sprintf("position %d", st.QueuePosition)
		}
		if st.WaitingFor != "" {
			q += ", waiting for " + st.WaitingFor
		}
		field(w, "Queue", q)
	}
	if ts, ok := failureOf(job); ok && st.Phase != api.PhaseCompleted {
		msg := oneLine(ts.Message)
		if ts.Reason != "" {
			msg += " [" + ts.Reason + "]"
		}
		if ts.ExitCode != 0 {
			msg += fmt.Sprintf(" (exit code %d)", ts.ExitCode)
		}
		field(w, "Failure", msg)
		if ts.Hint != "" {
			field(w, "Hint", oneLine(ts.Hint))
		}
	}
	if job.Metadata.UserName != "" {
		field(w, "User", job.Metadata.UserName)
	}
	field(w, "Flavor", orDash(job.Spec.Resource.FlavorID))
	engine := job.Algorithm.Engine.EngineName
	if v := job.Algorithm.Engine.EngineVersion; v != "" {
		engine += " " + v
	}
	field(w, "Engine", orDash(engine))
	field(w, "Code dir", orDash(job.Algorithm.CodeDir))
	if sn := job.Algorithm.SourceNotebook; sn != nil {
		field(w, "From notebook", fmt.Sprintf("%s (%s), snapshot %s", oneLine(sn.Name), oneLine(sn.ID), oneLine(sn.CodeDir)))
	}
	if job.Algorithm.Command != "" {
		field(w, "Command", oneLine(job.Algorithm.Command))
	} else {
		field(w, "Boot file", orDash(job.Algorithm.BootFile))
	}
	for _, ch := range job.Algorithm.Inputs {
		field(w, "Input", channelText(ch))
	}
	for _, ch := range job.Algorithm.Outputs {
		field(w, "Output", channelText(ch))
	}
	for _, p := range job.Algorithm.Parameters {
		field(w, "Parameter", fmt.Sprintf("--%s=%s", p.Name, p.Value))
	}
	if as := job.Spec.AutoStop; as != nil {
		field(w, "Max runtime", fmt.Sprintf("%d %s", as.Duration, strings.ToLower(as.TimeUnit)))
	}
	field(w, "Created", timeMs(job.Metadata.CreateTime))
	field(w, "Started", timeMs(st.StartTime))
	if st.EndTime != 0 {
		field(w, "Ended", timeMs(st.EndTime))
	}
	field(w, "Duration", durationMs(st.Duration))
	if st.Attempt > 0 {
		field(w, "Attempt", fmt.Sprintf("%d (retries left: %d)", st.Attempt, st.RetriesLeft))
	}
	for i, r := range st.RunningRecords {
		field(w, fmt.Sprintf("Attempt %d", i+1), runningRecordText(r))
	}
}

func channelText(ch api.JobChannel) string {
	src := "-"
	switch d := ch.Remote.Dataset; {
	case d != nil:
		src = "dataset:" + firstNonEmpty(d.Name, d.ID) + "@" + firstNonEmpty(d.Version, d.VersionID)
		if ch.Remote.OBS != nil {
			src += " (" + ch.Remote.OBS.OBSURL + ", version " + d.VersionID + ")"
		}
	case ch.Remote.OBS != nil:
		src = ch.Remote.OBS.OBSURL
	}
	s := ch.Name + " = " + src
	if ch.LocalDir != "" {
		s += " (at " + ch.LocalDir + ")"
	}
	return s
}

// runningRecordText describes one attempt; its times are seconds.
func runningRecordText(r api.RunningRecord) string {
	var b strings.Builder
	b.WriteString(timeMs(r.StartAt * 1000))
	if r.EndAt != 0 {
		b.WriteString(" – " + timeMs(r.EndAt*1000))
	} else {
		b.WriteString(" – running")
	}
	if r.StartType != "" {
		b.WriteString(", " + r.StartType)
	}
	if r.EndReason != "" {
		b.WriteString(", ended: " + oneLine(r.EndReason))
	}
	if r.EndRecover != "" {
		b.WriteString(", then " + r.EndRecover)
	}
	return b.String()
}

func (j *jobCmds) metrics() *cobra.Command {
	return &cobra.Command{
		Use:   "metrics JOB",
		Short: "Show a job's metrics: what atelier.report sent, and CPU, memory and GPU use",
		Long: `Show the metrics of a job. User metrics (from atelier.report(step=..., **metrics)
in the job) are shown one row per step with a column per metric; then the
last and peak values of the system metrics (CPU %, memory, GPU utilization and
memory). -o json prints the API object with every sample.`,
		Args: exactArgs("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := j.clientAndJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			m, err := c.JobMetrics(cmd.Context(), id)
			if err != nil {
				return err
			}
			return j.a.show(m, func(w io.Writer) { metricsTables(w, m.Samples) })
		},
	}
}

// metricRow is one row of the user metrics table.
type metricRow struct {
	step   *int64
	time   int64
	values map[string]float64
}

// userMetricRows merges user samples into one row per step (later samples
// of a step override earlier values), sorted by step; samples without a
// step come last, in time order.
func userMetricRows(samples []api.MetricSample) (rows []metricRow, names []string) {
	ordered := slices.Clone(samples)
	sort.SliceStable(ordered, func(i, k int) bool {
		if ordered[i].Attempt != ordered[k].Attempt {
			return ordered[i].Attempt < ordered[k].Attempt
		}
		return ordered[i].Seq < ordered[k].Seq
	})
	byStep := map[int64]int{}
	seen := map[string]bool{}
	for _, s := range ordered {
		if s.Kind != "user" {
			continue
		}
		for n := range s.Values {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		if s.Step != nil {
			if i, ok := byStep[*s.Step]; ok {
				for n, v := range s.Values {
					rows[i].values[n] = v
				}
				rows[i].time = s.Time
				continue
			}
			byStep[*s.Step] = len(rows)
		}
		r := metricRow{step: s.Step, time: s.Time, values: map[string]float64{}}
		for n, v := range s.Values {
			r.values[n] = v
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, k int) bool {
		a, b := rows[i], rows[k]
		switch {
		case a.step != nil && b.step != nil:
			return *a.step < *b.step
		case a.step != nil:
			return true
		case b.step != nil:
			return false
		}
		return a.time < b.time
	})
	sort.Strings(names)
	return rows, names
}

// systemSummary is the last and peak value of each system metric.
type systemSummary struct {
	name       string
	last, peak float64
}

func systemSummaries(samples []api.MetricSample) []systemSummary {
	ordered := slices.Clone(samples)
	sort.SliceStable(ordered, func(i, k int) bool { return ordered[i].Time < ordered[k].Time })
	idx := map[string]int{}
	var out []systemSummary
	for _, s := range ordered {
		if s.Kind != "system" {
			continue
		}
		for n, v := range s.Values {
			i, ok := idx[n]
			if !ok {
				idx[n] = len(out)
				out = append(out, systemSummary{name: n, last: v, peak: v})
				continue
			}
			out[i].last = v
			out[i].peak = math.Max(out[i].peak, v)
		}
	}
	order := []string{"cpu_percent", "memory_bytes", "gpu_util", "gpu_memory_bytes"}
	rank := func(n string) int {
		if i := slices.Index(order, n); i >= 0 {
			return i
		}
		return len(order)
	}
	sort.SliceStable(out, func(i, k int) bool {
		if rank(out[i].name) != rank(out[k].name) {
			return rank(out[i].name) < rank(out[k].name)
		}
		return out[i].name < out[k].name
	})
	return out
}

// systemValue formats a system metric value by its name.
func systemValue(name string, v float64) string {
	switch {
	case strings.HasSuffix(name, "_bytes"):
		return text.Bytes(int64(v))
	case strings.HasSuffix(name, "_percent"), name == "gpu_util":
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	}
	return metricValue(v)
}

// metricValue formats a user metric value compactly.
func metricValue(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func metricsTables(w io.Writer, samples []api.MetricSample) {
	rows, names := userMetricRows(samples)
	sys := systemSummaries(samples)
	if len(rows) == 0 && len(sys) == 0 {
		fmt.Fprintln(w, "no metrics yet")
		return
	}
	if len(rows) > 0 {
		row(w, append([]string{"STEP", "TIME"}, names...)...)
		for _, r := range rows {
			step := "-"
			if r.step != nil {
				step = strconv.FormatInt(*r.step, 10)
			}
			cols := []string{step, timeMs(r.time)}
			for _, n := range names {
				if v, ok := r.values[n]; ok {
					cols = append(cols, metricValue(v))
				} else {
					cols = append(cols, "-")
				}
			}
			row(w, cols...)
		}
	}
	if len(sys) > 0 {
		if len(rows) > 0 {
			fmt.Fprintln(w)
		}
		row(w, "SYSTEM", "LAST", "PEAK")
		for _, s := range sys {
			row(w, s.name, systemValue(s.name, s.last), systemValue(s.name, s.peak))
		}
	}
}
