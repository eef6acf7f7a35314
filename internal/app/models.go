package app

import (
	"context"
	"log/slog"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/job"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/model"
	"github.com/atelier-dev/atelier/internal/obs"
)

// newModelService wires the model registry: the engines and flavors of
// training jobs, the sandbox of dry loads (--check), and the clean-up of
// imports a crash interrupted. A failed clean-up is logged: imports still
// work and report their own errors.
func newModelService(ctx context.Context, cfg *config.Server, iso *isolation, store meta.Store, iam *auth.Service, objects *obs.Service,
	jobs *job.Jobs, log *slog.Logger) *model.Service {
	svc := model.New(store, jobs, objects, iam, model.Options{
		Engines: jobs.Engines(), Flavors: jobs.Flavors(), Sandbox: cfg.Sandbox, SandboxError: iso.err, Isolation: iso.sb,
		DataDir: cfg.DataDir, WorkDir: cfg.WorkDir, Logger: log,
	})
	if err := svc.Init(ctx); err != nil {
		log.Error("model registry start-up failed", "err", errs.UserMessage(err))
	}
	return svc
}
