package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Capacity is the machine's capacity view as the API uses it
// (*capacity.View).
type Capacity interface {
	Get(ctx context.Context, p *auth.Principal, watch uint64, wait time.Duration) (*api.Capacity, error)
}

// DefaultWatchTimeout is how long GET /api/v1/capacity?watch=V waits for a
// change without a timeout parameter.
const DefaultWatchTimeout = 30 * time.Second

func (s *Server) capacityRoutes() []route {
	return []route{{method: "GET", path: "/api/v1/capacity", h: s.getCapacity}}
}

// getCapacity answers GET /api/v1/capacity[?watch=VERSION[&timeout=SECONDS]]:
// with watch, at the ledger's next change after that version (or once the
// timeout, at most 60 s, passed).
func (s *Server) getCapacity(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.getCapacity"
	if s.deps.Capacity == nil {
		return errs.E(op, errs.Unavailable, "the capacity view is not enabled on this server")
	}
	q := r.URL.Query()
	var watch uint64
	if v := q.Get("watch"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return errs.E(op, errs.Invalid, CodeBadQuery, "query parameter watch must be a version (a whole number) from an earlier answer")
		}
		watch = n
	}
	wait := DefaultWatchTimeout
	if v := q.Get("timeout"); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs < 0 || secs > 60 {
			return errs.E(op, errs.Invalid, CodeBadQuery, "query parameter timeout must be 0 to 60 seconds")
		}
		wait = time.Duration(secs * float64(time.Second))
	}
	c, err := s.deps.Capacity.Get(r.Context(), p, watch, wait)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}
