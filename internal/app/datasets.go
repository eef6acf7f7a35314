package app

import (
	"context"
	"log/slog"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/dataset"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
)

// newDatasetService wires datasets: versions are made in the background as
// their owner, and those a restart interrupted resume; auto-labeling calls
// services through predictor (the gateway). A failed start-up is
// logged: the API still answers and reports its own errors.
func newDatasetService(ctx context.Context, store meta.Store, iam *auth.Service, objects *obs.Service, holds *dataset.Holds, predictor dataset.Predictor,
	log *slog.Logger) *dataset.Service {
	svc := dataset.New(store, objects, iam, dataset.Options{Logger: log, Predictor: predictor, Holds: holds,
		Principal: func(ctx context.Context, userID string) (*auth.Principal, error) {
			return iam.PrincipalOf(ctx, userID, "dataset")
		}})
	if err := svc.Init(ctx); err != nil {
		log.Error("dataset start-up failed", "err", errs.UserMessage(err))
	}
	return svc
}
