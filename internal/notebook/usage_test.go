package notebook

import (
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// TestUsage: a notebook's ended runs and its run now are metered, an idle
// one is listed with why, and another user sees none of it.
func TestUsage(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.IdleStop = 2 * time.Hour })
	t0 := e.clock.Now()
	nb, tok := e.running("dev")
	e.clock.add(time.Hour)
	if _, err := e.n.Stop(t.Context(), e.alice, nb.ID); err != nil {
		t.Fatal(err)
	}
	e.report(nb.ID, tok, api.NotebookReport{Phase: api.NotebookPhaseExited})
	t1 := e.clock.Now()
	e.clock.add(time.Hour)
	if _, err := e.n.Start(t.Context(), e.alice, nb.ID); err != nil {
		t.Fatal(err)
	}
	e.pass()
	t2 := e.clock.Now()
	tok2 := e.token(e.exec.started()[1])
	e.report(nb.ID, tok2, api.NotebookReport{Phase: api.NotebookPhaseRunning, Kernels: []api.NotebookKernel{{ID: "k1", State: "idle"}}})
	e.clock.add(30 * time.Minute)

	runs, idle, err := e.n.Usage(t.Context(), e.alice, "u-alice")
	if err != nil {
		t.Fatal(err)
	}
	want := []Run{
		{ID: nb.ID, Name: "dev", OwnerID: "u-alice", Flavor: "cpu.1", Start: t0, End: t1},
		{ID: nb.ID, Name: "dev", OwnerID: "u-alice", Flavor: "cpu.1", Start: t2},
	}
	if len(runs) != 2 {
		t.Fatalf("runs %+v", runs)
	}
	for i := range want {
		if g := runs[i]; g.ID != want[i].ID || g.Name != "dev" || g.Flavor != "cpu.1" || !g.Start.Equal(want[i].Start) || !g.End.Equal(want[i].End) {
			t.Errorf("run %d: %+v, want %+v", i, g, want[i])
		}
	}
	if len(idle) != 1 || idle[0].ID != nb.ID || idle[0].Reason == "" || idle[0].StopAt.IsZero() {
		t.Errorf("idle %+v", idle)
	}
	// A busy kernel is not idle.
	e.report(nb.ID, tok2, api.NotebookReport{Phase: api.NotebookPhaseRunning, Kernels: []api.NotebookKernel{{ID: "k1", State: "busy"}}})
	if _, idle, _ := e.n.Usage(t.Context(), e.alice, ""); len(idle) != 0 {
		t.Errorf("busy notebook listed idle: %+v", idle)
	}
	if runs, idle, err := e.n.Usage(t.Context(), e.bob, ""); err != nil || len(runs) != 0 || len(idle) != 0 {
		t.Errorf("bob sees %+v %+v %v", runs, idle, err)
	}
	// The remembered runs are bounded.
	r := &record{rt: runtime{TokenHash: "h"}, st: state{StartTime: 1}}
	for range maxPastRuns + 5 {
		closeRun(r, t0)
	}
	if len(r.st.Past) != maxPastRuns {
		t.Errorf("%d past runs kept", len(r.st.Past))
	}
	closeRun(&record{st: state{StartTime: 1}}, t0) // never launched: nothing, no panic
}
