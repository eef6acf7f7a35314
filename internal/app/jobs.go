package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor/local"
	"github.com/atelier-dev/atelier/internal/job"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/sandbox"
)

// newJobService wires the roles of training jobs (job.Roles): the local
// executor, the sandbox check, the capacity ledger shared with service
// instances, and the platform bucket.
func newJobService(ctx context.Context, cfg *config.Server, iso *isolation, store meta.Store, iam *auth.Service, objects *obs.Service,
	ledger *capacity.Ledger, datasets job.Datasets, apiAddr, s3URL string, log *slog.Logger) (*job.Roles, error) {
	const op errs.Op = "app.newJobService"
	admin, err := store.GetUserByName(ctx, auth.AdminName)
	if err != nil {
		return nil, errs.E(op, err)
	}
	system := auth.SystemPrincipal(admin)
	self, err := iso.runnerBinary()
	if err != nil {
		return nil, errs.E(op, errs.Internal, "cannot find the atelier binary for the runner", err)
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o711); err != nil {
		return nil, errs.E(op, errs.IO, CodeDataDir, fmt.Sprintf("cannot create work_dir %s: %v", cfg.WorkDir, unwrapPathErr(err)),
			errs.Hint("set work_dir in the server config to a writable directory"))
	}
	if cfg.Sandbox == config.SandboxBubblewrap {
		if err := sandbox.Traversable(cfg.WorkDir); err != nil {
			return nil, errs.E(op, err)
		}
	}
	advertise := advertiseURL(cfg, apiAddr)
	var flavors []api.Flavor
	for _, f := range cfg.Flavors {
		flavors = append(flavors, api.Flavor{ID: f.ID, CPU: f.CPU, Memory: int64(f.Memory), GPU: f.GPU, Disk: int64(f.Disk),
			PricePerHour: f.PricePerHour, Network: f.Network})
	}
	var engines []api.Engine
	for _, e := range iso.engines {
		engines = append(engines, api.Engine{Name: e.Name, Python: e.Python, PipArgs: e.PipArgs, Network: e.Network, Prefixes: iso.prefix[e.Name]})
	}
	if len(engines) == 0 {
		log.Warn("no Python interpreter found: jobs cannot run until `engines` is configured")
	}
	roles := job.New(store, objects, iam, iam, local.New(local.Options{Logger: log}), system, job.Options{
		Datasets: datasets, Flavors: flavors, Engines: engines, RefusedEngines: iso.refused, Capacity: ledger.Capacity(), Ledger: ledger, Quota: cfg.Quotas.JobsPerUser,
		Sandbox: cfg.Sandbox, SandboxUser: cfg.SandboxUser, SandboxError: iso.err, DataDir: cfg.DataDir, WorkDir: cfg.WorkDir,
		ServerURL: advertise, S3Endpoint: s3URL, Region: cfg.Region, RunnerArgv0: self, Logger: log,
		RemoveGroup: cgroup.Remove, RemoveAll: iso.sb.Identity().RemoveAll,
	})
	if err := roles.Janitor.Init(ctx); err != nil {
		return nil, errs.E(op, err)
	}
	return roles, nil
}
