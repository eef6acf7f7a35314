package job

import (
	"slices"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/obs"
)

// record reads the stored record of job id.
func (e *inputsEnv) record(id string) *record {
	e.t.Helper()
	return storedRecord(e.t, e.ctx, e.store, id)
}

// prefetch makes the listings of r's attempt and waits until they are made.
func prefetch(rs *Runners, r *record) {
	rs.prefetchInputs(r)
	if e := rs.pre.get(prefetchKey(r.raw.ID, r.st.Attempt)); e != nil {
		<-e.done
	}
}

func listingKeys(ls []api.RunnerInputListing) map[string][]string {
	out := map[string][]string{}
	for _, l := range ls {
		out[l.Name] = []string{}
		for _, o := range l.Items {
			out[l.Name] = append(out[l.Name], o.Key)
		}
	}
	return out
}

// TestRunnerJobHandsOverPrefetchedListings: the listings made when the
// attempt started come with the runner's fetch of the job, the same as
// the inputs call answers; once, and only for the attempt they were made
// for.
func TestRunnerJobHandsOverPrefetchedListings(t *testing.T) {
	e := newInputsEnv(t)
	id, token := e.job("alice", map[string]string{"dir": "obs://data/ds/", "one": "obs://data/single.csv", "missing": "obs://data/nothing"})
	rs := e.svc.Runners
	rj, err := rs.RunnerJob(e.ctx, id, token)
	if err != nil {
		t.Fatal(err)
	}
	if rj.Inputs != nil {
		t.Errorf("listings without a prefetch: %v", rj.Inputs)
	}
	prefetch(rs, e.record(id))
	if rj, err = rs.RunnerJob(e.ctx, id, token); err != nil {
		t.Fatal(err)
	}
	got := listingKeys(rj.Inputs)
	want := map[string][]string{"dir": {"ds/a.jpg", "ds/sub/", "ds/sub/b.jpg"}, "one": {"single.csv"}, "missing": {}}
	if len(got) != len(want) {
		t.Fatalf("listings %v; want %v", got, want)
	}
	for name, keys := range want {
		if !slices.Equal(got[name], keys) {
			t.Errorf("listing %s = %q; want %q", name, got[name], keys)
		}
		l, err := rs.RunnerInputList(e.ctx, id, token, name)
		if err != nil {
			t.Fatal(err)
		}
		for i, it := range l.Items {
			if g := rj.Inputs[slices.IndexFunc(rj.Inputs, func(x api.RunnerInputListing) bool { return x.Name == name })].Items[i]; g != it {
				t.Errorf("%s item %d: %+v; the inputs call says %+v", name, i, g, it)
			}
		}
	}
	// Handed over once: a second fetch lists nothing more.
	if rj, err = rs.RunnerJob(e.ctx, id, token); err != nil || rj.Inputs != nil {
		t.Errorf("second fetch: %v %v", rj.Inputs, err)
	}
	// A wrong token gets nothing, and leaves the listings for the runner.
	prefetch(rs, e.record(id))
	if _, err := rs.RunnerJob(e.ctx, id, "wrong"); err == nil {
		t.Error("a wrong token fetched the job")
	}
	if rj, err = rs.RunnerJob(e.ctx, id, token); err != nil || len(rj.Inputs) != 3 {
		t.Errorf("after a wrong token: %v %v", rj.Inputs, err)
	}
}

// TestPrefetchOnlyWhatTheJobMayList: a job's listings are made with its
// credentials' rights: bob's job with an input in alice's bucket gets no
// listing of it (his runner lists it itself and is refused there), and
// one when a bucket policy lets bob list it.
func TestPrefetchOnlyWhatTheJobMayList(t *testing.T) {
	e := newInputsEnv(t)
	id, token := e.job("bob", map[string]string{"dir": "obs://data/ds/"})
	rs := e.svc.Runners
	prefetch(rs, e.record(id))
	rj, err := rs.RunnerJob(e.ctx, id, token)
	if err != nil {
		t.Fatal(err)
	}
	if len(rj.Inputs) != 0 {
		t.Fatalf("bob's job got a listing of alice's bucket: %v", listingKeys(rj.Inputs))
	}
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::data"}]}`
	if err := e.obs.PutBucketPolicy(e.ctx, obs.As(e.principal("alice")), "data", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	prefetch(rs, e.record(id))
	if rj, err = rs.RunnerJob(e.ctx, id, token); err != nil || len(rj.Inputs) != 1 || len(rj.Inputs[0].Items) != 3 {
		t.Errorf("with the bucket policy: %v %v", listingKeys(rj.Inputs), err)
	}
}

// TestPrefetchBounded: the listings of one job hold at most the limit of
// objects in all; an input that would pass it is left to the runner.
func TestPrefetchBounded(t *testing.T) {
	e := newInputsEnv(t)
	id, _ := e.job("alice", map[string]string{"dir": "obs://data/ds/", "one": "obs://data/single.csv", "two": "obs://data/ds2/"})
	r := e.record(id)
	names := []string{"dir", "one", "two"}
	for _, c := range []struct {
		limit int
		want  []string
	}{
		{100, []string{"dir", "one", "two"}},
		{5, []string{"dir", "one", "two"}},
		{4, []string{"dir", "one"}}, // 3 + 1, then nothing is left
		{2, []string{"one", "two"}}, // dir (3) does not fit
		{0, nil},
	} {
		ls := e.svc.Runners.listInputs(e.ctx, r, names, c.limit)
		var got []string
		n := 0
		for _, l := range ls {
			got = append(got, l.Name)
			n += len(l.Items)
		}
		if !slices.Equal(got, c.want) || n > c.limit {
			t.Errorf("limit %d: %v (%d objects); want %v", c.limit, got, n, c.want)
		}
	}
}

// TestPrefetchesBounded: at most prefetchMax attempts' listings are held;
// those older than prefetchTTL make room.
func TestPrefetchesBounded(t *testing.T) {
	var p prefetches
	t0 := time.Unix(1000, 0)
	for i := range prefetchMax {
		if p.begin(prefetchKey("j", i), t0) == nil {
			t.Fatalf("attempt %d refused", i)
		}
	}
	if p.begin("j/x", t0) != nil {
		t.Error("more than prefetchMax held")
	}
	close(p.get(prefetchKey("j", 3)).done)
	if p.get(prefetchKey("j", 3)) == nil || p.take(prefetchKey("j", 3)) != nil || p.get(prefetchKey("j", 3)) != nil {
		t.Error("take is not once")
	}
	if p.take(prefetchKey("j", 4)) != nil || p.get(prefetchKey("j", 4)) == nil {
		t.Error("take handed over listings still being made")
	}
	if p.begin("j/y", t0) == nil {
		t.Error("no room after a take")
	}
	if p.begin("j/z", t0.Add(prefetchTTL+time.Second)) == nil || len(p.m) != 1 {
		t.Errorf("expired entries kept: %d held", len(p.m))
	}
}

// TestInputsCallWaitsForPrefetch: listings still being made when the
// runner fetches its job do not come with it; the runner's inputs calls
// answer them once made (each once), not a listing of their own, and list
// what the prefetch left out.
func TestInputsCallWaitsForPrefetch(t *testing.T) {
	e := newInputsEnv(t)
	id, token := e.job("alice", map[string]string{"dir": "obs://data/ds/", "one": "obs://data/single.csv"})
	rs := e.svc.Runners
	r := e.record(id)
	key := prefetchKey(id, r.st.Attempt)
	p := rs.pre.begin(key, time.Now())
	rj, err := rs.RunnerJob(e.ctx, id, token)
	if err != nil || rj.Inputs != nil {
		t.Fatalf("fetch while listing: %v %v", rj.Inputs, err)
	}
	// A marker only the made listing has.
	p.lists = []api.RunnerInputListing{{Name: "dir", Items: []api.RunnerObject{{Key: "ds/made-by-prefetch"}}}}
	go close(p.done)
	l, err := rs.RunnerInputList(e.ctx, id, token, "dir")
	if err != nil || len(l.Items) != 1 || l.Items[0].Key != "ds/made-by-prefetch" {
		t.Fatalf("inputs call: %+v %v", l, err)
	}
	if rs.pre.get(key) != nil {
		t.Error("the entry outlived its last listing")
	}
	for _, name := range []string{"dir", "one"} { // handed out once; "one" was left out
		if l, err := rs.RunnerInputList(e.ctx, id, token, name); err != nil || len(l.Items) == 0 || l.Items[0].Key == "ds/made-by-prefetch" {
			t.Errorf("%s listed again: %+v %v", name, l, err)
		}
	}
}
