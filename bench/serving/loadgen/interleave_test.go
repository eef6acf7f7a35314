package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	if got, want := plan(2, 4), []int{0, 1, 1, 0, 0, 1, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("plan(2, 4) = %v, want %v", got, want)
	}
	if got, want := plan(3, 2), []int{0, 1, 2, 2, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("plan(3, 2) = %v, want %v", got, want)
	}
}

// TestInterleaved: a target answering at once against one that takes 2ms a
// request; each is measured only in its own slices.
func TestInterleaved(t *testing.T) {
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer fast.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Millisecond) }))
	defer slow.Close()
	res, err := runInterleaved([]string{fast.URL + "/", slow.URL + "/"}, []string{"fast", "slow"}, 2,
		800*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond, "GET", nil, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 2 || res.Targets[0].Label != "fast" || res.Targets[1].Label != "slow" {
		t.Fatalf("targets %+v", res.Targets)
	}
	if len(res.Cycles) != 8 || len(res.Ratios) != 8 {
		t.Fatalf("%d cycles, %d ratios, want 8", len(res.Cycles), len(res.Ratios))
	}
	for _, tg := range res.Targets {
		if tg.Errors != 0 || tg.Non2xx != 0 || tg.Requests == 0 {
			t.Errorf("%s: %d requests, %d errors, %d non-2xx (%s)", tg.Label, tg.Requests, tg.Errors, tg.Non2xx, tg.FirstError)
		}
		if tg.Seconds < 0.3 || tg.Seconds > 0.6 {
			t.Errorf("%s active %.3fs, want about 0.4s", tg.Label, tg.Seconds)
		}
	}
	// 2 workers at 2ms+ a request: at most ~1000 req/s on the slow one.
	if s := res.Targets[1].RPS; s > 1100 {
		t.Errorf("slow target at %.0f req/s: its requests were not its own", s)
	}
	if m := median(slices.Clone(res.Ratios)); m < 2 {
		t.Errorf("median ratio fast/slow %.2f, want well above 1", m)
	}
	if res.Targets[1].P50Ms < 2 {
		t.Errorf("slow p50 %.3f ms, want at least 2", res.Targets[1].P50Ms)
	}
}
