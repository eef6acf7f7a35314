package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/serving"
	"github.com/atelier-dev/atelier/internal/text"
)

// Error codes of the service commands (ATL.SVC.0080–0099).
const (
	codeServiceNotFound  errs.Code = "ATL.SVC.0080" // no service has the id or name given
	codeServiceAmbiguous errs.Code = "ATL.SVC.0081" // several services have the name given
	codeServiceFailed    errs.Code = "ATL.SVC.0082" // service wait: the service failed or was stopped
	codeServiceWaitLimit errs.Code = "ATL.SVC.0083" // service wait / delete --wait: --timeout passed first
	codePredictInput     errs.Code = "ATL.SVC.0084" // service predict: a --file or --json @file cannot be read
	codePredictFailed    errs.Code = "ATL.SVC.0085" // service predict: the service answered an error
)

// serviceHelp is the long help of `atelier service`.
const serviceHelp = `Deploy model versions as online services and call them. A service answers
POST <access_address> (/v1/infers/<service_id>) as ModelArts does, and the
KServe v2 protocol under /v2/models/<service name>/.

  atelier service deploy --name mnist --model $MODEL --instances 2 --wait
  atelier service deploy --name canary --model $V1:90 --model $V2:10
  atelier service deploy --name burst --model $MODEL --autoscale min=1,max=4,target-inflight=2
  atelier service predict mnist --file images=digit.png
  atelier service predict mnist --json '{"x": [1, 2, 3]}'
  atelier service update mnist --instances 3
  atelier service stop mnist && atelier service start mnist

Where a command takes a SERVICE, it is a service id or the exact name of one
of the services you can see.`

// serviceCmds builds the service commands of one run.
type serviceCmds struct {
	a    *app
	poll pollPolicy
}

// newServiceCmd builds `atelier service`.
func newServiceCmd(a *app) *cobra.Command {
	return newServiceGroup(a, defaultPoll())
}

func newServiceGroup(a *app, poll pollPolicy) *cobra.Command {
	s := &serviceCmds{a: a, poll: poll}
	cmd := group("service", "Deploy and call online inference services",
		s.deploy(), s.list(), s.get(), s.wait(), s.update(), s.predict(), s.stats(), s.events(), s.logs(),
		s.stop(), s.start(), s.delete())
	cmd.Long = serviceHelp
	return cmd
}

// serviceStatuses lists the service statuses.
func serviceStatuses() []string {
	return []string{api.ServiceDeploying, api.ServiceRunning, api.ServiceConcerning, api.ServiceFailed,
		api.ServiceStopping, api.ServiceStopped, api.ServiceDeleting, api.ServicePending}
}

// resolve turns a SERVICE argument (an id, or the exact name of one
// service) into a service id.
func (s *serviceCmds) resolve(ctx context.Context, c *client.Client, arg string) (string, error) {
	const op errs.Op = "cli.service.resolve"
	if looksLikeUUID(arg) {
		return arg, nil
	}
	all, err := client.All(ctx, func(ctx context.Context, o client.ListOptions) (*api.List[api.Service], error) {
		return c.ListServices(ctx, client.ServiceListOptions{Name: arg, Offset: o.Offset, Limit: o.Limit})
	})
	if err != nil {
		return "", err
	}
	var ids []string
	for _, v := range all.Items {
		if v.ServiceName == arg {
			ids = append(ids, v.ServiceID)
		}
	}
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		if _, err := c.GetService(ctx, arg); err == nil {
			return arg, nil
		} else if client.StatusOf(err) != 404 {
			return "", err
		}
		return "", errs.E(op, errs.NotFound, codeServiceNotFound, fmt.Sprintf("no service has the id or name %q", arg),
			errs.Hint("list your services with `atelier service list`"))
	}
	return "", errs.E(op, errs.Conflict, codeServiceAmbiguous,
		fmt.Sprintf("%d services are named %q: %s", len(ids), arg, strings.Join(ids, ", ")), errs.Hint("name the service by its id"))
}

// clientAndService returns a client and the id of the SERVICE argument.
func (s *serviceCmds) clientAndService(ctx context.Context, arg string) (*client.Client, string, error) {
	c, err := s.a.client()
	if err != nil {
		return nil, "", err
	}
	id, err := s.resolve(ctx, c, arg)
	if err != nil {
		return nil, "", err
	}
	return c, id, nil
}

// modelFlag is one --model MODEL_ID[:WEIGHT].
type modelFlag struct {
	id     string
	weight int
	has    bool // a weight was given
}

// parseModelFlag reads MODEL_ID[:WEIGHT]; the weight is 0…100.
func parseModelFlag(s string) (modelFlag, error) {
	id, w, has := strings.Cut(strings.TrimSpace(s), ":")
	if id == "" || strings.ContainsAny(id, " \t/") {
		return modelFlag{}, usagef("--model %q: expected MODEL_ID or MODEL_ID:WEIGHT", s)
	}
	m := modelFlag{id: id, has: has}
	if has {
		n, err := strconv.Atoi(w)
		if err != nil || n < 0 || n > 100 {
			return modelFlag{}, usagef("--model %q: the weight must be a whole number from 0 to 100", s)
		}
		m.weight = n
	}
	return m, nil
}

// parseAutoscale reads min=1,max=4[,target-inflight=2][,target-qps=5][,cooldown=60s]
// ("off" turns autoscaling off: min 0, max 0).
func parseAutoscale(s string) (*api.Autoscale, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return &api.Autoscale{}, nil
	}
	as := &api.Autoscale{}
	seen := map[string]bool{}
	bad := func(format string, args ...any) error {
		return usagef("--autoscale %q: "+format+"; expected min=N,max=N[,target-inflight=X][,target-qps=X][,cooldown=DURATION]",
			append([]any{s}, args...)...)
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, bad("%q is not KEY=VALUE", part)
		}
		if seen[k] {
			return nil, bad("%s is given twice", k)
		}
		seen[k] = true
		switch k {
		case "min", "max":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, bad("%s must be a whole number", k)
			}
			if k == "min" {
				as.Min = n
			} else {
				as.Max = n
			}
		case "target-inflight", "target_inflight", "target-qps", "target_qps":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x <= 0 || x > 1e6 {
				return nil, bad("%s must be a positive number", k)
			}
			if strings.HasSuffix(k, "inflight") {
				as.TargetInflight = x
			} else {
				as.TargetQPS = x
			}
		case "cooldown":
			d, err := parseDurationDays(v)
			if err != nil {
				if n, nerr := strconv.Atoi(v); nerr == nil {
					d = time.Duration(n) * time.Second
				} else {
					return nil, bad("cooldown must be a duration such as 60s")
				}
			}
			if d < time.Second || d > 24*time.Hour {
				return nil, bad("cooldown must be from 1s to 24h")
			}
			as.CooldownSeconds = int((d + time.Second - 1) / time.Second)
		default:
			return nil, bad("unknown key %q", k)
		}
	}
	if !seen["max"] {
		return nil, bad("max is missing")
	}
	return as, nil
}

// parseLiveness reads period=5s,timeout=5s,failures=3 (any of the keys,
// at least one) into h.
func parseLiveness(s string, h *api.InstanceHealth) error {
	s = strings.TrimSpace(s)
	seen := map[string]bool{}
	bad := func(format string, args ...any) error {
		return usagef("--liveness %q: "+format+"; expected [period=DURATION][,timeout=DURATION][,failures=N]",
			append([]any{s}, args...)...)
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return bad("%q is not KEY=VALUE", part)
		}
		if seen[k] {
			return bad("%s is given twice", k)
		}
		seen[k] = true
		switch k {
		case "period", "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return bad("%s must be a duration such as 5s", k)
			}
			if k == "period" {
				h.LivenessPeriodSeconds = d.Seconds()
			} else {
				h.LivenessTimeoutSeconds = d.Seconds()
			}
		case "failures", "failure-threshold", "failure_threshold":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return bad("%s must be a whole number of at least 1", k)
			}
			h.LivenessFailureThreshold = n
		default:
			return bad("unknown key %q", k)
		}
	}
	return nil
}

// healthFlags are the --liveness and --load-timeout of deploy and update.
type healthFlags struct {
	liveness    string
	loadTimeout time.Duration
}

func (hf *healthFlags) add(f *pflag.FlagSet) {
	f.StringVar(&hf.liveness, "liveness", "", "liveness probe of ready instances: [period=5s][,timeout=5s][,failures=3] (the defaults)")
	f.DurationVar(&hf.loadTimeout, "load-timeout", 0, "longest model load and warm-up of an instance, 10s to 24h (default 10m)")
}

// request is the health the flags ask for, nil when they ask for none.
func (hf *healthFlags) request() (*api.InstanceHealth, error) {
	if hf.liveness == "" && hf.loadTimeout == 0 {
		return nil, nil
	}
	h := &api.InstanceHealth{}
	if hf.liveness != "" {
		if err := parseLiveness(hf.liveness, h); err != nil {
			return nil, err
		}
	}
	if hf.loadTimeout < 0 {
		return nil, usagef("--load-timeout must not be negative")
	}
	h.LoadTimeoutSeconds = hf.loadTimeout.Seconds()
	return h, nil
}

// parseDurationDays is time.ParseDuration that also accepts whole days
// ("2d").
func parseDurationDays(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 3660 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

func (s *serviceCmds) deploy() *cobra.Command {
	var (
		name, description, flavor, authMode, maxBody, autoscale string
		models, envs                                            []string
		instances                                               int
		timeout, stopAfter, waitFor                             time.Duration
		wait                                                    bool
		health                                                  healthFlags
	)
	cmd := &cobra.Command{
		Use:   "deploy --name NAME --model MODEL_ID[:WEIGHT] [--model …]",
		Short: "Deploy model versions as an online service",
		Long: `Deploy one or more model versions as a real-time service. With several
--model flags each gets a weight (they sum to 100) and traffic is split by it;
a single model may leave its weight out. Every model gets --instances
instances of --flavor (default: the first flavor), or, with --autoscale, as
many as the load needs within min and max.

  --auth token    callers send X-Auth-Token (the owner, or users allowed atelier:service:Predict)
  --auth appcode  callers send X-Apig-AppCode: the service's app code (shown by service get)
  --auth none     anyone who reaches the server may call it

--stop-after stops the service that long after it starts (8h, 90m, 2d).
--liveness sets the probe of ready instances (an instance whose model server
fails it failures times in a row is restarted), --load-timeout the longest
model load and warm-up (an instance that takes longer fails).
With --wait the command waits until the service is running.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return usagef("--name is required")
			}
			if len(models) == 0 {
				return usagef("give at least one --model MODEL_ID[:WEIGHT]")
			}
			req := &api.DeployRequest{ServiceName: name, Description: description, Auth: authMode}
			for _, m := range models {
				mf, err := parseModelFlag(m)
				if err != nil {
					return err
				}
				if len(models) > 1 && !mf.has {
					return usagef("--model %s: with several models every one needs a weight (MODEL_ID:WEIGHT, summing to 100)", m)
				}
				req.Config = append(req.Config, api.ServiceConfig{ModelID: mf.id, Weight: api.FlexInt(mf.weight),
					Specification: flavor, InstanceCount: instances})
			}
			if len(envs) > 0 {
				env := map[string]string{}
				for _, kv := range envs {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return usagef("--env %q: expected NAME=VALUE", kv)
					}
					env[k] = v
				}
				for i := range req.Config {
					req.Config[i].Envs = env
				}
			}
			if timeout < 0 || stopAfter < 0 {
				return usagef("--timeout and --stop-after must not be negative")
			}
			req.TimeoutSeconds = timeout.Seconds()
			if maxBody != "" {
				n, err := config.ParseBytes(maxBody)
				if err != nil {
					return usagef("--max-body %q: %v", maxBody, err)
				}
				req.MaxBodyBytes = n
			}
			if autoscale != "" {
				as, err := parseAutoscale(autoscale)
				if err != nil {
					return err
				}
				req.Autoscale = as
			}
			if stopAfter > 0 {
				req.Schedule = []api.Schedule{serving.ScheduleFor(stopAfter)}
			}
			h, err := health.request()
			if err != nil {
				return err
			}
			req.Health = h
			c, err := s.a.client()
			if err != nil {
				return err
			}
			v, err := c.DeployService(cmd.Context(), req)
			if err != nil {
				return err
			}
			if wait {
				return s.waitAndShow(cmd.Context(), c, v.ServiceID, waitFor)
			}
			return s.a.show(v, func(w io.Writer) { serviceTable(w, []api.Service{*v}) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "service name: 1-64 letters, digits, '-' or '_' (required)")
	f.StringVar(&description, "description", "", "description")
	f.StringArrayVar(&models, "model", nil, "model version to deploy, MODEL_ID[:WEIGHT] (repeatable)")
	f.IntVar(&instances, "instances", 0, "instances of each model (default 1, or the autoscale minimum)")
	f.StringVar(&flavor, "flavor", "", "flavor of the instances (default: the first, see `atelier job flavors`)")
	f.StringVar(&authMode, "auth", "", "how callers authenticate: token (default), appcode or none")
	f.DurationVar(&timeout, "timeout", 0, "per-request timeout, 1s to 600s (default 40s)")
	f.StringVar(&maxBody, "max-body", "", "largest request body, e.g. 12MiB (default), at most 1GiB")
	f.StringVar(&autoscale, "autoscale", "", "autoscale within bounds: min=1,max=4[,target-inflight=2][,target-qps=N][,cooldown=60s]")
	f.StringArrayVar(&envs, "env", nil, "environment variable of the instances, NAME=VALUE (repeatable)")
	f.Var((*daysDuration)(&stopAfter), "stop-after", "stop the service this long after it starts, e.g. 8h or 2d")
	f.BoolVar(&wait, "wait", false, "wait until the service is running")
	f.DurationVar(&waitFor, "wait-timeout", 0, "with --wait, give up after this long (default: no limit)")
	health.add(f)
	return cmd
}

// daysDuration is a duration flag that also accepts days ("2d").
type daysDuration time.Duration

func (d *daysDuration) String() string {
	if *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}
func (d *daysDuration) Type() string { return "duration" }
func (d *daysDuration) Set(s string) error {
	v, err := parseDurationDays(s)
	if err != nil {
		return err
	}
	*d = daysDuration(v)
	return nil
}

func (s *serviceCmds) list() *cobra.Command {
	var (
		lf       listFlags
		name     string
		statuses []string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List services, newest first",
		Long: `List services, newest first. --name keeps services whose name contains the
text; --status keeps services in the listed statuses (` + strings.Join(serviceStatuses(), ", ") + `).` + listHelp,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var sts []string
			for _, st := range statuses {
				st = strings.ToLower(strings.TrimSpace(st))
				if st == "" {
					continue
				}
				if !slices.Contains(serviceStatuses(), st) {
					return usagef("unknown status %q; statuses are %s", st, strings.Join(serviceStatuses(), ", "))
				}
				sts = append(sts, st)
			}
			c, err := s.a.client()
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), s.a, lf, func(ctx context.Context, o client.ListOptions) (*api.List[api.Service], error) {
				return c.ListServices(ctx, client.ServiceListOptions{Name: name, Statuses: sts, Offset: o.Offset, Limit: o.Limit})
			})
			if err != nil {
				return err
			}
			return s.a.show(l, func(w io.Writer) { serviceTable(w, l.Items) })
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "only services whose name contains this text")
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only services in these statuses (comma separated)")
	return cmd
}

func (s *serviceCmds) get() *cobra.Command {
	return &cobra.Command{
		Use:   "get SERVICE",
		Short: "Show a service: status, access address, app code, models and instances",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			v, err := c.GetService(cmd.Context(), id)
			if err != nil {
				return err
			}
			return s.a.show(v, func(w io.Writer) { serviceDetail(w, v) })
		},
	}
}

func (s *serviceCmds) wait() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait SERVICE",
		Short: "Wait until a service is running; exit 1 if it failed or stopped",
		Long: `Wait until every instance of a service is ready (status running). The exit
code is 1 when the service failed (its error is printed) or stopped, and when
--timeout passes first. With -o json the service is printed.`,
		Args: exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 {
				return usagef("--timeout must not be negative")
			}
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return s.waitAndShow(cmd.Context(), c, id, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long, e.g. 10m (default: no limit)")
	return cmd
}

// waitAndShow waits for a service to run and shows it, or fails.
func (s *serviceCmds) waitAndShow(ctx context.Context, c *client.Client, id string, timeout time.Duration) error {
	v, err := s.waitService(ctx, c, id, timeout, func(v *api.Service) bool {
		switch v.Status {
		case api.ServiceRunning, api.ServiceFailed, api.ServiceStopped, api.ServiceDeleting:
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	if v.Status != api.ServiceRunning {
		if s.a.output != formatTable {
			_ = s.a.show(v, nil)
		}
		msg := fmt.Sprintf("service %s is %s", serviceRef(v), v.Status)
		switch {
		case v.ErrorMsg != "":
			msg += ": " + v.ErrorMsg
		case v.StoppedReason != "":
			msg += ": " + v.StoppedReason
		}
		return errs.E("cli.service.wait", errs.Unavailable, codeServiceFailed, msg,
			errs.Hint(fmt.Sprintf("`atelier service events %s` shows what happened", id)))
	}
	return s.a.show(v, func(w io.Writer) {
		fmt.Fprintf(w, "service %s is running at %s\n", serviceRef(v), v.AccessAddress)
	})
}

// waitService polls a service until done says so; between polls it waits
// for the capacity ledger to change (queueWatch) and prints each change
// of what its instances wait for on stderr; a service an instance of which
// can never fit ends the wait at once (exit 1). An unreachable server is
// waited for.
func (s *serviceCmds) waitService(ctx context.Context, c *client.Client, id string, timeout time.Duration, done func(*api.Service) bool) (*api.Service, error) {
	const op errs.Op = "cli.service.wait"
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var (
		last         *api.Service
		delay        = s.poll.First
		failingSince time.Time
		q            = &queueWatch{a: s.a, c: c, subject: "service " + id}
	)
	timedOut := func() error {
		status := "not ready"
		if last != nil {
			status = "still " + last.Status
		}
		msg := fmt.Sprintf("service %s is %s after %s", id, status, timeout)
		if l := q.lastLine(); l != "" {
			msg += "; " + l
		}
		return errs.E(op, errs.Unavailable, codeServiceWaitLimit, msg,
			errs.Hint(fmt.Sprintf("wait again with a longer --timeout; `atelier service events %s` shows progress", id)))
	}
	q.refresh(wctx)
	for {
		v, err := c.GetService(wctx, id)
		switch {
		case err == nil:
			failingSince, last = time.Time{}, v
			q.subject = "service " + serviceRef(v)
			st := q.serviceState(v)
			q.note(st, v.Status)
			if done(v) {
				return v, nil
			}
			if st.never {
				return nil, neverError(op, q.subject, st.reason,
					"deploy it with a smaller --flavor (or set a smaller specification with PUT /api/v1/services/"+id+"); `atelier capacity` shows what the machine can book")
			}
		case ctx.Err() == nil && wctx.Err() != nil:
			return nil, timedOut()
		case transient(err):
			if failingSince.IsZero() {
				failingSince = time.Now()
				s.a.note("cannot reach the server (%s); still waiting", errs.UserMessage(err))
			} else if time.Since(failingSince) > s.poll.Outage {
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
		delay = min(delay*3/2, s.poll.Max)
	}
}

func (s *serviceCmds) update() *cobra.Command {
	var (
		instances        int
		models           []string
		autoscale, descr string
		rotate, setDescr bool
		health           healthFlags
	)
	cmd := &cobra.Command{
		Use:   "update SERVICE",
		Short: "Change instance counts, weights, autoscaling or health checks, or rotate the app code",
		Long: `Change a running (or stopped) service:

  --instances N          every model gets N instances
  --model ID:WEIGHT      new weights (repeat for each model; they sum to 100);
                         a model the service does not have yet is added
  --autoscale min=1,max=4[,target-inflight=2][,cooldown=60s]   or --autoscale off
  --liveness period=5s,timeout=5s,failures=3   --load-timeout 10m
                         for instances started from then on (keys left out stay)
  --rotate-appcode       a new app code (auth appcode); the old one stops working`,
		Args: exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			setDescr = cmd.Flags().Changed("description")
			h, err := health.request()
			if err != nil {
				return err
			}
			if instances == 0 && len(models) == 0 && autoscale == "" && !rotate && !setDescr && h == nil {
				return usagef("nothing to change: give --instances, --model, --autoscale, --liveness, --load-timeout, --rotate-appcode or --description")
			}
			if instances < 0 {
				return usagef("--instances must be positive")
			}
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			req := &api.UpdateServiceRequest{RotateAppCode: rotate, Health: h}
			if setDescr {
				req.Description = &descr
			}
			if autoscale != "" {
				if req.Autoscale, err = parseAutoscale(autoscale); err != nil {
					return err
				}
			}
			if instances > 0 || len(models) > 0 {
				cur, err := c.GetService(cmd.Context(), id)
				if err != nil {
					return err
				}
				if req.Config, err = updatedConfig(cur.Config, models, instances); err != nil {
					return err
				}
			}
			v, err := c.UpdateService(cmd.Context(), id, req)
			if err != nil {
				return err
			}
			return s.a.show(v, func(w io.Writer) { serviceDetail(w, v) })
		},
	}
	f := cmd.Flags()
	f.IntVar(&instances, "instances", 0, "instances of every model")
	f.StringArrayVar(&models, "model", nil, "MODEL_ID:WEIGHT (repeatable)")
	f.StringVar(&autoscale, "autoscale", "", "min=N,max=N[,target-inflight=X][,target-qps=X][,cooldown=DURATION], or off")
	f.BoolVar(&rotate, "rotate-appcode", false, "replace the app code")
	f.StringVar(&descr, "description", "", "new description")
	health.add(f)
	return cmd
}

// updatedConfig is the config of an update: the current entries with the
// new instance count, and the weights (and new models) of --model.
func updatedConfig(cur []api.ServiceConfig, models []string, instances int) ([]api.ServiceConfig, error) {
	out := make([]api.ServiceConfig, len(cur))
	for i, c := range cur {
		out[i] = api.ServiceConfig{ModelID: c.ModelID, Specification: c.Specification, InstanceCount: c.InstanceCount, Weight: c.Weight, Envs: c.Envs}
	}
	if len(models) > 0 {
		given := map[string]int{}
		for _, m := range models {
			mf, err := parseModelFlag(m)
			if err != nil {
				return nil, err
			}
			if !mf.has {
				return nil, usagef("--model %s: give its weight, MODEL_ID:WEIGHT", m)
			}
			given[mf.id] = mf.weight
			if !slices.ContainsFunc(out, func(c api.ServiceConfig) bool { return c.ModelID == mf.id }) {
				n := 0
				if len(out) > 0 {
					n = out[0].InstanceCount
				}
				out = append(out, api.ServiceConfig{ModelID: mf.id, InstanceCount: n})
			}
		}
		for i := range out {
			out[i].Weight = api.FlexInt(given[out[i].ModelID]) // models left out get 0
		}
	}
	if instances > 0 {
		for i := range out {
			out[i].InstanceCount = instances
		}
	}
	return out, nil
}

func (s *serviceCmds) predict() *cobra.Command {
	var (
		files             []string
		jsonBody, appCode string
		path              string
	)
	cmd := &cobra.Command{
		Use:   "predict SERVICE (--file [FIELD=]PATH … | --json JSON | --json @FILE)",
		Short: "Call a service and print its answer",
		Long: `Send one inference request to a service's access address and print the JSON
answer. --file sends multipart/form-data (FIELD=PATH, or PATH for the field
"images"; repeatable); --json sends a JSON body (@FILE reads it from a file,
@- from stdin). The request carries your token (token auth), the service's app
code (appcode auth; --app-code overrides it), or nothing (none). --path is
appended to the access address (an API path of the model).`,
		Args: exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(files) > 0) == (jsonBody != "") {
				return usagef("give either --file or --json")
			}
			var ct string
			var body []byte
			var err error
			if jsonBody != "" {
				body, err = s.jsonInput(jsonBody)
				ct = "application/json"
			} else {
				body, ct, err = multipartBody(files)
			}
			if err != nil {
				return err
			}
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			v, err := c.GetService(cmd.Context(), id)
			if err != nil {
				return err
			}
			in := client.Inference{URL: v.AccessAddress, ContentType: ct, Body: body}
			if path != "" {
				in.URL = strings.TrimRight(in.URL, "/") + "/" + strings.TrimLeft(path, "/")
			}
			switch {
			case appCode != "":
				in.AppCode = appCode
			case v.Auth == api.AuthAppCode:
				in.AppCode = v.AppCode
			case v.Auth == api.AuthToken || v.Auth == "":
				if in.Token, err = c.Token(cmd.Context()); err != nil {
					return err
				}
			}
			res, err := c.Infer(cmd.Context(), in)
			if err != nil {
				return err
			}
			if res.Status < 200 || res.Status > 299 {
				return predictError(res)
			}
			return s.printAnswer(res.Body)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&files, "file", nil, "file to send as multipart/form-data, [FIELD=]PATH (repeatable; field images by default)")
	f.StringVar(&jsonBody, "json", "", "JSON body, or @FILE to read it from a file (@- for stdin)")
	f.StringVar(&appCode, "app-code", "", "app code to send (default: the service's, for appcode auth)")
	f.StringVar(&path, "path", "", "path after the access address")
	return cmd
}

// jsonInput reads the --json value: inline, @FILE or @- (stdin). It must
// be valid JSON.
func (s *serviceCmds) jsonInput(v string) ([]byte, error) {
	body := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if name == "-" {
			body, err = io.ReadAll(s.a.stdin)
		} else {
			body, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, errs.E("cli.service.predict", errs.Invalid, codePredictInput, fmt.Sprintf("cannot read --json %s: %v", v, unwrapPathErr(err)))
		}
	}
	if !json.Valid(body) {
		return nil, usagef("--json is not valid JSON")
	}
	return body, nil
}

// parseFileFlag reads [FIELD=]PATH; the field defaults to images.
func parseFileFlag(s string) (field, path string, err error) {
	field, path, ok := strings.Cut(s, "=")
	if !ok {
		field, path = "images", s
	}
	field = strings.TrimSpace(field)
	if field == "" || path == "" || strings.ContainsAny(field, "\"\r\n") {
		return "", "", usagef("--file %q: expected [FIELD=]PATH", s)
	}
	return field, path, nil
}

// multipartBody builds a multipart/form-data body of --file flags.
func multipartBody(files []string) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range files {
		field, path, err := parseFileFlag(f)
		if err != nil {
			return nil, "", err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, "", errs.E("cli.service.predict", errs.Invalid, codePredictInput, fmt.Sprintf("cannot read --file %s: %v", path, unwrapPathErr(err)))
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, field, filepath.Base(path)))
		h.Set("Content-Type", "application/octet-stream")
		w, err := mw.CreatePart(h)
		if err != nil {
			return nil, "", err
		}
		_, _ = w.Write(data)
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), mw.FormDataContentType(), nil
}

// unwrapPathErr is the reason of a path error without the path.
func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// printAnswer prints a JSON answer indented (compact with -o json), or
// the body as is when it is not JSON.
func (s *serviceCmds) printAnswer(body []byte) error {
	var v any
	if json.Unmarshal(body, &v) != nil {
		_, err := s.a.stdout.Write(body)
		return err
	}
	if s.a.output == formatTable {
		var out bytes.Buffer
		if json.Indent(&out, body, "", "  ") == nil {
			out.WriteByte('\n')
			_, err := s.a.stdout.Write(out.Bytes())
			return err
		}
	}
	return s.a.show(json.RawMessage(bytes.TrimSpace(body)), nil)
}

// predictError is the error of a non-2xx inference answer, with the
// gateway's or the handler's code, message and hint when it has them.
func predictError(res *client.InferenceResult) error {
	var b api.Error
	msg := fmt.Sprintf("the service answered %d", res.Status)
	var hint errs.Hint
	if json.Unmarshal(res.Body, &b) == nil && b.ErrorMsg != "" {
		msg += ": " + b.ErrorMsg
		if b.ErrorCode != "" {
			msg += " [" + b.ErrorCode + "]"
		}
		hint = errs.Hint(b.Hint)
	} else if t := strings.TrimSpace(string(res.Body)); t != "" {
		msg += ": " + oneLine(t)
	}
	return errs.E("cli.service.predict", errs.Unavailable, codePredictFailed, msg, hint)
}

func (s *serviceCmds) stats() *cobra.Command {
	return &cobra.Command{
		Use:   "stats SERVICE",
		Short: "Show a service's requests, QPS, latency percentiles, errors and in-flight requests",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			st, err := c.ServiceStats(cmd.Context(), id)
			if err != nil {
				return err
			}
			return s.a.show(st, func(w io.Writer) { statsDetail(w, st) })
		},
	}
}

func (s *serviceCmds) events() *cobra.Command {
	var lf listFlags
	cmd := &cobra.Command{
		Use:   "events SERVICE",
		Short: "List what happened to a service (tracebacks of failed loads included)",
		Long:  "List the events of a service: deploys, instance starts, failures with their tracebacks, restarts, scaling, stops." + listHelp,
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), s.a, lf, func(ctx context.Context, o client.ListOptions) (*api.List[api.Event], error) {
				return c.ServiceEvents(ctx, id, o)
			})
			if err != nil {
				return err
			}
			return s.a.show(l, func(w io.Writer) {
				for _, e := range l.Items {
					// Multi-line messages (tracebacks) are printed whole.
					fmt.Fprintf(w, "%s  %-7s  %-10s  %s\n", timeMs(e.Time), e.Level, e.Source, e.Message)
				}
			})
		},
	}
	lf.register(cmd)
	return cmd
}

func (s *serviceCmds) logs() *cobra.Command {
	var (
		instance string
		tail     int
	)
	cmd := &cobra.Command{
		Use:   "logs SERVICE",
		Short: "Print the last log lines of a service's instances",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tail < 0 || tail > api.MaxLogLines {
				return usagef("--tail must be from 1 to %d", api.MaxLogLines)
			}
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			l, err := c.ServiceLogs(cmd.Context(), id, instance, tail)
			if err != nil {
				return err
			}
			return s.a.show(l, func(w io.Writer) {
				for _, line := range l.Lines {
					if instance != "" {
						fmt.Fprintln(w, line.Text)
					} else {
						fmt.Fprintf(w, "[%s] %s\n", shortID(line.InstanceID), line.Text)
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&instance, "instance", "", "only this instance (ids in `atelier service get`)")
	cmd.Flags().IntVar(&tail, "tail", 0, "the last N lines (default 1000)")
	return cmd
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}

func (s *serviceCmds) stop() *cobra.Command {
	return &cobra.Command{
		Use:   "stop SERVICE",
		Short: "Stop a service: its instances are released; calls get 503 until it starts again",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			v, err := c.StopService(cmd.Context(), id)
			if err != nil {
				return err
			}
			return s.a.show(v, func(w io.Writer) { fmt.Fprintf(w, "service %s is %s\n", serviceRef(v), v.Status) })
		},
	}
}

func (s *serviceCmds) start() *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "start SERVICE",
		Short: "Start a stopped or failed service",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			v, err := c.StartService(cmd.Context(), id)
			if err != nil {
				return err
			}
			if wait {
				return s.waitAndShow(cmd.Context(), c, id, 0)
			}
			return s.a.show(v, func(w io.Writer) { fmt.Fprintf(w, "service %s is %s\n", serviceRef(v), v.Status) })
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the service is running")
	return cmd
}

func (s *serviceCmds) delete() *cobra.Command {
	var (
		noWait  bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "delete SERVICE",
		Short: "Delete a service: its instances are stopped, then it is removed with its logs and events",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := s.clientAndService(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := c.DeleteService(cmd.Context(), id); err != nil {
				return err
			}
			if !noWait {
				_, err := s.waitService(cmd.Context(), c, id, timeout, func(*api.Service) bool { return false })
				if client.StatusOf(err) != 404 {
					if err == nil {
						err = errs.E("cli.service.delete", errs.Internal, "the service is still there")
					}
					return err
				}
			}
			s.a.done("deleted service %s", id)
			return nil
		},
	}
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the deletion has begun")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up waiting after this long")
	return cmd
}

// serviceRef names a service as "NAME (ID)".
func serviceRef(v *api.Service) string {
	if v.ServiceName == "" {
		return v.ServiceID
	}
	return fmt.Sprintf("%s (%s)", v.ServiceName, v.ServiceID)
}

// readyOf counts ready and wanted instances.
func readyOf(v *api.Service) (ready, want int) {
	for _, c := range v.Config {
		ready += c.ReadyCount
		want += c.InstanceCount
	}
	return ready, want
}

func serviceTable(w io.Writer, vs []api.Service) {
	row(w, "ID", "NAME", "STATUS", "READY", "AUTH", "CREATED", "ACCESS ADDRESS")
	for i := range vs {
		v := &vs[i]
		ready, want := readyOf(v)
		row(w, v.ServiceID, v.ServiceName, v.Status, fmt.Sprintf("%d/%d", ready, want), orDash(v.Auth), timeMs(v.CreateTime), v.AccessAddress)
	}
}

func serviceDetail(w io.Writer, v *api.Service) {
	field(w, "ID", v.ServiceID)
	field(w, "Name", v.ServiceName)
	if v.Description != "" {
		field(w, "Description", oneLine(v.Description))
	}
	status := v.Status
	if v.ErrorMsg != "" {
		status += ": " + oneLine(v.ErrorMsg)
	} else if v.StoppedReason != "" && (v.Status == api.ServiceStopped || v.Status == api.ServiceStopping) {
		status += ": " + v.StoppedReason
	}
	field(w, "Status", status)
	field(w, "Access address", v.AccessAddress)
	field(w, "Auth", orDash(v.Auth))
	if v.AppCode != "" {
		field(w, "App code", v.AppCode)
	}
	field(w, "Timeout", strconv.FormatFloat(v.TimeoutSeconds, 'f', -1, 64)+"s")
	field(w, "Max body", text.Bytes(v.MaxBodyBytes))
	if as := v.Autoscale; as != nil {
		field(w, "Autoscale", fmt.Sprintf("%d…%d instances, target %g in flight, cooldown %ds", as.Min, as.Max, as.TargetInflight, as.CooldownSeconds))
	}
	if h := v.Health; h != nil {
		field(w, "Liveness", fmt.Sprintf("every %gs, %gs to answer, restart after %d failures in a row", h.LivenessPeriodSeconds,
			h.LivenessTimeoutSeconds, h.LivenessFailureThreshold))
		field(w, "Load timeout", (time.Duration(h.LoadTimeoutSeconds * float64(time.Second))).String())
	}
	if v.DueTime > 0 {
		field(w, "Stops at", timeMs(v.DueTime))
	}
	if v.Owner != "" {
		field(w, "Owner", v.Owner)
	}
	field(w, "Created", timeMs(v.CreateTime))
	field(w, "Calls", fmt.Sprintf("%d (%d failed)", v.InvocationTimes, v.FailedTimes))
	fmt.Fprintln(w)
	row(w, "MODEL", "NAME", "VERSION", "FLAVOR", "WEIGHT", "READY")
	for _, c := range v.Config {
		row(w, c.ModelID, orDash(c.ModelName), orDash(c.ModelVersion), orDash(c.Specification), strconv.Itoa(int(c.Weight)),
			fmt.Sprintf("%d/%d", c.ReadyCount, c.InstanceCount))
	}
	if len(v.Instances) > 0 {
		fmt.Fprintln(w)
		row(w, "INSTANCE", "MODEL", "PHASE", "ADDRESS", "RESTARTS", "STARTED", "MESSAGE")
		for _, in := range v.Instances {
			row(w, in.InstanceID, in.ModelID, in.Phase, orDash(in.Address), strconv.Itoa(in.Restarts), timeMs(in.StartTime), orDash(oneLine(in.Message)))
		}
	}
}

func statsDetail(w io.Writer, st *api.ServiceStats) {
	field(w, "Requests", strconv.FormatInt(st.Requests, 10))
	field(w, "Errors", strconv.FormatInt(st.Errors, 10))
	field(w, "QPS (1 min)", strconv.FormatFloat(st.QPS, 'f', 2, 64))
	field(w, "Latency P50", strconv.FormatFloat(st.P50Ms, 'f', 1, 64)+" ms")
	field(w, "Latency P90", strconv.FormatFloat(st.P90Ms, 'f', 1, 64)+" ms")
	field(w, "Latency P99", strconv.FormatFloat(st.P99Ms, 'f', 1, 64)+" ms")
	field(w, "In flight", strconv.Itoa(st.InFlight))
	keys := func(m map[string]int64) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for _, k := range keys(st.PerModel) {
		field(w, "Model "+k, strconv.FormatInt(st.PerModel[k], 10))
	}
	for _, k := range keys(st.Codes) {
		field(w, "Status "+k, strconv.FormatInt(st.Codes[k], 10))
	}
}
