package obs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func TestLifecycleDecisions(t *testing.T) {
	now := time.Date(2031, 6, 15, 12, 0, 0, 0, time.UTC)
	obj := func(key string, size int64, age time.Duration, tags map[string]string) *meta.Object {
		return &meta.Object{Key: key, Size: size, LastModified: now.Add(-age), Tags: tags, IsLatest: true}
	}
	env := map[string]string{"env": "dev"}
	envTeam := map[string]string{"env": "dev", "team": "ml"}
	midnight := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	cases := []struct {
		name string
		rule LifecycleRule
		o    *meta.Object
		want bool
	}{
		{"prefix, old enough", LifecycleRule{Prefix: "logs/", ExpirationDays: 7}, obj("logs/a", 1, 8*day, nil), true},
		{"prefix, too young", LifecycleRule{Prefix: "logs/", ExpirationDays: 7}, obj("logs/a", 1, 6*day, nil), false},
		{"prefix, exactly the days", LifecycleRule{Prefix: "logs/", ExpirationDays: 7}, obj("logs/a", 1, 7*day, nil), false},
		{"other prefix", LifecycleRule{Prefix: "logs/", ExpirationDays: 7}, obj("log/a", 1, 8*day, nil), false},
		{"disabled", LifecycleRule{Status: LifecycleDisabled, ExpirationDays: 1}, obj("a", 1, 8*day, nil), false},
		{"no expiration action", LifecycleRule{AbortIncompleteDays: 1}, obj("a", 1, 8*day, nil), false},
		{"tag matches", LifecycleRule{Tags: []Tag{{"env", "dev"}}, ExpirationDays: 1}, obj("a", 1, 2*day, envTeam), true},
		{"tag value differs", LifecycleRule{Tags: []Tag{{"env", "prod"}}, ExpirationDays: 1}, obj("a", 1, 2*day, env), false},
		{"tag missing", LifecycleRule{Tags: []Tag{{"team", "ml"}}, ExpirationDays: 1}, obj("a", 1, 2*day, env), false},
		{"untagged object", LifecycleRule{Tags: []Tag{{"env", "dev"}}, ExpirationDays: 1}, obj("a", 1, 2*day, nil), false},
		{"empty tag value", LifecycleRule{Tags: []Tag{{"env", ""}}, ExpirationDays: 1}, obj("a", 1, 2*day, map[string]string{"env": ""}), true},
		{"every tag of an And", LifecycleRule{Tags: []Tag{{"env", "dev"}, {"team", "ml"}}, ExpirationDays: 1}, obj("a", 1, 2*day, envTeam), true},
		{"one tag of an And missing", LifecycleRule{Tags: []Tag{{"env", "dev"}, {"team", "ml"}}, ExpirationDays: 1}, obj("a", 1, 2*day, env), false},
		{"greater than", LifecycleRule{SizeGreaterThan: 100, ExpirationDays: 1}, obj("a", 101, 2*day, nil), true},
		{"greater than is strict", LifecycleRule{SizeGreaterThan: 100, ExpirationDays: 1}, obj("a", 100, 2*day, nil), false},
		{"less than", LifecycleRule{SizeLessThan: 100, ExpirationDays: 1}, obj("a", 99, 2*day, nil), true},
		{"less than is strict", LifecycleRule{SizeLessThan: 100, ExpirationDays: 1}, obj("a", 100, 2*day, nil), false},
		{"empty object, less than", LifecycleRule{SizeLessThan: 1, ExpirationDays: 1}, obj("a", 0, 2*day, nil), true},
		{"in the size range", LifecycleRule{SizeGreaterThan: 10, SizeLessThan: 20, ExpirationDays: 1}, obj("a", 15, 2*day, nil), true},
		{"below the size range", LifecycleRule{SizeGreaterThan: 10, SizeLessThan: 20, ExpirationDays: 1}, obj("a", 5, 2*day, nil), false},
		{"And: all hold", LifecycleRule{Prefix: "p/", Tags: []Tag{{"env", "dev"}}, SizeGreaterThan: 10, ExpirationDays: 1}, obj("p/a", 11, 2*day, env), true},
		{"And: prefix fails", LifecycleRule{Prefix: "p/", Tags: []Tag{{"env", "dev"}}, SizeGreaterThan: 10, ExpirationDays: 1}, obj("q/a", 11, 2*day, env), false},
		{"And: size fails", LifecycleRule{Prefix: "p/", Tags: []Tag{{"env", "dev"}}, SizeGreaterThan: 10, ExpirationDays: 1}, obj("p/a", 10, 2*day, env), false},
		{"date passed", LifecycleRule{ExpirationDate: midnight(2031, 6, 15)}, obj("a", 1, 0, nil), true},
		{"date in the future", LifecycleRule{ExpirationDate: midnight(2031, 6, 16)}, obj("a", 1, 400*day, nil), false},
		{"date passed, tag fails", LifecycleRule{ExpirationDate: midnight(2031, 1, 1), Tags: []Tag{{"env", "prod"}}}, obj("a", 1, 0, env), false},
		{"delete marker", LifecycleRule{ExpirationDays: 1}, &meta.Object{Key: "a", DeleteMarker: true, LastModified: now.Add(-2 * day)}, false},
	}
	for _, tc := range cases {
		if tc.rule.Status == "" {
			tc.rule.Status = LifecycleEnabled
		}
		if got := ExpiresCurrent(&tc.rule, tc.o, now); got != tc.want {
			t.Errorf("%s: ExpiresCurrent = %v, want %v", tc.name, got, tc.want)
		}
	}

	ver := func(key string, size int64, tags map[string]string, marker bool) *meta.Object {
		return &meta.Object{Key: key, Size: size, Tags: tags, DeleteMarker: marker, VersionID: "v"}
	}
	noncurrent := []struct {
		name  string
		rule  LifecycleRule
		v     *meta.Object
		newer int
		since time.Duration // how long ago v became noncurrent
		want  bool
	}{
		{"old enough", LifecycleRule{NoncurrentDays: 2}, ver("a", 1, nil, false), 0, 3 * day, true},
		{"too young", LifecycleRule{NoncurrentDays: 2}, ver("a", 1, nil, false), 0, day, false},
		{"kept as one of the newest", LifecycleRule{NoncurrentDays: 2, NewerNoncurrentVersions: 2}, ver("a", 1, nil, false), 1, 3 * day, false},
		{"beyond the newest kept", LifecycleRule{NoncurrentDays: 2, NewerNoncurrentVersions: 2}, ver("a", 1, nil, false), 2, 3 * day, true},
		{"tag of the version matches", LifecycleRule{NoncurrentDays: 1, Tags: []Tag{{"env", "dev"}}}, ver("a", 1, env, false), 0, 3 * day, true},
		{"tag of the version differs", LifecycleRule{NoncurrentDays: 1, Tags: []Tag{{"env", "dev"}}}, ver("a", 1, nil, false), 0, 3 * day, false},
		{"size of the version", LifecycleRule{NoncurrentDays: 1, SizeGreaterThan: 5}, ver("a", 5, nil, false), 0, 3 * day, false},
		{"marker, prefix rule", LifecycleRule{NoncurrentDays: 1, Prefix: "a"}, ver("a", 0, nil, true), 0, 3 * day, true},
		{"marker, tag rule", LifecycleRule{NoncurrentDays: 1, Tags: []Tag{{"env", "dev"}}}, ver("a", 0, nil, true), 0, 3 * day, false},
		{"marker, size rule", LifecycleRule{NoncurrentDays: 1, SizeLessThan: 5}, ver("a", 0, nil, true), 0, 3 * day, false},
		{"no noncurrent action", LifecycleRule{ExpirationDays: 1}, ver("a", 1, nil, false), 0, 3 * day, false},
		{"disabled", LifecycleRule{Status: LifecycleDisabled, NoncurrentDays: 1}, ver("a", 1, nil, false), 0, 3 * day, false},
	}
	for _, tc := range noncurrent {
		if tc.rule.Status == "" {
			tc.rule.Status = LifecycleEnabled
		}
		if got := ExpiresNoncurrent(&tc.rule, tc.v, tc.newer, now.Add(-tc.since), now); got != tc.want {
			t.Errorf("noncurrent %s: ExpiresNoncurrent = %v, want %v", tc.name, got, tc.want)
		}
	}

	marker := &meta.Object{Key: "logs/a", DeleteMarker: true, IsLatest: true}
	r := LifecycleRule{Status: LifecycleEnabled, Prefix: "logs/", ExpiredObjectDeleteMarker: true}
	if !ExpiresDeleteMarker(&r, marker, true) || ExpiresDeleteMarker(&r, marker, false) {
		t.Error("ExpiresDeleteMarker: an only marker expires, one with older versions does not")
	}
	if ExpiresDeleteMarker(&r, &meta.Object{Key: "other", DeleteMarker: true, IsLatest: true}, true) {
		t.Error("ExpiresDeleteMarker: a marker outside the prefix expired")
	}
	if ExpiresDeleteMarker(&r, &meta.Object{Key: "logs/b", IsLatest: true}, true) {
		t.Error("ExpiresDeleteMarker: an object expired")
	}
}

func TestValidateLifecycleFilters(t *testing.T) {
	midnight := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	en := func(r LifecycleRule) []LifecycleRule { r.Status = LifecycleEnabled; return []LifecycleRule{r} }
	ok := [][]LifecycleRule{
		en(LifecycleRule{Tags: []Tag{{"a", "b"}}, ExpirationDays: 1}),
		en(LifecycleRule{Prefix: "p", Tags: []Tag{{"a", "b"}, {"c", ""}}, SizeGreaterThan: 1, SizeLessThan: 2, ExpirationDate: midnight, FilterForm: LifecycleFormAnd}),
		en(LifecycleRule{SizeLessThan: 1, NoncurrentDays: 1}),
		en(LifecycleRule{ExpirationDate: midnight.In(time.FixedZone("east", 3600)).Add(0)}), // midnight UTC, written in another zone
		en(LifecycleRule{Prefix: "p", FilterForm: LifecycleFormPrefix, ExpirationDays: 1}),
		en(LifecycleRule{FilterForm: LifecycleFormEmpty, AbortIncompleteDays: 1}),
	}
	for i, rules := range ok {
		got, err := ValidateLifecycle(rules)
		if err != nil {
			t.Errorf("ok %d: %v", i, err)
			continue
		}
		if d := got[0].ExpirationDate; !d.IsZero() && d.Location() != time.UTC {
			t.Errorf("ok %d: the date is kept in %v", i, d.Location())
		}
	}
	bad := []struct {
		rules []LifecycleRule
		msg   string
	}{
		{en(LifecycleRule{ExpirationDate: midnight.Add(time.Hour)}), "'Date' must be at midnight GMT"},
		{en(LifecycleRule{ExpirationDate: midnight, ExpirationDays: 1}), "Days or Date, not both"},
		{en(LifecycleRule{ExpirationDate: midnight, ExpiredObjectDeleteMarker: true}), "one of them"},
		{en(LifecycleRule{Tags: []Tag{{"a", "b"}}, AbortIncompleteDays: 1}), "AbortIncompleteMultipartUpload cannot be specified with Tags"},
		{en(LifecycleRule{Tags: []Tag{{"a", "b"}}, ExpiredObjectDeleteMarker: true}), "ExpiredObjectDeleteMarker cannot be specified with Tags"},
		{en(LifecycleRule{SizeGreaterThan: 5, AbortIncompleteDays: 1}), "AbortIncompleteMultipartUpload cannot be specified with Object Size"},
		{en(LifecycleRule{SizeGreaterThan: 5, SizeLessThan: 5, ExpirationDays: 1}), "ObjectSizeGreaterThan (5) must be less than ObjectSizeLessThan (5)"},
		{en(LifecycleRule{SizeGreaterThan: 6, SizeLessThan: 5, ExpirationDays: 1}), "must be less than"},
		{en(LifecycleRule{SizeGreaterThan: -1, ExpirationDays: 1}), "'ObjectSizeGreaterThan' should be between"},
		{en(LifecycleRule{SizeLessThan: MaxLifecycleObjectSize + 1, ExpirationDays: 1}), "'ObjectSizeLessThan' should be between"},
		{en(LifecycleRule{Tags: []Tag{{"a", "b"}, {"a", "c"}}, ExpirationDays: 1}), "a"},
		{en(LifecycleRule{Tags: []Tag{{"", "b"}}, ExpirationDays: 1}), "tag key"},
		{en(LifecycleRule{Tags: []Tag{{"aws:x", "b"}}, ExpirationDays: 1}), "aws:"},
		{en(LifecycleRule{Tags: make([]Tag, 11), ExpirationDays: 1}), "11 tags"},
		{en(LifecycleRule{Prefix: "p", FilterForm: LifecycleFormEmpty, ExpirationDays: 1}), "filter form"},
		{en(LifecycleRule{Tags: []Tag{{"a", "b"}}, FilterForm: LifecycleFormPrefix, ExpirationDays: 1}), "filter form"},
		{en(LifecycleRule{FilterForm: "or", ExpirationDays: 1}), "unknown filter form"},
	}
	for _, tc := range bad {
		_, err := ValidateLifecycle(tc.rules)
		if errs.CodeOf(err) != CodeBadLifecycle || !strings.Contains(errs.UserMessage(err), tc.msg) {
			t.Errorf("%+v: %v, want %s containing %q", tc.rules[0], err, CodeBadLifecycle, tc.msg)
		}
	}
}

// TestApplyLifecycleFilters runs rules with tag, size and date filters over
// a bucket and checks which objects are left.
func TestApplyLifecycleFilters(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	put := func(key, body string, tags ...Tag) { t.Helper(); e.put(e.alice, "data", key, body, tags...) }
	put("tmp/dev", "x", Tag{"env", "dev"})
	put("tmp/prod", "x", Tag{"env", "prod"})
	put("tmp/untagged", "x")
	put("big/a", strings.Repeat("x", 100))
	put("big/small", "x")
	put("and/hit", strings.Repeat("x", 20), Tag{"env", "dev"}, Tag{"team", "ml"})
	put("and/one-tag", strings.Repeat("x", 20), Tag{"env", "dev"})
	put("and/small", "x", Tag{"env", "dev"}, Tag{"team", "ml"})
	put("dated/a", "x")
	today := e.clock.Now().UTC().Truncate(day)
	rules := []LifecycleRule{
		{ID: "tag", Status: LifecycleEnabled, Prefix: "tmp/", Tags: []Tag{{"env", "dev"}}, ExpirationDays: 1, FilterForm: LifecycleFormAnd},
		{ID: "size", Status: LifecycleEnabled, Prefix: "big/", SizeGreaterThan: 50, ExpirationDays: 1, FilterForm: LifecycleFormAnd},
		{ID: "and", Status: LifecycleEnabled, Prefix: "and/", Tags: []Tag{{"env", "dev"}, {"team", "ml"}}, SizeGreaterThan: 10, SizeLessThan: 1000, ExpirationDays: 1},
		{ID: "date", Status: LifecycleEnabled, Prefix: "dated/", ExpirationDate: today.Add(3 * day)},
	}
	if err := e.svc.PutLifecycle(e.ctx, e.alice, "data", rules); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetLifecycle(e.ctx, e.alice, "data")
	if err != nil || len(got) != 4 || len(got[2].Tags) != 2 || !got[3].ExpirationDate.Equal(today.Add(3*day)) || got[0].FilterForm != LifecycleFormAnd {
		t.Fatalf("GetLifecycle = %+v, %v", got, err)
	}
	left := func() string {
		t.Helper()
		list, err := e.svc.ListObjects(e.ctx, e.alice, "data", ListOptions{MaxKeys: 100})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range list.Objects {
			keys = append(keys, o.Key)
		}
		return strings.Join(keys, ",")
	}
	e.clock.Advance(2 * day)
	res, err := e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Expired != 3 {
		t.Fatalf("after 2 days: %+v, %v", res, err)
	}
	if got, want := left(), "and/one-tag,and/small,big/small,dated/a,tmp/prod,tmp/untagged"; got != want {
		t.Errorf("after 2 days, left %s\nwant %s", got, want)
	}
	// A tag added later brings an object under the rule; the date passes.
	if err := e.svc.PutObjectTagging(e.ctx, e.alice, "data", "tmp/untagged", []Tag{{"env", "dev"}}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * day)
	res, err = e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Expired != 2 {
		t.Fatalf("after 4 days: %+v, %v", res, err)
	}
	if got, want := left(), "and/one-tag,and/small,big/small,tmp/prod"; got != want {
		t.Errorf("after 4 days, left %s\nwant %s", got, want)
	}
	e.noLeaks()
}

// TestApplyLifecycleNoncurrentFilters: in a versioned bucket, tag and size
// filters select noncurrent versions by their own tags and sizes.
func TestApplyLifecycleNoncurrentFilters(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "ver")
	e.versioning("ver", "Enabled")
	put := func(key, body string, tags ...Tag) { t.Helper(); e.put(e.alice, "ver", key, body, tags...) }
	put("k", "old-dev", Tag{"env", "dev"})
	put("k", "old-prod", Tag{"env", "prod"})
	put("k", "new", Tag{"env", "dev"})
	put("s", "a-large-old-version")
	put("s", "b")
	put("s", "c")
	rules := []LifecycleRule{
		{ID: "dev", Status: LifecycleEnabled, Prefix: "k", Tags: []Tag{{"env", "dev"}}, NoncurrentDays: 1},
		{ID: "large", Status: LifecycleEnabled, Prefix: "s", SizeGreaterThan: 5, NoncurrentDays: 1},
	}
	if err := e.svc.PutLifecycle(e.ctx, e.alice, "ver", rules); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * day)
	res, err := e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Versions != 2 {
		t.Fatalf("%+v, %v", res, err)
	}
	if got, want := strings.Join(e.versions("ver"), ","), "k/new*,k/old-prod,s/c*,s/b"; got != want {
		t.Errorf("left %s\nwant %s", got, want)
	}
}

// afterList runs hook after each ListObjects page has been read: a write
// that lands between a lifecycle pass's listing and its deletes.
type afterList struct {
	Store
	hook func()
}

func (a *afterList) ListObjects(ctx context.Context, q meta.ListObjectsQuery) (*meta.ListObjectsResult, error) {
	res, err := a.Store.ListObjects(ctx, q)
	if a.hook != nil {
		a.hook()
	}
	return res, err
}

// TestApplyLifecycleDecidesAgain: objects overwritten or re-tagged between
// the pass's listing and its delete (in a versioned bucket, its delete
// marker) are decided again on what they are then: the new, untagged
// object is kept, and shown; one that still matches goes.
func TestApplyLifecycleDecidesAgain(t *testing.T) {
	for _, versioned := range []bool{false, true} {
		t.Run(map[bool]string{false: "unversioned", true: "versioned"}[versioned], func(t *testing.T) {
			var al *afterList
			e := newEnv(t, withStore(func(s Store) Store { al = &afterList{Store: s}; return al }))
			e.mkBucket(e.alice, "data")
			if versioned {
				e.versioning("data", VersioningEnabled)
			}
			tagged := func(key, body string, tags ...Tag) { t.Helper(); e.put(e.alice, "data", key, body, tags...) }
			tagged("overwritten", "old", Tag{"temp", "yes"})
			tagged("untagged", "old", Tag{"temp", "yes"})
			tagged("still", "old", Tag{"temp", "yes"})
			if err := e.svc.PutLifecycle(e.ctx, e.alice, "data", []LifecycleRule{{ID: "temp", Status: LifecycleEnabled, Tags: []Tag{{"temp", "yes"}}, ExpirationDays: 1}}); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * day)
			al.hook = func() {
				al.hook = nil
				tagged("overwritten", "new important bytes")                                            // no tag, and new
				tagged("still", "new but temporary", Tag{"temp", "yes"})                                // new: not a day old
				if err := e.svc.PutObjectTagging(e.ctx, e.alice, "data", "untagged", nil); err != nil { // the tag removed
					t.Error(err)
				}
			}
			res, err := e.svc.ApplyLifecycle(e.ctx)
			if err != nil || res.Expired != 0 {
				t.Fatalf("%+v, %v", res, err)
			}
			if got := e.get(e.alice, "data", "overwritten", GetOptions{}); got != "new important bytes" {
				t.Errorf("overwritten: %q", got)
			}
			e.get(e.alice, "data", "untagged", GetOptions{})
			e.get(e.alice, "data", "still", GetOptions{})
			e.clock.Advance(2 * day)
			res, err = e.svc.ApplyLifecycle(e.ctx)
			if err != nil || res.Expired != 1 {
				t.Fatalf("two days later: %+v, %v", res, err)
			}
			if _, err := e.svc.GetObject(e.ctx, e.alice, "data", "still", GetOptions{}); errs.CodeOf(err) != CodeNoSuchKey {
				t.Fatalf("the expired object: %v", err)
			}
			e.get(e.alice, "data", "overwritten", GetOptions{})
			e.noLeaks()
		})
	}
}

// holdSet is a Holds over a fixed set of "bucket/key/version" names.
type holdSet struct {
	held map[string]bool
	err  error
}

func (h *holdSet) Held(_ context.Context, owner, bucket, key, versionID string) (bool, error) {
	return h.held[owner+":"+bucket+"/"+key+"/"+versionID], h.err
}

// TestApplyLifecycleHolds: a noncurrent version that Holds keeps survives
// the rule that selects it (and is counted), its neighbours do not; the
// null version and delete markers are never asked about; a failing Holds
// stops the pass before it deletes anything it could not ask about.
func TestApplyLifecycleHolds(t *testing.T) {
	holds := &holdSet{held: map[string]bool{}}
	e := newEnv(t, func(o *Options, _ *env) { o.Holds = holds })
	e.mkBucket(e.alice, "ver")
	e.versioning("ver", "Enabled")
	kept := e.put(e.alice, "ver", "k", "pinned")
	e.put(e.alice, "ver", "k", "middle")
	e.put(e.alice, "ver", "k", "new")
	e.put(e.alice, "ver", "gone", "x")
	if err := e.svc.DeleteObject(e.ctx, e.alice, "ver", "gone"); err != nil {
		t.Fatal(err)
	}
	holds.held["id-alice:ver/k/"+kept.VersionID] = true
	holds.held["id-alice:ver/k/"] = true              // the null version: never asked about
	holds.held["id-bob:ver/k/"+kept.VersionID] = true // not the owner: no hold
	rules := []LifecycleRule{{ID: "old", Status: LifecycleEnabled, NoncurrentDays: 1}}
	if err := e.svc.PutLifecycle(e.ctx, e.alice, "ver", rules); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * day)

	holds.err = errors.New("store down")
	if _, err := e.svc.ApplyLifecycle(e.ctx); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Errorf("a failing Holds: %v", err)
	}
	if got, want := strings.Join(e.versions("ver"), ","), "gone/(m)*,gone/x,k/new*,k/middle,k/pinned"; got != want {
		t.Errorf("after a failing Holds: %s\nwant %s", got, want)
	}
	holds.err = nil
	res, err := e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Versions != 2 || res.Held != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if got, want := strings.Join(e.versions("ver"), ","), "gone/(m)*,k/new*,k/pinned"; got != want {
		t.Errorf("left %s\nwant %s", got, want)
	}
	// Released, it goes on the next pass.
	delete(holds.held, "id-alice:ver/k/"+kept.VersionID)
	if res, err := e.svc.ApplyLifecycle(e.ctx); err != nil || res.Versions != 1 || res.Held != 0 {
		t.Fatalf("after the release: %+v, %v", res, err)
	}
}
