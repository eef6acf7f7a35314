package obs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

var lockNow = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

func gov(d time.Duration) meta.ObjectLock {
	return meta.ObjectLock{Mode: LockGovernance, RetainUntil: lockNow.Add(d)}
}

func comp(d time.Duration) meta.ObjectLock {
	return meta.ObjectLock{Mode: LockCompliance, RetainUntil: lockNow.Add(d)}
}

func held(l meta.ObjectLock, hold string) meta.ObjectLock {
	l.LegalHold = hold
	return l
}

var (
	noBypass      = Bypass{}
	bypassAllowed = Bypass{Asked: true, Permitted: true}
	bypassDenied  = Bypass{Asked: true}
	bypassUnasked = Bypass{Permitted: true} // the permission without the header bypasses nothing
)

// TestCheckDelete is the decision on deleting a version for good, at the
// edges of its retain-until date.
func TestCheckDelete(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		lock meta.ObjectLock
		by   Bypass
		want errs.Code // "" allowed
	}{
		{"no lock", meta.ObjectLock{}, noBypass, ""},
		{"legal hold OFF", held(meta.ObjectLock{}, LegalHoldOff), noBypass, ""},
		{"legal hold ON", held(meta.ObjectLock{}, LegalHoldOn), noBypass, CodeObjectLocked},
		{"legal hold ON is not bypassed", held(meta.ObjectLock{}, LegalHoldOn), bypassAllowed, CodeObjectLocked},
		{"legal hold ON over an expired retention", held(gov(-time.Hour), LegalHoldOn), bypassAllowed, CodeObjectLocked},
		{"governance in force", gov(time.Hour), noBypass, CodeObjectLocked},
		{"governance bypassed", gov(time.Hour), bypassAllowed, ""},
		{"governance, bypass asked without the permission", gov(time.Hour), bypassDenied, CodeObjectLocked},
		{"governance, the permission without the header", gov(time.Hour), bypassUnasked, CodeObjectLocked},
		{"governance bypassed, but a legal hold", held(gov(time.Hour), LegalHoldOn), bypassAllowed, CodeObjectLocked},
		{"governance a millisecond before its date", gov(ms), noBypass, CodeObjectLocked},
		{"governance at its date exactly", gov(0), noBypass, ""},
		{"governance after its date", gov(-ms), noBypass, ""},
		{"compliance in force", comp(time.Hour), noBypass, CodeObjectLocked},
		{"compliance is not bypassed", comp(time.Hour), bypassAllowed, CodeObjectLocked},
		{"compliance a millisecond before its date", comp(ms), bypassAllowed, CodeObjectLocked},
		{"compliance at its date exactly", comp(0), noBypass, ""},
		{"compliance after its date", comp(-time.Hour), noBypass, ""},
		{"compliance after its date, legal hold OFF", held(comp(-time.Hour), LegalHoldOff), noBypass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDelete(tc.lock, lockNow, tc.by)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantCode(t, err, tc.want)
			if S3Code(err) != "AccessDenied" || errs.HintOf(err) == "" || !strings.Contains(err.Error(), msgObjectLocked) {
				t.Errorf("error %v (hint %q)", err, errs.HintOf(err))
			}
		})
	}
}

// S3Code is the S3 error code of err.
func S3Code(err error) string {
	c, _, _ := S3Error(err)
	return c
}

// TestCheckRetention is the decision on changing a version's retention:
// extending is always allowed, weakening only a GOVERNANCE retention with
// a permitted bypass, and never before the date for COMPLIANCE.
func TestCheckRetention(t *testing.T) {
	ms := time.Millisecond
	none := meta.ObjectLock{}
	for _, tc := range []struct {
		name     string
		cur, new meta.ObjectLock
		by       Bypass
		want     errs.Code
	}{
		{"set on a version without one", none, gov(time.Hour), noBypass, ""},
		{"set compliance on a version without one", none, comp(time.Hour), noBypass, ""},
		{"remove where there is none", none, none, noBypass, ""},
		{"a date in the past", none, gov(-time.Hour), noBypass, CodeBadLock},
		{"a date exactly now", none, gov(0), bypassAllowed, CodeBadLock},
		{"a date a millisecond ahead", none, gov(ms), noBypass, ""},
		{"a past date is refused even where bypassed", gov(time.Hour), gov(-time.Hour), bypassAllowed, CodeBadLock},

		{"extend governance", gov(time.Hour), gov(2 * time.Hour), noBypass, ""},
		{"keep governance's date", gov(time.Hour), gov(time.Hour), noBypass, ""},
		{"shorten governance", gov(time.Hour), gov(time.Minute), noBypass, CodeObjectLocked},
		{"shorten governance by a millisecond", gov(time.Hour), gov(time.Hour - ms), noBypass, CodeObjectLocked},
		{"shorten governance, bypassed", gov(time.Hour), gov(time.Minute), bypassAllowed, ""},
		{"shorten governance, bypass without permission", gov(time.Hour), gov(time.Minute), bypassDenied, CodeObjectLocked},
		{"remove governance", gov(time.Hour), none, noBypass, CodeObjectLocked},
		{"remove governance, bypassed", gov(time.Hour), none, bypassAllowed, ""},
		{"remove governance, the permission without the header", gov(time.Hour), none, bypassUnasked, CodeObjectLocked},
		{"governance to compliance", gov(time.Hour), comp(2 * time.Hour), noBypass, CodeObjectLocked},
		{"governance to compliance, bypassed", gov(time.Hour), comp(2 * time.Hour), bypassAllowed, ""},
		{"governance at its date: anything", gov(0), none, noBypass, ""},
		{"governance expired: shorter", gov(-time.Hour), gov(time.Minute), noBypass, ""},

		{"extend compliance", comp(time.Hour), comp(2 * time.Hour), noBypass, ""},
		{"keep compliance's date", comp(time.Hour), comp(time.Hour), noBypass, ""},
		{"shorten compliance", comp(time.Hour), comp(time.Minute), bypassAllowed, CodeObjectLocked},
		{"remove compliance", comp(time.Hour), none, bypassAllowed, CodeObjectLocked},
		{"compliance to governance, later", comp(time.Hour), gov(2 * time.Hour), bypassAllowed, CodeObjectLocked},
		{"compliance a millisecond before its date", comp(ms), none, bypassAllowed, CodeObjectLocked},
		{"compliance at its date exactly: removed", comp(0), none, noBypass, ""},
		{"compliance expired: to governance", comp(-time.Hour), gov(time.Hour), noBypass, ""},
		{"a legal hold does not stop a retention change", held(gov(time.Hour), LegalHoldOn), gov(2 * time.Hour), noBypass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRetention(tc.cur, tc.new, lockNow, tc.by)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantCode(t, err, tc.want)
		})
	}
	if err := CheckRetention(gov(time.Hour), gov(-time.Hour), lockNow, bypassAllowed); !strings.Contains(err.Error(), msgRetainInPast) {
		t.Errorf("past date: %v", err)
	}
}

func TestRetentionActive(t *testing.T) {
	for _, tc := range []struct {
		lock meta.ObjectLock
		want bool
	}{
		{meta.ObjectLock{}, false},
		{held(meta.ObjectLock{}, LegalHoldOn), false},
		{gov(time.Nanosecond), true},
		{gov(0), false},
		{comp(-time.Nanosecond), false},
	} {
		if got := RetentionActive(tc.lock, lockNow); got != tc.want {
			t.Errorf("RetentionActive(%+v) = %v", tc.lock, got)
		}
	}
}

func TestValidateLockConfig(t *testing.T) {
	for _, tc := range []struct {
		c    LockConfig
		want errs.Code
		msg  string
	}{
		{LockConfig{}, "", ""},
		{LockConfig{Mode: LockGovernance, Days: 1}, "", ""},
		{LockConfig{Mode: LockCompliance, Years: 1}, "", ""},
		{LockConfig{Mode: LockCompliance, Days: MaxRetentionDays}, "", ""},
		{LockConfig{Mode: LockCompliance, Years: MaxRetentionYears}, "", ""},
		{LockConfig{Mode: "governance", Days: 1}, CodeBadLockConfig, "Mode"},
		{LockConfig{Days: 1}, CodeBadLockConfig, "Mode"},
		{LockConfig{Mode: LockGovernance, Days: 1, Years: 1}, CodeBadLockConfig, "both"},
		{LockConfig{Mode: LockGovernance}, CodeBadLockConfig, "neither"},
		{LockConfig{Mode: LockGovernance, Days: -1}, CodeBadLock, msgPeriodNotPositive},
		{LockConfig{Mode: LockGovernance, Years: -1}, CodeBadLock, msgPeriodNotPositive},
		{LockConfig{Mode: LockGovernance, Days: MaxRetentionDays + 1}, CodeBadLock, msgPeriodTooLarge},
		{LockConfig{Mode: LockGovernance, Years: MaxRetentionYears + 1}, CodeBadLock, msgPeriodTooLarge},
	} {
		err := ValidateLockConfig(tc.c)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.c, err)
			}
			continue
		}
		if errs.CodeOf(err) != tc.want || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: error %v, want %s with %q", tc.c, err, tc.want, tc.msg)
		}
	}
	c := LockConfig{Mode: LockGovernance, Days: 30}
	if got := c.until(lockNow); !got.Equal(lockNow.Add(30 * 24 * time.Hour)) {
		t.Errorf("30 days from %v: %v", lockNow, got)
	}
	c = LockConfig{Mode: LockGovernance, Years: 1}
	if got := c.until(lockNow); !got.Equal(time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("a year from %v: %v", lockNow, got)
	}
}

func TestParseLockHeaders(t *testing.T) {
	until := time.Date(2031, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	for _, tc := range []struct {
		mode, until, hold string
		want              LockRequest
		code              errs.Code
		msg               string
	}{
		{"", "", "", LockRequest{}, "", ""},
		{"GOVERNANCE", "2031-01-02T03:04:05.678Z", "", LockRequest{Mode: LockGovernance, RetainUntil: until}, "", ""},
		{"COMPLIANCE", "2031-01-02T04:04:05.678912+01:00", "ON", LockRequest{Mode: LockCompliance, RetainUntil: until, LegalHold: LegalHoldOn}, "", ""},
		{"", "", "OFF", LockRequest{LegalHold: LegalHoldOff}, "", ""},
		{"GOVERNANCE", "", "", LockRequest{}, CodeBadLock, msgBothLockHeaders},
		{"", "2031-01-02T03:04:05Z", "", LockRequest{}, CodeBadLock, msgBothLockHeaders},
		{"governance", "2031-01-02T03:04:05Z", "", LockRequest{}, CodeBadLock, msgBadWORMMode},
		{"GOVERNANCE", "tomorrow", "", LockRequest{}, CodeBadLock, msgBadRetainDate},
		{"GOVERNANCE", "2031-01-02", "", LockRequest{}, CodeBadLock, msgBadRetainDate},
		{"", "", "on", LockRequest{}, CodeBadLock, msgBadLegalHold},
	} {
		got, err := ParseLockHeaders(tc.mode, tc.until, tc.hold)
		if tc.code != "" {
			if errs.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.msg) || S3Code(err) != "InvalidArgument" {
				t.Errorf("%q %q %q: error %v, want %s with %q", tc.mode, tc.until, tc.hold, err, tc.code, tc.msg)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q %q %q: %+v %v, want %+v", tc.mode, tc.until, tc.hold, got, err, tc.want)
		}
	}
}

// lockEnv is an env with alice's bucket "locked" (object lock, no
// default retention) and her unversioned bucket "plain".
func lockEnv(t *testing.T) *env {
	e := newEnv(t)
	if _, err := e.svc.CreateBucket(e.ctx, e.alice, "locked", CreateBucketOptions{ObjectLock: true}); err != nil {
		t.Fatal(err)
	}
	e.mkBucket(e.alice, "plain")
	return e
}

// putLocked writes key with the lock headers r and a Content-MD5.
func (e *env) putLocked(c *Caller, bucket, key, body string, r LockRequest) (*meta.Object, error) {
	return e.svc.PutObject(e.ctx, c, bucket, key, strings.NewReader(body), PutOptions{Size: int64(len(body)),
		ContentMD5: md5raw([]byte(body)), Lock: r, RequireIntegrity: true})
}

// TestLockBucketConfiguration covers ?object-lock and how object lock
// binds versioning.
func TestLockBucketConfiguration(t *testing.T) {
	e := lockEnv(t)
	st, err := e.svc.GetBucketVersioning(e.ctx, e.alice, "locked")
	if err != nil || st != VersioningEnabled {
		t.Fatalf("a bucket created with object lock: versioning %q %v", st, err)
	}
	cfg, err := e.svc.GetObjectLockConfiguration(e.ctx, e.alice, "locked")
	if err != nil || cfg != (LockConfig{}) {
		t.Fatalf("configuration %+v %v", cfg, err)
	}
	wantCode(t, e.svc.PutBucketVersioning(e.ctx, e.alice, "locked", VersioningSuspended, ""), CodeInvalidBucketState)
	must(t, e.svc.PutBucketVersioning(e.ctx, e.alice, "locked", VersioningEnabled, ""))
	err = e.svc.PutBucketVersioning(e.ctx, e.alice, "locked", VersioningSuspended, "")
	if S3Code(err) != "InvalidBucketState" || !strings.Contains(err.Error(), msgVersioningLocked) {
		t.Fatalf("suspending: %v", err)
	}

	must(t, e.svc.PutObjectLockConfiguration(e.ctx, e.alice, "locked", LockConfig{Mode: LockCompliance, Years: 2}))
	cfg, err = e.svc.GetObjectLockConfiguration(e.ctx, e.alice, "locked")
	if err != nil || cfg != (LockConfig{Mode: LockCompliance, Years: 2}) {
		t.Fatalf("configuration %+v %v", cfg, err)
	}
	must(t, e.svc.PutObjectLockConfiguration(e.ctx, e.alice, "locked", LockConfig{}))
	cfg, err = e.svc.GetObjectLockConfiguration(e.ctx, e.alice, "locked")
	if err != nil || cfg != (LockConfig{}) {
		t.Fatalf("default removed: %+v %v", cfg, err)
	}
	wantCode(t, e.svc.PutObjectLockConfiguration(e.ctx, e.alice, "locked", LockConfig{Mode: LockGovernance}), CodeBadLockConfig)
	wantCode(t, e.svc.PutObjectLockConfiguration(e.ctx, e.alice, "locked", LockConfig{Mode: LockGovernance, Days: -2}), CodeBadLock)

	// Without object lock.
	_, err = e.svc.GetObjectLockConfiguration(e.ctx, e.alice, "plain")
	if S3Code(err) != "ObjectLockConfigurationNotFoundError" {
		t.Fatalf("GET of a bucket without object lock: %v", err)
	}
	err = e.svc.PutObjectLockConfiguration(e.ctx, e.alice, "plain", LockConfig{})
	if S3Code(err) != "InvalidBucketState" || !strings.Contains(err.Error(), msgLockNeedsVersions) {
		t.Fatalf("an unversioned bucket: %v", err)
	}
	e.versioning("plain", VersioningSuspended)
	wantCode(t, e.svc.PutObjectLockConfiguration(e.ctx, e.alice, "plain", LockConfig{}), CodeInvalidBucketState)
	// An existing bucket whose versioning is Enabled may get object lock.
	e.versioning("plain", VersioningEnabled)
	must(t, e.svc.PutObjectLockConfiguration(e.ctx, e.alice, "plain", LockConfig{Mode: LockGovernance, Days: 1}))
	wantCode(t, e.svc.PutBucketVersioning(e.ctx, e.alice, "plain", VersioningSuspended, ""), CodeInvalidBucketState)

	// Permissions: bob may do nothing on alice's bucket; carol's policy
	// denies her the lock actions, so she cannot create a lock bucket.
	_, err = e.svc.GetObjectLockConfiguration(e.ctx, e.bob, "locked")
	wantCode(t, err, CodeAccessDenied)
	wantCode(t, e.svc.PutObjectLockConfiguration(e.ctx, e.bob, "locked", LockConfig{}), CodeAccessDenied)
	carol := caller(t, "carol", false, `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:PutBucketObjectLockConfiguration","Resource":"*"}]}`)
	_, err = e.svc.CreateBucket(e.ctx, carol, "carols", CreateBucketOptions{ObjectLock: true})
	wantCode(t, err, CodeAccessDenied)
	if _, err := e.svc.CreateBucket(e.ctx, carol, "carols", CreateBucketOptions{}); err != nil {
		t.Fatalf("carol's bucket without object lock: %v", err)
	}
	wantCode(t, e.svc.PutObjectLockConfiguration(e.ctx, e.alice, "nope", LockConfig{}), CodeNoSuchBucket)
}

// TestLockOnWrite covers the object lock a write gives its version: the
// headers, the default retention, their checks and permissions, copies
// and multipart uploads, and what GET and HEAD show.
func TestLockOnWrite(t *testing.T) {
	e := lockEnv(t)
	now := e.clock.Now()
	until := now.Add(time.Hour).Truncate(time.Millisecond)

	o, err := e.putLocked(e.alice, "locked", "a", "A", LockRequest{Mode: LockGovernance, RetainUntil: until, LegalHold: LegalHoldOn})
	if err != nil {
		t.Fatal(err)
	}
	want := meta.ObjectLock{Mode: LockGovernance, RetainUntil: until, LegalHold: LegalHoldOn}
	if o.Lock != want {
		t.Fatalf("put's lock %+v", o.Lock)
	}
	res, err := e.svc.HeadObject(e.ctx, e.alice, "locked", "a", GetOptions{})
	if err != nil || res.Object.Lock != want || !res.ShowRetention || !res.ShowLegalHold {
		t.Fatalf("HEAD: %+v %v", res, err)
	}
	// No lock asked for, no default: none.
	o, err = e.putLocked(e.alice, "locked", "b", "B", LockRequest{})
	if err != nil || o.Lock != (meta.ObjectLock{}) {
		t.Fatalf("no lock: %+v %v", o, err)
	}
	res, err = e.svc.GetObject(e.ctx, e.alice, "locked", "b", GetOptions{})
	if err != nil || res.ShowRetention || res.ShowLegalHold {
		t.Fatalf("GET without a lock: %+v %v", res, err)
	}
	res.Body.Close()

	// The request's checks.
	_, err = e.putLocked(e.alice, "locked", "c", "C", LockRequest{Mode: LockGovernance, RetainUntil: now.Truncate(time.Millisecond)})
	wantCode(t, err, CodeBadLock)
	_, err = e.putLocked(e.alice, "plain", "c", "C", LockRequest{LegalHold: LegalHoldOff})
	if S3Code(err) != "InvalidRequest" || !strings.Contains(err.Error(), msgWriteLockDisabled) {
		t.Fatalf("lock headers on a bucket without object lock: %v", err)
	}
	_, err = e.svc.PutObject(e.ctx, e.alice, "locked", "c", strings.NewReader("C"), PutOptions{Size: 1,
		Lock: LockRequest{LegalHold: LegalHoldOn}, RequireIntegrity: true})
	if S3Code(err) != "InvalidRequest" || !strings.Contains(err.Error(), msgNeedsIntegrity) {
		t.Fatalf("without Content-MD5: %v", err)
	}
	for _, ck := range []Checksum{{Algo: AlgoCRC32, Value: "Pdf/pw=="}, {Algo: AlgoCRC32C, Trailer: true}} {
		if _, err := e.svc.PutObject(e.ctx, e.alice, "locked", "c", strings.NewReader("C"), PutOptions{Size: 1,
			Lock: LockRequest{LegalHold: LegalHoldOn}, RequireIntegrity: true, Checksum: ck}); err != nil {
			t.Fatalf("with checksum %+v: %v", ck, err)
		}
	}
	if _, err := e.svc.PutObject(e.ctx, e.alice, "locked", "c", strings.NewReader("C"), PutOptions{Size: 1,
		Lock: LockRequest{LegalHold: LegalHoldOn}}); err != nil {
		t.Fatalf("a front end that does not require integrity: %v", err)
	}

	// bob may write into alice's bucket (a bucket policy) but not set
	// retention or legal holds: the default retention needs neither.
	must(t, e.svc.PutBucketPolicy(e.ctx, e.alice, "locked", []byte(`{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Principal":{"AWS":["user/bob"]},"Action":["s3:PutObject","s3:GetObject"],"Resource":"arn:aws:s3:::locked/*"}]}`)))
	_, err = e.putLocked(e.bob, "locked", "bob", "b", LockRequest{Mode: LockGovernance, RetainUntil: until})
	if errs.CodeOf(err) != CodeAccessDenied || !strings.Contains(err.Error(), ActionPutObjectRetention) {
		t.Fatalf("bob's retention: %v", err)
	}
	_, err = e.putLocked(e.bob, "locked", "bob", "b", LockRequest{LegalHold: LegalHoldOn})
	if errs.CodeOf(err) != CodeAccessDenied || !strings.Contains(err.Error(), ActionPutObjectLegalHold) {
		t.Fatalf("bob's legal hold: %v", err)
	}
	must(t, e.svc.PutObjectLockConfiguration(e.ctx, e.alice, "locked", LockConfig{Mode: LockCompliance, Days: 2}))
	o, err = e.putLocked(e.bob, "locked", "bob", "b", LockRequest{})
	if err != nil || o.Lock != (meta.ObjectLock{Mode: LockCompliance, RetainUntil: o.LastModified.Add(48 * time.Hour)}) {
		t.Fatalf("default retention on bob's write: %+v %v", o, err)
	}
	// bob reads the object, but not its lock.
	res, err = e.svc.HeadObject(e.ctx, e.bob, "locked", "bob", GetOptions{})
	if err != nil || res.ShowRetention {
		t.Fatalf("bob's HEAD: %+v %v", res, err)
	}
	// The default retention alone needs no Content-MD5 (S3 asks for one
	// there too; Atelier does not, so that unsigned single PUTs without a
	// checksum still write into such a bucket).
	o, err = e.svc.PutObject(e.ctx, e.alice, "locked", "d", strings.NewReader("D"), PutOptions{Size: 1, RequireIntegrity: true})
	if err != nil || o.Lock.Mode != LockCompliance {
		t.Fatalf("the default retention without Content-MD5: %+v %v", o, err)
	}
	// A retention asked for wins over the default.
	o, err = e.putLocked(e.alice, "locked", "d", "D", LockRequest{Mode: LockGovernance, RetainUntil: until})
	if err != nil || o.Lock != (meta.ObjectLock{Mode: LockGovernance, RetainUntil: until}) {
		t.Fatalf("explicit over default: %+v %v", o, err)
	}

	// A copy gets the destination's default (or what it asks for), not
	// the source's lock.
	cp, err := e.svc.CopyObject(e.ctx, e.alice, "locked", "a", "locked", "copy", CopyOptions{})
	if err != nil || cp.Lock != (meta.ObjectLock{Mode: LockCompliance, RetainUntil: cp.LastModified.Add(48 * time.Hour)}) {
		t.Fatalf("copy: %+v %v", cp, err)
	}
	cp, err = e.svc.CopyObject(e.ctx, e.alice, "locked", "a", "plain", "copy", CopyOptions{})
	if err != nil || cp.Lock != (meta.ObjectLock{}) {
		t.Fatalf("copy into a bucket without object lock: %+v %v", cp, err)
	}
	_, err = e.svc.CopyObject(e.ctx, e.alice, "locked", "a", "plain", "copy", CopyOptions{Lock: LockRequest{LegalHold: LegalHoldOn}})
	wantCode(t, err, CodeLockNotEnabled)
	cp, err = e.svc.CopyObject(e.ctx, e.alice, "plain", "copy", "locked", "copy2", CopyOptions{Lock: LockRequest{LegalHold: LegalHoldOn}})
	if err != nil || cp.Lock.LegalHold != LegalHoldOn || cp.Lock.Mode != LockCompliance {
		t.Fatalf("copy with a legal hold: %+v %v", cp, err)
	}

	// Multipart: the upload keeps what was asked for; the default is
	// reckoned from the completion.
	u, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "locked", "mp", UploadOptions{Lock: LockRequest{LegalHold: LegalHoldOn}})
	if err != nil || u.Lock != (meta.ObjectLock{LegalHold: LegalHoldOn}) {
		t.Fatalf("upload: %+v %v", u, err)
	}
	e.clock.Advance(time.Hour)
	mp := e.completeOnePart(u, "locked", "mp", "data")
	if mp.Lock != (meta.ObjectLock{Mode: LockCompliance, RetainUntil: mp.LastModified.Add(48 * time.Hour), LegalHold: LegalHoldOn}) {
		t.Fatalf("completed: %+v", mp.Lock)
	}
	u, err = e.svc.CreateMultipartUpload(e.ctx, e.alice, "locked", "mp2", UploadOptions{Lock: LockRequest{Mode: LockGovernance, RetainUntil: until.Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	mp = e.completeOnePart(u, "locked", "mp2", "data")
	if mp.Lock != (meta.ObjectLock{Mode: LockGovernance, RetainUntil: until.Add(time.Hour)}) {
		t.Fatalf("completed with its own retention: %+v", mp.Lock)
	}
	// A part of an upload that asked for a lock needs Content-MD5 or a
	// checksum where the front end requires it; one that gets only the
	// default retention does not.
	u, err = e.svc.CreateMultipartUpload(e.ctx, e.alice, "locked", "mp3", UploadOptions{Lock: LockRequest{LegalHold: LegalHoldOn}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.UploadPart(e.ctx, e.alice, "locked", "mp3", u.ID, 1, strings.NewReader("P"), PartOptions{Size: 1, RequireIntegrity: true})
	if S3Code(err) != "InvalidRequest" || !strings.Contains(err.Error(), msgPartNeedsIntegrity) {
		t.Fatalf("a part without Content-MD5: %v", err)
	}
	for _, o := range []PartOptions{{ContentMD5: md5raw([]byte("P"))}, {Checksum: Checksum{Algo: AlgoCRC32C, Trailer: true}}, {}} {
		o.Size, o.RequireIntegrity = 1, o.ContentMD5 != nil || o.Checksum.Trailer
		if _, err := e.svc.UploadPart(e.ctx, e.alice, "locked", "mp3", u.ID, 1, strings.NewReader("P"), o); err != nil {
			t.Fatalf("a part with %+v: %v", o, err)
		}
	}
	u, err = e.svc.CreateMultipartUpload(e.ctx, e.alice, "locked", "mp4", UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UploadPart(e.ctx, e.alice, "locked", "mp4", u.ID, 1, strings.NewReader("P"), PartOptions{Size: 1, RequireIntegrity: true}); err != nil {
		t.Fatalf("a part of an upload with the default retention: %v", err)
	}
	_, err = e.svc.CreateMultipartUpload(e.ctx, e.alice, "plain", "mp", UploadOptions{Lock: LockRequest{LegalHold: LegalHoldOn}})
	wantCode(t, err, CodeLockNotEnabled)
	_, err = e.svc.CreateMultipartUpload(e.ctx, e.alice, "locked", "mp", UploadOptions{Lock: LockRequest{Mode: LockGovernance, RetainUntil: now}})
	wantCode(t, err, CodeBadLock)
}

func (e *env) completeOnePart(u *meta.Upload, bucket, key, body string) *meta.Object {
	e.t.Helper()
	p, err := e.svc.UploadPart(e.ctx, e.alice, bucket, key, u.ID, 1, strings.NewReader(body), PartOptions{Size: int64(len(body))})
	if err != nil {
		e.t.Fatal(err)
	}
	o, err := e.svc.CompleteMultipartUpload(e.ctx, e.alice, bucket, key, u.ID, []CompletedPart{{Number: 1, ETag: p.Blob.ETag}})
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

// TestRetentionAndLegalHold covers ?retention and ?legal-hold: reads,
// the rules of changes with and without bypass, who may bypass, and a
// caller without access.
func TestRetentionAndLegalHold(t *testing.T) {
	e := lockEnv(t)
	now := e.clock.Now()
	hour := now.Add(time.Hour).Truncate(time.Millisecond)
	v1 := e.put(e.alice, "locked", "k", "one")
	v2 := e.put(e.alice, "locked", "k", "two")

	_, _, err := e.svc.GetObjectRetention(e.ctx, e.alice, "locked", "k", "")
	if S3Code(err) != "NoSuchObjectLockConfiguration" || !strings.Contains(err.Error(), msgNoObjectLock) {
		t.Fatalf("no retention yet: %v", err)
	}
	_, _, err = e.svc.GetObjectLegalHold(e.ctx, e.alice, "locked", "k", "")
	wantCode(t, err, CodeNoObjectLock)

	// Retention of v1 (noncurrent) by its id; the latest (v2) without one.
	shown, err := e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1), govAt(hour), false)
	if err != nil || shown != VersionID(v1) {
		t.Fatalf("put retention of v1: %q %v", shown, err)
	}
	r, shown, err := e.svc.GetObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1))
	if err != nil || r != govAt(hour) || shown != VersionID(v1) {
		t.Fatalf("v1's retention: %+v %q %v", r, shown, err)
	}
	_, _, err = e.svc.GetObjectRetention(e.ctx, e.alice, "locked", "k", "")
	wantCode(t, err, CodeNoObjectLock) // v2 has none
	if _, err := e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", "", compAt(hour), false); err != nil {
		t.Fatal(err)
	}
	if r, shown, err := e.svc.GetObjectRetention(e.ctx, e.alice, "locked", "k", ""); err != nil || r.Mode != LockCompliance || shown != VersionID(v2) {
		t.Fatalf("latest's retention: %+v %q %v", r, shown, err)
	}

	// Extending is allowed; shortening GOVERNANCE needs the header, and
	// the header needs the permission.
	later := hour.Add(time.Hour)
	must(t, ok2(e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1), govAt(later), false)))
	_, err = e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1), govAt(hour), false)
	if S3Code(err) != "AccessDenied" || !strings.Contains(err.Error(), msgObjectLocked) {
		t.Fatalf("shortening without bypass: %v", err)
	}
	must(t, ok2(e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1), govAt(hour), true))) // the owner may bypass
	if r, _, _ := e.svc.GetObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1)); !r.RetainUntil.Equal(hour) {
		t.Fatalf("shortened to %v", r.RetainUntil)
	}
	// bob is allowed the retention actions but not the bypass; dave the bypass too.
	must(t, e.svc.PutBucketPolicy(e.ctx, e.alice, "locked", []byte(`{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Principal":{"AWS":["user/bob","user/dave"]},"Action":["s3:GetObjectRetention","s3:PutObjectRetention","s3:DeleteObjectVersion"],"Resource":"arn:aws:s3:::locked/*"},
	 {"Effect":"Allow","Principal":{"AWS":["user/dave"]},"Action":"s3:BypassGovernanceRetention","Resource":"arn:aws:s3:::locked/*"}]}`)))
	dave := caller(t, "dave", false)
	_, err = e.svc.PutObjectRetention(e.ctx, e.bob, "locked", "k", VersionID(v1), meta.ObjectLock{}, true)
	if errs.CodeOf(err) != CodeObjectLocked || !strings.Contains(string(errs.HintOf(err)), "s3:BypassGovernanceRetention is not allowed") {
		t.Fatalf("bob's bypass: %v (%s)", err, errs.HintOf(err))
	}
	_, err = e.svc.PutObjectRetention(e.ctx, e.bob, "locked", "k", VersionID(v1), govAt(later.Add(time.Hour)), false)
	if err != nil {
		t.Fatalf("bob extends: %v", err)
	}
	_, err = e.svc.PutObjectRetention(e.ctx, dave, "locked", "k", VersionID(v1), meta.ObjectLock{}, true)
	if err != nil {
		t.Fatalf("dave removes GOVERNANCE with bypass: %v", err)
	}
	_, _, err = e.svc.GetObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1))
	wantCode(t, err, CodeNoObjectLock)
	// COMPLIANCE: no one, not with bypass.
	for _, c := range []*Caller{e.alice, dave, e.admin} {
		_, err = e.svc.PutObjectRetention(e.ctx, c, "locked", "k", VersionID(v2), meta.ObjectLock{}, true)
		wantCode(t, err, CodeObjectLocked)
		_, err = e.svc.PutObjectRetention(e.ctx, c, "locked", "k", VersionID(v2), govAt(later), true)
		wantCode(t, err, CodeObjectLocked)
	}
	// A bucket policy that denies the owner the bypass.
	must(t, e.svc.PutBucketPolicy(e.ctx, e.alice, "locked", []byte(`{"Version":"2012-10-17","Statement":[
	 {"Effect":"Deny","Principal":"*","Action":"s3:BypassGovernanceRetention","Resource":"arn:aws:s3:::locked/*"}]}`)))
	must(t, ok2(e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1), govAt(later), false)))
	_, err = e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1), meta.ObjectLock{}, true)
	wantCode(t, err, CodeObjectLocked)
	must(t, e.svc.DeleteBucketPolicy(e.ctx, e.alice, "locked"))

	// The clock: at the retain-until date the retention is over.
	e.clock.Advance(later.Sub(e.clock.Now()))
	must(t, ok2(e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1), meta.ObjectLock{}, false)))
	_, err = e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", VersionID(v1), govAt(e.clock.Now()), false)
	wantCode(t, err, CodeBadLock)

	// Legal holds: ON, OFF; anyone allowed s3:PutObjectLegalHold.
	shown, err = e.svc.PutObjectLegalHold(e.ctx, e.alice, "locked", "k", "", LegalHoldOn)
	if err != nil || shown != VersionID(v2) {
		t.Fatalf("legal hold: %q %v", shown, err)
	}
	if h, _, err := e.svc.GetObjectLegalHold(e.ctx, e.alice, "locked", "k", ""); err != nil || h != LegalHoldOn {
		t.Fatalf("hold %q %v", h, err)
	}
	must(t, ok2(e.svc.PutObjectLegalHold(e.ctx, e.alice, "locked", "k", VersionID(v2), LegalHoldOff)))
	if h, _, err := e.svc.GetObjectLegalHold(e.ctx, e.alice, "locked", "k", ""); err != nil || h != LegalHoldOff {
		t.Fatalf("hold %q %v", h, err)
	}
	_, err = e.svc.PutObjectLegalHold(e.ctx, e.alice, "locked", "k", "", "on")
	wantCode(t, err, CodeBadLockConfig)
	_, err = e.svc.PutObjectRetention(e.ctx, e.alice, "locked", "k", "", meta.ObjectLock{Mode: LockGovernance}, false)
	wantCode(t, err, CodeBadLockConfig)

	// bob, without a policy, learns nothing of alice's objects.
	_, _, err = e.svc.GetObjectRetention(e.ctx, e.bob, "locked", "k", "")
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.PutObjectLegalHold(e.ctx, e.bob, "locked", "k", "", LegalHoldOff)
	wantCode(t, err, CodeAccessDenied)
	_, _, err = e.svc.GetObjectLegalHold(e.ctx, e.bob, "plain", "x", "")
	wantCode(t, err, CodeAccessDenied)

	// Missing things, markers, buckets without object lock.
	_, _, err = e.svc.GetObjectRetention(e.ctx, e.alice, "locked", "nope", "")
	wantCode(t, err, CodeNoSuchKey)
	_, err = e.svc.PutObjectLegalHold(e.ctx, e.alice, "locked", "k", "0190d6a4-1c2f-7a5b-9c3d-4e5f60718293", LegalHoldOn)
	wantCode(t, err, CodeNoSuchVersion)
	must(t, e.svc.DeleteObject(e.ctx, e.alice, "locked", "k"))
	_, _, err = e.svc.GetObjectRetention(e.ctx, e.alice, "locked", "k", "")
	wantCode(t, err, CodeNoSuchKey)
	m := e.versionsIn("locked", "k")[0]
	_, err = e.svc.PutObjectLegalHold(e.ctx, e.alice, "locked", "k", VersionID(m), LegalHoldOn)
	wantCode(t, err, CodeDeleteMarker)
	e.put(e.alice, "plain", "x", "x")
	_, _, err = e.svc.GetObjectRetention(e.ctx, e.alice, "plain", "x", "")
	if S3Code(err) != "InvalidRequest" || !strings.Contains(err.Error(), msgLockNotEnabled) {
		t.Fatalf("retention in a bucket without object lock: %v", err)
	}
	_, err = e.svc.PutObjectLegalHold(e.ctx, e.alice, "plain", "x", "", LegalHoldOn)
	wantCode(t, err, CodeLockNotEnabled)
}

func govAt(t time.Time) meta.ObjectLock { return meta.ObjectLock{Mode: LockGovernance, RetainUntil: t} }
func compAt(t time.Time) meta.ObjectLock {
	return meta.ObjectLock{Mode: LockCompliance, RetainUntil: t}
}

// ok2 is the error of a call that also returns a value.
func ok2[T any](_ T, err error) error { return err }

func (e *env) versionsIn(bucket, key string) []*meta.Object {
	e.t.Helper()
	res, err := e.svc.ListObjectVersions(e.ctx, e.alice, bucket, ListVersionsOptions{Prefix: key, MaxKeys: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Versions
}

// TestLockedDeletes covers deletes of protected versions: by version id,
// in DeleteObjects, with and without bypass; deletes without a version
// id; the bucket delete; the bypass header on a bucket without lock.
func TestLockedDeletes(t *testing.T) {
	e := lockEnv(t)
	until := e.clock.Now().Add(time.Hour).Truncate(time.Millisecond)
	g, err := e.putLocked(e.alice, "locked", "g", "governed", LockRequest{Mode: LockGovernance, RetainUntil: until})
	must(t, err)
	c, err := e.putLocked(e.alice, "locked", "c", "complied", LockRequest{Mode: LockCompliance, RetainUntil: until})
	must(t, err)
	h, err := e.putLocked(e.alice, "locked", "h", "held", LockRequest{LegalHold: LegalHoldOn})
	must(t, err)
	free := e.put(e.alice, "locked", "f", "free")
	yes, no := true, false

	for _, v := range []*meta.Object{g, c, h} {
		_, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "locked", v.Key, VersionID(v))
		if S3Code(err) != "AccessDenied" || !strings.Contains(err.Error(), msgObjectLocked) {
			t.Fatalf("deleting %s: %v", v.Key, err)
		}
	}
	_, err = e.svc.DeleteObjectVersionWith(e.ctx, e.alice, "locked", "c", VersionID(c), DeleteOptions{BypassGovernance: &yes})
	wantCode(t, err, CodeObjectLocked)
	_, err = e.svc.DeleteObjectVersionWith(e.ctx, e.alice, "locked", "h", VersionID(h), DeleteOptions{BypassGovernance: &yes})
	wantCode(t, err, CodeObjectLocked)
	_, err = e.svc.DeleteObjectVersionWith(e.ctx, e.alice, "locked", "g", VersionID(g), DeleteOptions{BypassGovernance: &no})
	wantCode(t, err, CodeObjectLocked)

	// A delete without a version id adds a marker; the version stays.
	d, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "locked", "c", "")
	if err != nil || !d.DeleteMarker {
		t.Fatalf("simple delete: %+v %v", d, err)
	}
	if got := e.get(e.alice, "locked", "c", GetOptions{VersionID: VersionID(c)}); got != "complied" {
		t.Fatalf("the version behind the marker: %q", got)
	}
	// The marker itself is not protected.
	if _, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "locked", "c", d.VersionID); err != nil {
		t.Fatalf("deleting the marker: %v", err)
	}

	// DeleteObjects: per key.
	res, err := e.svc.DeleteObjectVersionsWith(e.ctx, e.alice, "locked", []ObjectVersion{
		{Key: "g", VersionID: VersionID(g)}, {Key: "c", VersionID: VersionID(c)}, {Key: "f", VersionID: VersionID(free)}, {Key: "h"},
	}, DeleteOptions{BypassGovernance: &yes})
	if err != nil {
		t.Fatal(err)
	}
	var outcome []string
	for _, r := range res {
		if r.Err != nil {
			outcome = append(outcome, r.Key+":"+S3Code(r.Err))
		} else {
			outcome = append(outcome, fmt.Sprintf("%s:ok%v", r.Key, map[bool]string{true: "(m)"}[r.DeleteMarker]))
		}
	}
	sameList(t, "DeleteObjects with bypass", outcome, "g:ok", "c:AccessDenied", "f:ok", "h:ok(m)")
	res, err = e.svc.DeleteObjectVersions(e.ctx, e.alice, "locked", []ObjectVersion{{Key: "h", VersionID: VersionID(h)}})
	if err != nil || res[0].Err == nil || errs.CodeOf(res[0].Err) != CodeObjectLocked {
		t.Fatalf("DeleteObjects of a held version: %+v %v", res, err)
	}

	// The bucket is not deleted while versions are left.
	wantCode(t, e.svc.DeleteBucket(e.ctx, e.alice, "locked"), CodeBucketNotEmpty)

	// The bypass header on a bucket without object lock.
	e.put(e.alice, "plain", "x", "x")
	_, err = e.svc.DeleteObjectVersionWith(e.ctx, e.alice, "plain", "x", "", DeleteOptions{BypassGovernance: &no})
	if S3Code(err) != "InvalidArgument" || !strings.Contains(err.Error(), msgBypassWithoutLock) {
		t.Fatalf("bypass on a plain bucket: %v", err)
	}
	_, err = e.svc.DeleteObjectVersionsWith(e.ctx, e.alice, "plain", []ObjectVersion{{Key: "x"}}, DeleteOptions{BypassGovernance: &yes})
	wantCode(t, err, CodeBadLock)

	// Once the date passes, the retention no longer protects; the legal
	// hold does until it is OFF.
	e.clock.Advance(time.Hour)
	if _, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "locked", "c", VersionID(c)); err != nil {
		t.Fatalf("after the date: %v", err)
	}
	_, err = e.svc.DeleteObjectVersion(e.ctx, e.alice, "locked", "h", VersionID(h))
	wantCode(t, err, CodeObjectLocked)
	must(t, ok2(e.svc.PutObjectLegalHold(e.ctx, e.alice, "locked", "h", VersionID(h), LegalHoldOff)))
	if _, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "locked", "h", VersionID(h)); err != nil {
		t.Fatalf("after the hold is off: %v", err)
	}
	e.noLeaks()
}

// TestLockLifecycleAndGC checks that lifecycle expiry skips protected
// versions, and that garbage collection keeps their blobs.
func TestLockLifecycleAndGC(t *testing.T) {
	e := lockEnv(t)
	day := 24 * time.Hour
	until := e.clock.Now().Add(10 * day).Truncate(time.Millisecond)
	locked, err := e.putLocked(e.alice, "locked", "a", "locked", LockRequest{Mode: LockCompliance, RetainUntil: until})
	must(t, err)
	held, err := e.putLocked(e.alice, "locked", "a", "held", LockRequest{LegalHold: LegalHoldOn})
	must(t, err)
	e.put(e.alice, "locked", "a", "free")
	e.put(e.alice, "locked", "a", "latest")
	must(t, e.svc.PutLifecycle(e.ctx, e.alice, "locked", []LifecycleRule{{ID: "old", Status: LifecycleEnabled, NoncurrentDays: 1}}))
	e.clock.Advance(2 * day)
	res, err := e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Versions != 1 {
		t.Fatalf("lifecycle: %+v %v", res, err)
	}
	sameList(t, "after expiry", e.versions("locked"), "a/latest*", "a/held", "a/locked")
	if _, err := e.svc.CollectGarbage(e.ctx, 0); err != nil {
		t.Fatal(err)
	}
	e.noLeaks()
	for v, body := range map[*meta.Object]string{locked: "locked", held: "held"} {
		if got := e.get(e.alice, "locked", "a", GetOptions{VersionID: VersionID(v)}); got != body {
			t.Fatalf("version %s after GC: %q, want %q", VersionID(v), got, body)
		}
	}
	// Past the date, the retained version expires; the held one stays.
	e.clock.Advance(10 * day)
	res, err = e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Versions != 1 {
		t.Fatalf("lifecycle after the date: %+v %v", res, err)
	}
	sameList(t, "after the date", e.versions("locked"), "a/latest*", "a/held")
	e.noLeaks()
}
