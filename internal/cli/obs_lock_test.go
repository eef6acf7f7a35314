package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
)

// lockStore is an in-memory S3 with a fake object lock that records the
// calls it gets.
type lockStore struct {
	*obsmem.Store
	calls []string
	cfg   *obsclient.LockConfig
	ret   obsclient.Retention
	hold  string
}

func (s *lockStore) MakeLockedBucket(_ context.Context, bucket string) error {
	s.calls = append(s.calls, "mb-locked "+bucket)
	return nil
}

func (s *lockStore) SetObjectLock(_ context.Context, bucket string, c obsclient.LockConfig) error {
	s.calls = append(s.calls, fmt.Sprintf("lock %s %s %d %d", bucket, c.Mode, c.Days, c.Years))
	s.cfg = &c
	return nil
}

func (s *lockStore) ObjectLock(_ context.Context, bucket string) (obsclient.LockConfig, error) {
	if s.cfg == nil {
		return obsclient.LockConfig{}, obsclient.S3Error("ObjectLockConfigurationNotFoundError", "", bucket, "")
	}
	return *s.cfg, nil
}

func (s *lockStore) SetRetention(_ context.Context, bucket, key, versionID string, r obsclient.Retention, bypass bool) error {
	s.calls = append(s.calls, fmt.Sprintf("retention %s/%s@%s %s %s bypass=%v", bucket, key, versionID, r.Mode, r.Until.Format(time.RFC3339), bypass))
	s.ret = r
	return nil
}

func (s *lockStore) Retention(_ context.Context, bucket, key, _ string) (obsclient.Retention, error) {
	if s.ret.Mode == "" {
		return obsclient.Retention{}, obsclient.S3Error("NoSuchObjectLockConfiguration", "", bucket, key)
	}
	return s.ret, nil
}

func (s *lockStore) SetLegalHold(_ context.Context, bucket, key, versionID string, on bool) error {
	s.calls = append(s.calls, fmt.Sprintf("legal-hold %s/%s@%s %v", bucket, key, versionID, on))
	s.hold = map[bool]string{true: "ON", false: "OFF"}[on]
	return nil
}

func (s *lockStore) LegalHold(context.Context, string, string, string) (string, error) {
	return s.hold, nil
}

func TestObsLockCommands(t *testing.T) {
	s := &lockStore{Store: obsStore()}
	env := obsEnv(t)
	for _, tc := range []struct {
		args []string
		code int
		out  string // a substring of stdout (or of stderr for failures)
		call string // the call the store got, if any
	}{
		{[]string{"obs", "mb", "--object-lock", "obs://vault"}, ExitOK, "with object lock", "mb-locked vault"},
		{[]string{"obs", "lock", "get", "obs://bkt"}, ExitFailure, "does not have object lock", ""},
		{[]string{"obs", "lock", "set", "obs://bkt"}, ExitOK, "no default retention", "lock bkt  0 0"},
		{[]string{"obs", "lock", "set", "obs://bkt", "--mode", "governance", "--days", "30"}, ExitOK, "GOVERNANCE for 30 day(s)", "lock bkt GOVERNANCE 30 0"},
		{[]string{"obs", "lock", "get", "obs://bkt"}, ExitOK, "default retention GOVERNANCE for 30 day(s)", ""},
		{[]string{"obs", "lock", "set", "obs://bkt", "--mode", "COMPLIANCE", "--years", "7"}, ExitOK, "7 year(s)", "lock bkt COMPLIANCE 0 7"},
		{[]string{"obs", "lock", "set", "obs://bkt", "--mode", "COMPLIANCE"}, ExitUsage, "one of --days and --years", ""},
		{[]string{"obs", "lock", "set", "obs://bkt", "--mode", "COMPLIANCE", "--days", "1", "--years", "1"}, ExitUsage, "one of --days and --years", ""},
		{[]string{"obs", "lock", "set", "obs://bkt", "--days", "1"}, ExitUsage, "add --mode", ""},
		{[]string{"obs", "lock", "set", "obs://bkt", "--mode", "FOREVER", "--days", "1"}, ExitUsage, "GOVERNANCE or COMPLIANCE", ""},
		{[]string{"obs", "lock", "set", "obs://bkt/key"}, ExitUsage, "give the bucket alone", ""},

		{[]string{"obs", "retention", "obs://bkt/ds/a.txt"}, ExitFailure, "has none", ""},
		{[]string{"obs", "retention", "obs://bkt/ds/a.txt", "--mode", "GOVERNANCE", "--until", "2030-01-02T03:04:05Z"}, ExitOK,
			"GOVERNANCE until 2030-01-02T03:04:05Z", "retention bkt/ds/a.txt@ GOVERNANCE 2030-01-02T03:04:05Z bypass=false"},
		{[]string{"obs", "retention", "obs://bkt/ds/a.txt", "--version-id", "v1"}, ExitOK, "GOVERNANCE", ""},
		{[]string{"obs", "retention", "obs://bkt/ds/a.txt", "--version-id", "v1", "--clear", "--bypass-governance"}, ExitOK,
			"removed the retention of obs://bkt/ds/a.txt (version v1)", "retention bkt/ds/a.txt@v1  0001-01-01T00:00:00Z bypass=true"},
		{[]string{"obs", "retention", "obs://bkt/ds/a.txt", "--mode", "GOVERNANCE"}, ExitUsage, "together", ""},
		{[]string{"obs", "retention", "obs://bkt/ds/a.txt", "--mode", "GOVERNANCE", "--until", "tomorrow"}, ExitUsage, "RFC 3339", ""},
		{[]string{"obs", "retention", "obs://bkt/ds/a.txt", "--clear", "--mode", "GOVERNANCE", "--until", "2030-01-01T00:00:00Z"}, ExitUsage, "does not go with", ""},
		{[]string{"obs", "retention", "obs://bkt/ds/a.txt", "--bypass-governance"}, ExitUsage, "goes with a change", ""},
		{[]string{"obs", "retention", "obs://bkt"}, ExitUsage, "names a bucket", ""},

		{[]string{"obs", "legal-hold", "obs://bkt/ds/a.txt", "ON", "--version-id", "v2"}, ExitOK, "legal hold of obs://bkt/ds/a.txt (version v2): ON",
			"legal-hold bkt/ds/a.txt@v2 true"},
		{[]string{"obs", "legal-hold", "obs://bkt/ds/a.txt"}, ExitOK, "ON", ""},
		{[]string{"obs", "legal-hold", "obs://bkt/ds/a.txt", "off"}, ExitOK, "OFF", "legal-hold bkt/ds/a.txt@ false"},
		{[]string{"obs", "legal-hold", "obs://bkt/ds/a.txt", "maybe"}, ExitUsage, "on or off", ""},
		{[]string{"obs", "legal-hold"}, ExitUsage, "missing argument", ""},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			before := len(s.calls)
			r := runObs(t, s, env, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, tc.out) {
				t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", tc.out, r.stdout, r.stderr)
			}
			var call string
			if len(s.calls) > before {
				call = s.calls[len(s.calls)-1]
			}
			if call != tc.call {
				t.Errorf("call %q, want %q", call, tc.call)
			}
		})
	}
	r := runObs(t, s, env, "-o", "json", "obs", "lock", "get", "obs://bkt")
	if r.code != ExitOK || !strings.Contains(r.stdout, `"default_mode": "COMPLIANCE"`) || !strings.Contains(r.stdout, `"default_years": 7`) {
		t.Errorf("lock get -o json: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Over an S3 without object lock.
	r = runObs(t, obsStore(), env, "obs", "lock", "get", "obs://bkt")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "object lock") {
		t.Errorf("without a Locker: %d %s", r.code, r.stderr)
	}
}
