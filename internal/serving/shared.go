package serving

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/optimistic"
	"github.com/atelier-dev/atelier/internal/serving/gateway"
)

// shared is the state the three roles of online services share: the
// store, with a lock per service and optimistic updates of its records;
// the gateway's routes and figures; the capacity ledger; the controller's
// wake-up; and what the server keeps in memory about instances (which
// service each belongs to, when its runner last called).
type shared struct {
	store  Store
	router Router
	ledger Ledger // the machine's capacity, shared with training jobs
	wake   *Wakeup
	o      Options
	log    *slog.Logger

	locks optimistic.Locks // per service id (update)
	// quota serialises, per owner, counting running services and the
	// deploy or start after it. A lock set of its own: quotaLock is held
	// while a service's lock is taken, and one set could give both the same
	// stripe.
	quota optimistic.Locks
	index sync.Map // instance id → service id
	seen  sync.Map // instance id → time.Time of the last runner contact

	pubMu     sync.Mutex
	published map[string]int64 // service id → record version of the route last set

	countMu sync.Mutex
	counted map[string]counted // service id → gateway figures already added to the record
}

// counted are the gateway request figures of a service already stored.
type counted struct{ requests, errors int64 }

func (s *shared) now() time.Time { return s.o.Now().UTC() }

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// update applies fn to the freshest record of id under the service's lock
// and stores it, retrying on a concurrent change. fn returning false skips
// the write.
func (s *shared) update(ctx context.Context, id string, fn func(r *record) (bool, error)) (*record, error) {
	return optimistic.Update(ctx, "serving.update", &s.locks, id, "service "+id,
		func(ctx context.Context) (*record, error) {
			raw, err := s.store.GetService(ctx, id)
			if err != nil {
				return nil, err
			}
			return decode(raw)
		}, fn,
		func(ctx context.Context, r *record) error {
			if err := r.encode(); err != nil {
				return errs.E("record.encode", errs.Internal, err)
			}
			return s.store.UpdateService(ctx, r.raw)
		})
}

// event records an event of a service.
func (s *shared) event(ctx context.Context, id string, e meta.ServiceEvent) {
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	if err := s.store.AddServiceEvent(ctx, id, e); err != nil && !errs.Is(err, errs.NotFound) {
		s.log.Warn("recording service event", "service", id, "err", err)
	}
}

func info(source, msg string) meta.ServiceEvent {
	return meta.ServiceEvent{Level: "Info", Source: source, Message: msg}
}

func warning(source, msg string) meta.ServiceEvent {
	return meta.ServiceEvent{Level: "Warning", Source: source, Message: msg}
}

func failure(source, msg string) meta.ServiceEvent {
	return meta.ServiceEvent{Level: "Error", Source: source, Message: msg}
}

// kick wakes the controller.
func (s *shared) kick() { s.wake.Kick() }

func (s *shared) flavor(id string) (api.Flavor, bool) { return api.FlavorByID(s.o.Flavors, id) }

func (s *shared) engine(name string) (api.Engine, bool) { return api.EngineByName(s.o.Engines, name) }

// eachService calls fn for every service in one of statuses (all when
// nil).
func (s *shared) eachService(ctx context.Context, statuses []string, fn func(r *record)) error {
	const op errs.Op = "serving.eachService"
	var recs []*record
	for off := 0; ; {
		page, total, err := s.store.ListServices(ctx, meta.ServiceFilter{Statuses: statuses}, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return errs.E(op, err)
		}
		for _, raw := range page {
			r, err := decode(raw)
			if err != nil {
				s.log.Error("undecodable service record", "service", raw.ID, "err", err)
				continue
			}
			recs = append(recs, r)
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			break
		}
	}
	for _, r := range recs {
		fn(r)
	}
	return nil
}

// ---- helpers ----

func newAppCode() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// route is the gateway's route of a record: only wanted, ready instances
// of the current config take traffic.
func route(r *record) gateway.Route {
	rt := gateway.Route{ServiceID: r.raw.ID, Name: r.spec.ServiceName, OwnerID: r.raw.OwnerID, Status: r.st.Status,
		Auth: r.spec.Auth, AppCode: r.spec.AppCode, Timeout: time.Duration(r.spec.TimeoutSeconds * float64(time.Second)),
		MaxBody: r.spec.MaxBodyBytes, Weights: map[string]int{}, StoppedReason: r.st.StoppedReason,
		ScaleFromZero: r.spec.Autoscale != nil && r.spec.Autoscale.Min == 0}
	if r.st.Status == api.ServiceFailed && rt.StoppedReason == "" {
		rt.StoppedReason = r.st.ErrorMsg
	}
	for _, c := range r.spec.Config {
		rt.Weights[c.ModelID] = int(c.Weight)
	}
	for _, in := range r.st.Instances {
		if in.Phase != PhaseReady || in.Stop {
			continue
		}
		if c := r.config(in.ModelID); c == nil {
			continue
		}
		irt := r.rt.Instances[in.ID]
		if irt == nil || irt.Dir == "" {
			continue
		}
		rt.Backends = append(rt.Backends, gateway.Backend{InstanceID: in.ID, ModelID: in.ModelID,
			Addr: filepath.Join(irt.Dir, api.InstanceSocket), Secret: irt.Secret})
	}
	return rt
}

// publish sets the gateway's route of r unless a newer version of the
// record was published already.
func (s *shared) publish(r *record) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if v, ok := s.published[r.raw.ID]; ok && v >= r.raw.Version {
		return
	}
	s.published[r.raw.ID] = r.raw.Version
	s.router.Set(route(r))
}
