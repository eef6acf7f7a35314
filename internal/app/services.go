package app

import (
	"context"
	"log/slog"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor/local"
	"github.com/atelier-dev/atelier/internal/job"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/serving"
)

// onlineServices are online services by role.
type onlineServices struct {
	deployments *serving.Deployments     // the REST operations; the model registry asks it which services use a version
	runners     *serving.InstanceRunners // the runner protocol of instances
	controller  *serving.Controller      // the loop: Run
}

// newServing wires online services: the same flavors, engines, sandbox,
// executor and capacity ledger as training jobs, the model registry, the
// gateway the controller drives, and wake, through which the gateway and
// the ledger wake the controller.
func newServing(ctx context.Context, cfg *config.Server, iso *isolation, store meta.Store, iam *auth.Service, jobs *job.Jobs,
	ledger *capacity.Ledger, wake *serving.Wakeup, models serving.Models, router serving.Router, apiAddr, s3URL string, log *slog.Logger) (*onlineServices, error) {
	const op errs.Op = "app.newServing"
	admin, err := store.GetUserByName(ctx, auth.AdminName)
	if err != nil {
		return nil, errs.E(op, err)
	}
	system := auth.SystemPrincipal(admin)
	self, err := iso.runnerBinary()
	if err != nil {
		return nil, errs.E(op, errs.Internal, "cannot find the atelier binary for the runner", err)
	}
	advertise := advertiseURL(cfg, apiAddr)
	d, r, c := serving.New(store, models, iam, iam, local.New(local.Options{Logger: log}), router, system, serving.Options{
		Flavors: jobs.Flavors(), Engines: jobs.Engines(), ServicesPerUser: cfg.Quotas.ServicesPerUser, Ledger: ledger, Wakeup: wake, Sandbox: cfg.Sandbox, SandboxUser: cfg.SandboxUser, SandboxError: iso.err, RemoveAll: iso.sb.Identity().RemoveAll,
		DataDir: cfg.DataDir, WorkDir: cfg.WorkDir, ServerURL: advertise, S3Endpoint: s3URL, Region: cfg.Region,
		RunnerArgv0: self, Logger: log,
	})
	return &onlineServices{deployments: d, runners: r, controller: c}, nil
}
