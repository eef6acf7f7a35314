package apiserver

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
)

// TestCapacityOverHTTP: GET /api/v1/capacity shows an admin every holder
// and waiting request by name, another user its own and the others' as
// totals; a Deny of atelier:capacity:Get refuses it; ?watch=VERSION
// answers at the ledger's next change.
func TestCapacityOverHTTP(t *testing.T) {
	e := newEnv(t)
	aak, ask := e.newUser("alice")
	e.newUser("bob")
	cak, csk := e.newUser("carol")
	ctx := context.Background()
	alice, err := e.store.GetUserByName(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := e.store.GetUserByName(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	const gib = 1 << 30
	l := capacity.New(capacity.Capacity{CPU: 2, Memory: 8 * gib, Overcommit: capacity.Overcommit{CPU: 2, Memory: 1}}, capacity.Job, capacity.Instance)
	l.Sync(capacity.Job, []capacity.Holder{{ID: "j1", Name: "train", Owner: alice.ID, Need: capacity.Resources{CPU: 1, Memory: gib}}},
		[]capacity.Request{{ID: "j2", Name: "bobs-job", Owner: bob.ID, Need: capacity.Resources{CPU: 4, Memory: gib}, Reason: "cpu: needs 4, 3 free of 4", Position: 1}})
	l.Sync(capacity.Instance, []capacity.Holder{{ID: "i1", Name: "bobs-service", Owner: bob.ID, Need: capacity.Resources{CPU: 0.25, Memory: gib / 2},
		Limit: capacity.Resources{CPU: 1, Memory: gib}}}, nil)
	e.api.deps.Capacity = capacity.NewView(l, e.iam, e.store, nil,
		capacity.Sources{CPU: api.SourceDeclared, Memory: api.SourceDeclared, GPU: api.SourceDetected})

	var all api.Capacity
	e.mustJSON(e.admin("GET", "/api/v1/capacity", ""), 200, &all)
	if len(all.Holders) != 2 || len(all.Waiting) != 1 || all.Others != nil || all.Waiting[0].Owner != "bob" || all.Waiting[0].Reason != "cpu: needs 4, 3 free of 4" {
		t.Fatalf("admin sees %+v", all)
	}
	if cpu := all.Resources[0]; cpu.Bookable != 4 || cpu.Requested != 1.25 || cpu.Limits != 2 || cpu.Used != nil {
		t.Errorf("cpu %+v", cpu)
	}

	r := e.do("GET", "/api/v1/capacity", "", aak, ask)
	var mine api.Capacity
	e.mustJSON(r, 200, &mine)
	if len(mine.Holders) != 1 || mine.Holders[0].Name != "train" || mine.Holders[0].Owner != "alice" || len(mine.Waiting) != 0 ||
		mine.Others == nil || mine.Others.Holders != 1 || mine.Others.Waiting != 1 || mine.Others.WaitingRequest.CPU != 4 {
		t.Fatalf("alice sees %+v", mine)
	}
	for _, leak := range []string{"bob", "j2", "i1"} {
		if strings.Contains(string(r.body), leak) {
			t.Errorf("alice's answer names %q: %s", leak, r.body)
		}
	}

	e.mustJSON(e.admin("POST", "/api/v1/policies", `{"name":"no-capacity","document":{"Version":"1.1","Statement":[{"Effect":"Deny","Action":["atelier:capacity:Get"],"Resource":["*"]}]}}`), 201, nil)
	if r := e.admin("POST", "/api/v1/users/carol/policies", `{"policy":"no-capacity"}`); r.status != 204 {
		t.Fatalf("attach: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/v1/capacity", "", cak, csk); r.status != 403 || r.err().ErrorCode != "ATL.IAM.0011" {
		t.Errorf("denied: %d %s", r.status, r.body)
	}
	for _, q := range []string{"watch=x", "watch=-1", "watch=1&timeout=61", "timeout=soon"} {
		if r := e.admin("GET", "/api/v1/capacity?"+q, ""); r.status != 400 || r.err().ErrorCode != "ATL.API.0008" {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}

	// A watch answers at the next change.
	got := make(chan api.Capacity, 1)
	go func() {
		var c api.Capacity
		e.mustJSON(e.do("GET", "/api/v1/capacity?timeout=30&watch="+strconv.FormatUint(mine.Version, 10), "", aak, ask), 200, &c)
		got <- c
	}()
	l.Wait(capacity.Request{Kind: capacity.Job, ID: "j3", Name: "next", Owner: alice.ID, Need: capacity.Resources{CPU: 1}, Reason: "cpu: needs 1", Position: 2})
	select {
	case c := <-got:
		if c.Version <= mine.Version || len(c.Waiting) != 1 || c.Waiting[0].Name != "next" {
			t.Errorf("the watch answered %+v", c)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the watch did not answer at the change")
	}
	// A watch of an old version answers at once.
	var c api.Capacity
	e.mustJSON(e.do("GET", "/api/v1/capacity?timeout=30&watch="+strconv.FormatUint(mine.Version, 10), "", aak, ask), 200, &c)
	if c.Version == mine.Version {
		t.Errorf("an old version was waited on")
	}
}
