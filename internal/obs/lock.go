package obs

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Object lock (S3's WORM protection of versions). A bucket created with
// object lock, or a bucket whose versioning is Enabled and that gets an
// object lock configuration, keeps versioning Enabled for good and keeps
// object lock for good. Each version may have a retention — a mode and a
// date until which it holds — and a legal hold, set when it is written
// (x-amz-object-lock-* headers, or the bucket's default retention) or
// later (?retention, ?legal-hold).
//
// A version that is protected cannot be deleted for good (DELETE with a
// versionId, DeleteObjects with a VersionId, lifecycle expiry): a legal
// hold ON protects it until it is turned OFF; a retention protects it
// while now is before its retain-until date. A COMPLIANCE retention
// cannot be shortened, removed or changed to GOVERNANCE by anyone; a
// GOVERNANCE one can, and its version deleted, by a request with
// x-amz-bypass-governance-retention: true from a caller who holds
// s3:BypassGovernanceRetention. Any retention may be extended. A delete
// without a version id only adds a delete marker, which nothing protects.
// The decisions are the pure functions CheckDelete and CheckRetention.

// Retention modes and legal hold states, as S3 names them.
const (
	LockGovernance = meta.LockGovernance
	LockCompliance = meta.LockCompliance
	LegalHoldOn    = meta.LegalHoldOn
	LegalHoldOff   = meta.LegalHoldOff
)

// Object lock actions, as policies name them.
const (
	ActionGetBucketObjectLockConfiguration = "obs:GetBucketObjectLockConfiguration"
	ActionPutBucketObjectLockConfiguration = "obs:PutBucketObjectLockConfiguration"
	ActionGetObjectRetention               = "obs:GetObjectRetention"
	ActionPutObjectRetention               = "obs:PutObjectRetention"
	ActionGetObjectLegalHold               = "obs:GetObjectLegalHold"
	ActionPutObjectLegalHold               = "obs:PutObjectLegalHold"
	ActionBypassGovernanceRetention        = "obs:BypassGovernanceRetention"
)

// Limits of a default retention period, as S3 has them.
const (
	MaxRetentionDays  = 36500
	MaxRetentionYears = 100
)

// Messages S3 answers, which clients and tools match on.
const (
	msgObjectLocked       = "Access Denied because object protected by object lock."
	msgNoLockConfig       = "Object Lock configuration does not exist for this bucket"
	msgNoObjectLock       = "The specified object does not have a ObjectLock configuration"
	msgLockNotEnabled     = "Bucket is missing Object Lock Configuration"
	msgWriteLockDisabled  = "Bucket is missing ObjectLockConfiguration"
	msgLockNeedsVersions  = "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration"
	msgVersioningLocked   = "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed."
	msgRetainInPast       = "The retain until date must be in the future!"
	msgBothLockHeaders    = "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied"
	msgBadWORMMode        = "Unknown wormMode directive."
	msgBadRetainDate      = "The retain until date must be provided in ISO 8601 format"
	msgBadLegalHold       = "Legal Hold must be either of 'ON' or 'OFF'"
	msgPeriodNotPositive  = "Default retention period must be a positive integer value."
	msgPeriodTooLarge     = "Default retention period too large."
	msgNeedsIntegrity     = "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock parameters"
	msgPartNeedsIntegrity = "Content-MD5 OR x-amz-checksum- HTTP header is required for Upload Part requests with Object Lock parameters"
	msgBypassWithoutLock  = "x-amz-bypass-governance-retention is only applicable to Object Lock enabled buckets."
	hintBypassGovernance  = "a GOVERNANCE retention is bypassed by a request with x-amz-bypass-governance-retention: true from a caller allowed s3:BypassGovernanceRetention"
	hintEnableObjectLock  = "make a bucket with object lock (`atelier obs mb --object-lock`, or CreateBucket with x-amz-bucket-object-lock-enabled: true), or enable it on a bucket whose versioning is Enabled (`atelier obs lock set`, PUT ?object-lock)"
	hintRetentionFormat   = "send x-amz-object-lock-mode (GOVERNANCE or COMPLIANCE) with x-amz-object-lock-retain-until-date, a future RFC 3339 time such as 2030-01-01T00:00:00Z"
	hintIntegrityForLocks = "send Content-MD5 (the base64 of the body's MD5) or an x-amz-checksum-* header (e.g. aws s3api put-object --checksum-algorithm CRC32)"
)

// LockConfig is a bucket's object lock configuration beyond being
// enabled: its default retention, which each new version gets unless its
// write asks for a retention of its own. Mode "" is no default; else
// exactly one of Days and Years is set.
type LockConfig struct {
	Mode  string
	Days  int
	Years int
}

// lockDoc is LockConfig as the bucket stores it.
type lockDoc struct {
	Enabled bool   `json:"enabled"`
	Mode    string `json:"mode,omitempty"`
	Days    int    `json:"days,omitempty"`
	Years   int    `json:"years,omitempty"`
}

// ValidateLockConfig checks a default retention as S3 does: a mode
// GOVERNANCE or COMPLIANCE with Days or Years (not both) is MalformedXML
// otherwise; a period that is not positive, or over 36500 days or 100
// years, is InvalidArgument. The zero LockConfig (no default) is valid. A
// pure function.
func ValidateLockConfig(c LockConfig) error {
	const op errs.Op = "obs.ValidateLockConfig"
	if c == (LockConfig{}) {
		return nil
	}
	malformed := func(why string) error {
		return fail(op, CodeBadLockConfig, "The XML you provided was not well-formed or did not validate against our published schema: "+why,
			"<Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>30</Days></DefaultRetention></Rule>: a Mode (GOVERNANCE or COMPLIANCE) and Days or Years, not both")
	}
	switch {
	case c.Mode != LockGovernance && c.Mode != LockCompliance:
		return malformed(fmt.Sprintf("the default retention's Mode %q is not GOVERNANCE or COMPLIANCE", c.Mode))
	case c.Days != 0 && c.Years != 0:
		return malformed("the default retention has both Days and Years")
	case c.Days == 0 && c.Years == 0:
		return malformed("the default retention has neither Days nor Years")
	}
	name, n, max := "Days", c.Days, MaxRetentionDays
	if c.Years != 0 {
		name, n, max = "Years", c.Years, MaxRetentionYears
	}
	switch {
	case n < 0:
		return fail(op, CodeBadLock, msgPeriodNotPositive, fmt.Sprintf("%s is %d; give a whole number from 1 to %d", name, n, max))
	case n > max:
		return fail(op, CodeBadLock, msgPeriodTooLarge, fmt.Sprintf("%s is %d; the most is %d", name, n, max))
	}
	return nil
}

// encodeLockConfig is the document a bucket with object lock stores.
func encodeLockConfig(c LockConfig) string {
	raw, _ := json.Marshal(lockDoc{Enabled: true, Mode: c.Mode, Days: c.Days, Years: c.Years})
	return string(raw)
}

// lockConfig decodes the object lock configuration of b: ok is false when
// b never had object lock enabled.
func lockConfig(op errs.Op, b *meta.Bucket) (c LockConfig, ok bool, err error) {
	if b.ObjectLock == "" {
		return c, false, nil
	}
	var d lockDoc
	if err := json.Unmarshal([]byte(b.ObjectLock), &d); err != nil {
		return c, true, fail(op, CodeInconsistent, fmt.Sprintf("the stored object lock configuration of bucket %q does not decode", b.Name), "", err)
	}
	return LockConfig{Mode: d.Mode, Days: d.Days, Years: d.Years}, true, nil
}

// until is the retain-until date of the default retention c for a
// version made at t (zero when c has no default).
func (c LockConfig) until(t time.Time) time.Time {
	if c.Mode == "" {
		return time.Time{}
	}
	return t.UTC().AddDate(c.Years, 0, c.Days)
}

// LockRequest is the object lock a write asks for with its
// x-amz-object-lock-mode, -retain-until-date and -legal-hold headers; the
// zero value asks for none (the bucket's default retention, if any,
// applies).
type LockRequest struct {
	Mode        string    // "" or GOVERNANCE or COMPLIANCE, with RetainUntil
	RetainUntil time.Time // zero without Mode
	LegalHold   string    // "" or ON or OFF
}

// IsZero reports whether r asks for nothing.
func (r LockRequest) IsZero() bool { return r == LockRequest{} }

// ParseLockHeaders parses the object lock headers of a write (each ""
// when absent) as S3 does: a mode and a date come together, the mode is
// GOVERNANCE or COMPLIANCE, the date is an RFC 3339 (ISO 8601) time, the
// legal hold ON or OFF; anything else is InvalidArgument with S3's
// message. Whether the date is in the future is the write's to check. A
// pure function.
func ParseLockHeaders(mode, until, hold string) (LockRequest, error) {
	const op errs.Op = "obs.ParseLockHeaders"
	var r LockRequest
	mode, until, hold = strings.TrimSpace(mode), strings.TrimSpace(until), strings.TrimSpace(hold)
	if (mode == "") != (until == "") {
		missing := "x-amz-object-lock-retain-until-date"
		if mode == "" {
			missing = "x-amz-object-lock-mode"
		}
		return r, fail(op, CodeBadLock, msgBothLockHeaders, missing+" is missing; "+hintRetentionFormat)
	}
	if mode != "" {
		if mode != LockGovernance && mode != LockCompliance {
			return r, fail(op, CodeBadLock, msgBadWORMMode, fmt.Sprintf("x-amz-object-lock-mode is %q; it is GOVERNANCE or COMPLIANCE", mode))
		}
		t, err := ParseRetainUntil(until)
		if err != nil {
			return r, err
		}
		r.Mode, r.RetainUntil = mode, t
	}
	if hold != "" && hold != LegalHoldOn && hold != LegalHoldOff {
		return r, fail(op, CodeBadLock, msgBadLegalHold, fmt.Sprintf("x-amz-object-lock-legal-hold is %q", hold))
	}
	r.LegalHold = hold
	return r, nil
}

// ParseRetainUntil parses a retain-until date: an RFC 3339 time (ISO
// 8601, as S3's clients send it), kept to the millisecond, in UTC.
func ParseRetainUntil(s string) (time.Time, error) {
	const op errs.Op = "obs.ParseRetainUntil"
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fail(op, CodeBadLock, msgBadRetainDate, fmt.Sprintf("%q is not an RFC 3339 time such as 2030-01-01T00:00:00Z", s))
	}
	return t.UTC().Truncate(time.Millisecond), nil
}

// RetentionActive reports whether the retention of l holds at now: l has
// a mode and now is before its retain-until date. At the retain-until
// instant itself the retention is over.
func RetentionActive(l meta.ObjectLock, now time.Time) bool {
	return l.Mode != "" && now.Before(l.RetainUntil)
}

// Bypass is what a request brings to bypass a GOVERNANCE retention.
type Bypass struct {
	Asked     bool // x-amz-bypass-governance-retention: true
	Permitted bool // the caller holds s3:BypassGovernanceRetention
}

// CheckDelete decides whether a version whose object lock is l may be
// deleted for good at now, by a request bringing b: nil, or AccessDenied
// (CodeObjectLocked) while a legal hold is ON (nothing bypasses it) or a
// retention holds — COMPLIANCE always, GOVERNANCE unless b asks for a
// bypass the caller is permitted. A pure function.
func CheckDelete(l meta.ObjectLock, now time.Time, b Bypass) error {
	const op errs.Op = "obs.CheckDelete"
	if l.LegalHold == LegalHoldOn {
		return fail(op, CodeObjectLocked, msgObjectLocked,
			"the version has a legal hold, which only turning it OFF lifts (PUT ?legal-hold, or `atelier obs legal-hold … off`); a bypass does not")
	}
	if !RetentionActive(l, now) {
		return nil
	}
	return checkBypass(op, l, b, "deleting it")
}

// checkBypass refuses what an active retention l forbids: COMPLIANCE
// always, GOVERNANCE unless bypassed.
func checkBypass(op errs.Op, l meta.ObjectLock, b Bypass, what string) error {
	until := l.RetainUntil.UTC().Format(time.RFC3339Nano)
	switch {
	case l.Mode == LockCompliance:
		return fail(op, CodeObjectLocked, msgObjectLocked,
			fmt.Sprintf("the version has a COMPLIANCE retention until %s: no one can shorten it or remove it before then, and no bypass applies to %s", until, what))
	case b.Asked && b.Permitted:
		return nil
	case b.Asked:
		return fail(op, CodeObjectLocked, msgObjectLocked,
			fmt.Sprintf("the version has a GOVERNANCE retention until %s, and the caller may not bypass it: s3:BypassGovernanceRetention is not allowed", until))
	}
	return fail(op, CodeObjectLocked, msgObjectLocked,
		fmt.Sprintf("the version has a GOVERNANCE retention until %s; %s", until, hintBypassGovernance))
}

// CheckRetention decides whether the retention of a version whose object
// lock is l may become next (next.Mode "" removes it; next.LegalHold is
// not looked at) at now, by a request bringing b: InvalidArgument
// (CodeBadLock) when next's date is not after now; else, while l's
// retention holds, extending it in the same mode is allowed, and any
// other change — a shorter date, a removal, another mode — is
// AccessDenied (CodeObjectLocked) for COMPLIANCE and needs a permitted
// bypass for GOVERNANCE. After the retain-until date anything goes. A
// pure function.
func CheckRetention(l meta.ObjectLock, next meta.ObjectLock, now time.Time, b Bypass) error {
	const op errs.Op = "obs.CheckRetention"
	if next.Mode != "" && !next.RetainUntil.After(now) {
		return fail(op, CodeBadLock, msgRetainInPast,
			fmt.Sprintf("RetainUntilDate %s is not after the server's time %s", next.RetainUntil.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano)))
	}
	if !RetentionActive(l, now) {
		return nil
	}
	if next.Mode == l.Mode && !next.RetainUntil.Before(l.RetainUntil) {
		return nil // extending (or keeping) is always allowed
	}
	what := "shortening it"
	switch {
	case next.Mode == "":
		what = "removing it"
	case next.Mode != l.Mode:
		what = "changing its mode to " + next.Mode
	}
	return checkBypass(op, l, b, what)
}

// lockContext adds to ctx the condition keys of the object lock a
// request sets: s3:object-lock-mode, s3:object-lock-retain-until-date,
// s3:object-lock-remaining-retention-days (whole days from now, rounded
// up) and s3:object-lock-legal-hold.
func lockContext(ctx map[string][]string, l meta.ObjectLock, now time.Time) map[string][]string {
	if ctx == nil {
		ctx = map[string][]string{}
	}
	if l.Mode != "" {
		ctx["s3:object-lock-mode"] = []string{l.Mode}
		ctx["s3:object-lock-retain-until-date"] = []string{l.RetainUntil.UTC().Format(time.RFC3339)}
		days := max(0, int((l.RetainUntil.Sub(now)+24*time.Hour-1)/(24*time.Hour)))
		ctx["s3:object-lock-remaining-retention-days"] = []string{strconv.Itoa(days)}
	}
	if l.LegalHold != "" {
		ctx["s3:object-lock-legal-hold"] = []string{l.LegalHold}
	}
	return ctx
}

// writeLock is the object lock of a version that c writes into b at now,
// asking for r: r's retention or else the bucket's default retention, and
// r's legal hold. It refuses a request for a lock in a bucket without
// object lock (InvalidRequest), a retain-until date that is not in the
// future, and a caller without s3:PutObjectRetention (for r's retention)
// or s3:PutObjectLegalHold (for r's legal hold). The default retention
// needs no permission.
//
// Without withDefault the default retention is not applied (a multipart
// upload keeps only what its request asked for: the default applies when
// it completes).
func (s *Service) writeLock(op errs.Op, c *Caller, b *meta.Bucket, key string, r LockRequest, now time.Time, withDefault bool) (meta.ObjectLock, error) {
	var l meta.ObjectLock
	if err := checkRetainFuture(op, r, now); err != nil {
		return l, err
	}
	cfg, enabled, err := lockConfig(op, b)
	if err != nil {
		return l, err
	}
	if !enabled {
		if !r.IsZero() {
			return l, fail(op, CodeLockNotEnabled, msgWriteLockDisabled,
				fmt.Sprintf("bucket %q does not have object lock: drop the x-amz-object-lock-* headers, or %s", b.Name, hintEnableObjectLock))
		}
		return l, nil
	}
	l = r.lock()
	ctx := lockContext(nil, l, now)
	if r.Mode != "" {
		if err := s.check(op, c, b, ActionPutObjectRetention, key, ctx); err != nil {
			return l, err
		}
	}
	if r.LegalHold != "" {
		if err := s.check(op, c, b, ActionPutObjectLegalHold, key, ctx); err != nil {
			return l, err
		}
	}
	if withDefault {
		l = withDefaultRetention(l, cfg, now)
	}
	return l, nil
}

// withDefaultRetention is l, given the default retention of cfg for a
// version made at now when l has no retention of its own.
func withDefaultRetention(l meta.ObjectLock, cfg LockConfig, now time.Time) meta.ObjectLock {
	if l.Mode == "" && cfg.Mode != "" {
		l.Mode, l.RetainUntil = cfg.Mode, cfg.until(now).Truncate(time.Millisecond)
	}
	return l
}

// checkRetainFuture refuses a write's retain-until date that is not after
// now, as S3 does before it looks at the bucket.
func checkRetainFuture(op errs.Op, r LockRequest, now time.Time) error {
	if r.Mode != "" && !r.RetainUntil.After(now) {
		return fail(op, CodeBadLock, msgRetainInPast,
			fmt.Sprintf("x-amz-object-lock-retain-until-date %s is not after the server's time %s",
				r.RetainUntil.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano)))
	}
	return nil
}

// lock is r as the lock it asks for.
func (r LockRequest) lock() meta.ObjectLock {
	return meta.ObjectLock{Mode: r.Mode, RetainUntil: r.RetainUntil, LegalHold: r.LegalHold}
}

// needsIntegrity is the error of a write that asks for an object lock
// without Content-MD5 or a checksum, when the front end requires one (S3
// does). A version that gets only the bucket's default retention does not
// need one: S3 asks for it there too, but clients that stream unsigned
// single PUTs without a checksum (minio-go, which `atelier obs cp` uses)
// could then not write into such a bucket at all.
func needsIntegrity(op errs.Op, r LockRequest, require bool, contentMD5 []byte, ck Checksum) error {
	if lacksIntegrity(r, require, contentMD5, ck) {
		return fail(op, CodeLockNeedsIntegrity, msgNeedsIntegrity, hintIntegrityForLocks)
	}
	return nil
}

// partNeedsIntegrity is needsIntegrity for a part of an upload whose
// request asked for an object lock (u.Lock: not a bucket default).
func partNeedsIntegrity(op errs.Op, u *meta.Upload, require bool, contentMD5 []byte, ck Checksum) error {
	r := LockRequest{Mode: u.Lock.Mode, RetainUntil: u.Lock.RetainUntil, LegalHold: u.Lock.LegalHold}
	if lacksIntegrity(r, require, contentMD5, ck) {
		return fail(op, CodeLockNeedsIntegrity, msgPartNeedsIntegrity, hintIntegrityForLocks)
	}
	return nil
}

// lacksIntegrity reports whether a body written with the lock r comes
// without the Content-MD5 or checksum the front end requires.
func lacksIntegrity(r LockRequest, require bool, contentMD5 []byte, ck Checksum) bool {
	return require && !r.IsZero() && contentMD5 == nil && ck.Value == "" && !ck.Trailer
}

// CreateBucket's object lock: the bucket starts with versioning Enabled
// and object lock without a default retention.
func enableLockAtCreate(b *meta.Bucket) {
	b.Versioning = VersioningEnabled
	b.ObjectLock = encodeLockConfig(LockConfig{})
}

// GetObjectLockConfiguration returns the bucket's default retention (the
// zero LockConfig for none); ObjectLockConfigurationNotFoundError when
// object lock is not enabled.
func (s *Service) GetObjectLockConfiguration(ctx context.Context, c *Caller, bucket string) (LockConfig, error) {
	const op errs.Op = "obs.GetObjectLockConfiguration"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return LockConfig{}, err
	}
	if err := s.check(op, c, b, ActionGetBucketObjectLockConfiguration, "", nil); err != nil {
		return LockConfig{}, err
	}
	cfg, enabled, err := lockConfig(op, b)
	if err != nil {
		return LockConfig{}, err
	}
	if !enabled {
		return LockConfig{}, fail(op, CodeNoLockConfig, msgNoLockConfig, hintEnableObjectLock)
	}
	return cfg, nil
}

// PutObjectLockConfiguration enables object lock on the bucket, whose
// versioning must be Enabled (InvalidBucketState otherwise), and sets its
// default retention (the zero LockConfig removes it). Object lock cannot
// be turned off again.
func (s *Service) PutObjectLockConfiguration(ctx context.Context, c *Caller, bucket string, cfg LockConfig) error {
	const op errs.Op = "obs.PutObjectLockConfiguration"
	if err := ValidateLockConfig(cfg); err != nil {
		return err
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketObjectLockConfiguration, "", nil); err != nil {
		return err
	}
	if b.Versioning != VersioningEnabled {
		return lockNeedsVersions(op, bucket)
	}
	err = s.store.SetBucketConfig(ctx, bucket, meta.BucketObjectLock, encodeLockConfig(cfg))
	switch {
	case errs.Is(err, errs.Conflict):
		return lockNeedsVersions(op, bucket) // versioning was suspended meanwhile
	case errs.Is(err, errs.NotFound):
		return noSuchBucket(op, bucket)
	case err != nil:
		return storeErr(op, fmt.Sprintf("storing the object lock configuration of bucket %q", bucket), err)
	}
	return nil
}

func lockNeedsVersions(op errs.Op, bucket string) error {
	return fail(op, CodeInvalidBucketState, msgLockNeedsVersions,
		fmt.Sprintf("enable the versioning of bucket %q first (`atelier obs versioning enable obs://%s`)", bucket, bucket))
}

func versioningLocked(op errs.Op, bucket string) error {
	return fail(op, CodeInvalidBucketState, msgVersioningLocked,
		fmt.Sprintf("bucket %q has object lock, which keeps its versioning Enabled for good", bucket))
}

// lockedBucket loads a bucket for a request about a version's object lock
// and authorizes action on key; InvalidRequest when the bucket does not
// have object lock (after the authorization, so that a caller without
// access learns nothing of it).
func (s *Service) lockedBucket(ctx context.Context, op errs.Op, c *Caller, bucket, key, action string, extra map[string][]string) (*meta.Bucket, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if b.ObjectLock == "" {
		if err := s.check(op, c, b, action, key, extra); err != nil {
			return nil, err
		}
		return nil, fail(op, CodeLockNotEnabled, msgLockNotEnabled,
			fmt.Sprintf("bucket %q does not have object lock; %s", bucket, hintEnableObjectLock))
	}
	return b, nil
}

// GetObjectRetention returns the retention of a version (version as S3
// shows ids; "" for the latest) and the version's id as shown;
// NoSuchObjectLockConfiguration when it has none.
func (s *Service) GetObjectRetention(ctx context.Context, c *Caller, bucket, key, version string) (meta.ObjectLock, string, error) {
	const op errs.Op = "obs.GetObjectRetention"
	_, o, err := s.lockTarget(ctx, op, c, bucket, key, version, ActionGetObjectRetention, nil)
	if err != nil {
		return meta.ObjectLock{}, "", err
	}
	if o.Lock.Mode == "" {
		return meta.ObjectLock{}, shownVersion(o), fail(op, CodeNoObjectLock, msgNoObjectLock,
			"the version has no retention; PUT ?retention sets one")
	}
	return meta.ObjectLock{Mode: o.Lock.Mode, RetainUntil: o.Lock.RetainUntil}, shownVersion(o), nil
}

// GetObjectLegalHold returns the legal hold of a version (ON or OFF) and
// the version's id as shown; NoSuchObjectLockConfiguration when it never
// had one.
func (s *Service) GetObjectLegalHold(ctx context.Context, c *Caller, bucket, key, version string) (string, string, error) {
	const op errs.Op = "obs.GetObjectLegalHold"
	_, o, err := s.lockTarget(ctx, op, c, bucket, key, version, ActionGetObjectLegalHold, nil)
	if err != nil {
		return "", "", err
	}
	if o.Lock.LegalHold == "" {
		return "", shownVersion(o), fail(op, CodeNoObjectLock, msgNoObjectLock,
			"the version never had a legal hold; PUT ?legal-hold sets one")
	}
	return o.Lock.LegalHold, shownVersion(o), nil
}

// lockTarget authorizes action on a version of a bucket with object lock,
// with the version's tags and extra in the condition context, and reads
// the bucket and the version.
func (s *Service) lockTarget(ctx context.Context, op errs.Op, c *Caller, bucket, key, version, action string, extra map[string][]string) (*meta.Bucket, *meta.Object, error) {
	b, err := s.lockedBucket(ctx, op, c, bucket, key, action, extra)
	if err != nil {
		return nil, nil, err
	}
	o, err := s.checkVersion(ctx, op, c, b, action, key, version, nil)
	if err != nil {
		return nil, nil, err
	}
	if len(extra) > 0 {
		tc := tagContext(nil, o, nil)
		for k, v := range extra {
			tc[k] = v
		}
		if err := s.check(op, c, b, action, key, tc); err != nil {
			return nil, nil, err
		}
	}
	return b, o, nil
}

// PutObjectRetention sets the retention of a version ("" for the latest;
// a zero retention removes it) as CheckRetention allows, with bypass
// (x-amz-bypass-governance-retention: true) honoured for a caller allowed
// s3:BypassGovernanceRetention, and returns the version's id as shown.
// The check and the change are one transaction of the index.
func (s *Service) PutObjectRetention(ctx context.Context, c *Caller, bucket, key, version string, r meta.ObjectLock, bypass bool) (string, error) {
	const op errs.Op = "obs.PutObjectRetention"
	r.LegalHold = ""
	if r.Mode != "" && r.Mode != LockGovernance && r.Mode != LockCompliance || (r.Mode == "") != r.RetainUntil.IsZero() {
		return "", fail(op, CodeBadLockConfig, "The XML you provided was not well-formed or did not validate against our published schema: a <Retention> has a Mode (GOVERNANCE or COMPLIANCE) and a RetainUntilDate, or neither",
			"<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>")
	}
	now := s.now()
	r.RetainUntil = r.RetainUntil.UTC().Truncate(time.Millisecond)
	extra := lockContext(nil, r, now)
	b, o, err := s.lockTarget(ctx, op, c, bucket, key, version, ActionPutObjectRetention, extra)
	if err != nil {
		return "", err
	}
	by := s.bypass(op, c, b, key, bypass)
	_, err = s.store.SetObjectRetention(ctx, bucket, key, o.VersionID, r, func(v *meta.Object) error {
		return CheckRetention(v.Lock, r, now, by)
	})
	if err != nil {
		return "", s.versionWriteErr(op, bucket, key, version, "storing the retention", err)
	}
	return shownVersion(o), nil
}

// PutObjectLegalHold sets the legal hold of a version ("" for the
// latest) ON or OFF and returns the version's id as shown.
func (s *Service) PutObjectLegalHold(ctx context.Context, c *Caller, bucket, key, version, status string) (string, error) {
	const op errs.Op = "obs.PutObjectLegalHold"
	if status != LegalHoldOn && status != LegalHoldOff {
		return "", fail(op, CodeBadLockConfig, fmt.Sprintf("The XML you provided was not well-formed or did not validate against our published schema: the legal hold Status %q is not ON or OFF", status),
			"<LegalHold><Status>ON</Status></LegalHold>")
	}
	extra := lockContext(nil, meta.ObjectLock{LegalHold: status}, s.now())
	_, o, err := s.lockTarget(ctx, op, c, bucket, key, version, ActionPutObjectLegalHold, extra)
	if err != nil {
		return "", err
	}
	if _, err := s.store.SetObjectLegalHold(ctx, bucket, key, o.VersionID, status); err != nil {
		return "", s.versionWriteErr(op, bucket, key, version, "storing the legal hold", err)
	}
	return shownVersion(o), nil
}

// versionWriteErr maps the error of a change to one version.
func (s *Service) versionWriteErr(op errs.Op, bucket, key, version, what string, err error) error {
	switch {
	case errs.CodeOf(err) != "":
		return err // the check's decision
	case errs.Is(err, errs.NotFound) && version != "":
		return noSuchVersion(op, bucket, key, version)
	case errs.Is(err, errs.NotFound):
		return noSuchKey(op, bucket, key)
	}
	return storeErr(op, fmt.Sprintf("%s of object %q", what, key), err)
}

// bypass is the Bypass of a request by c that asked (or not) to bypass
// GOVERNANCE retention on key.
func (s *Service) bypass(op errs.Op, c *Caller, b *meta.Bucket, key string, asked bool) Bypass {
	if !asked {
		return Bypass{}
	}
	return Bypass{Asked: true, Permitted: s.check(op, c, b, ActionBypassGovernanceRetention, key, nil) == nil}
}

// lockVisibility reports which object lock headers a GET or HEAD of obj
// by c shows: the retention with s3:GetObjectRetention, the legal hold
// (when it was ever set) with s3:GetObjectLegalHold.
func (s *Service) lockVisibility(op errs.Op, c *Caller, b *meta.Bucket, key string, obj *meta.Object) (retention, legalHold bool) {
	if obj == nil {
		return false, false
	}
	if obj.Lock.Mode != "" {
		retention = s.check(op, c, b, ActionGetObjectRetention, key, nil) == nil
	}
	if obj.Lock.LegalHold != "" {
		legalHold = s.check(op, c, b, ActionGetObjectLegalHold, key, nil) == nil
	}
	return retention, legalHold
}
