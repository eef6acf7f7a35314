package serving

import (
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// TestServicesPerUserQuota: a user runs at most quotas.services_per_user
// services at once: one more deploy, or the start of a stopped one, is
// refused with the count and a hint; another user is not counted; a
// stopped service frees its place.
func TestServicesPerUserQuota(t *testing.T) {
	e := newEnv(t)
	e.d.o.ServicesPerUser = 2
	a := e.deploy(api.DeployRequest{ServiceName: "a", Config: one("m1", 1)}).ServiceID
	e.deploy(api.DeployRequest{ServiceName: "b", Config: one("m1", 1)})
	_, err := e.d.Deploy(e.ctx, e.alice, &api.DeployRequest{ServiceName: "c", Config: one("m1", 1)})
	if errs.CodeOf(err) != CodeQuota || !errs.Is(err, errs.Conflict) || errs.UserMessage(err) != "you run 2 of the 2 services your quota allows" ||
		errs.HintOf(err) == "" {
		t.Fatalf("a third service: %v", err)
	}
	// Stopping one frees a place; starting it again while the other two run is refused.
	if _, err := e.d.Update(e.ctx, e.alice, a, &api.UpdateServiceRequest{Status: api.ServiceStopped}); err != nil {
		t.Fatal(err)
	}
	e.deploy(api.DeployRequest{ServiceName: "c", Config: one("m1", 1)})
	if _, err := e.d.Update(e.ctx, e.alice, a, &api.UpdateServiceRequest{Status: api.ServiceRunning}); errs.CodeOf(err) != CodeQuota {
		t.Fatalf("starting a stopped service beyond the quota: %v", err)
	}
	// The quota is per user.
	if _, err := e.d.Deploy(e.ctx, e.admin, &api.DeployRequest{ServiceName: "admins", Config: one("m1", 1)}); err != nil {
		t.Errorf("another user's service: %v", err)
	}
}
