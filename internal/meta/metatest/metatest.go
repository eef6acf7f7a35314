package metatest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Run runs the conformance suite. open must return a fresh, empty store for
// each call and arrange, with t.Cleanup, for it to be closed (closing twice
// must be harmless) and removed. Subtests run in parallel.
func Run(t *testing.T, open func(t *testing.T) meta.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, meta.Store)
	}{
		{"Ping", testPing},
		{"Close", testClose},
		{"TimeRoundTrip", testTimeRoundTrip},

		{"UserRoundTrip", testUserRoundTrip},
		{"UserExists", testUserExists},
		{"UserInvalid", testUserInvalid},
		{"UserNotFound", testUserNotFound},
		{"UserList", testUserList},
		{"UserListCap", testUserListCap},
		{"UserUTF8", testUserUTF8},
		{"DeleteUserCascade", testDeleteUserCascade},
		{"ConcurrentCreateUsers", testConcurrentCreateUsers},
		{"ConcurrentSameName", testConcurrentSameName},

		{"AccessKeyRoundTrip", testAccessKeyRoundTrip},
		{"AccessKeyErrors", testAccessKeyErrors},
		{"AccessKeyStatusAndDelete", testAccessKeyStatusAndDelete},
		{"AccessKeyList", testAccessKeyList},
		{"DeleteExpiredAccessKeys", testDeleteExpiredAccessKeys},

		{"TokenRoundTrip", testTokenRoundTrip},
		{"TokenErrors", testTokenErrors},
		{"TokenList", testTokenList},
		{"RevokeToken", testRevokeToken},
		{"DeleteExpiredTokens", testDeleteExpiredTokens},

		{"PolicyRoundTrip", testPolicyRoundTrip},
		{"PolicyErrors", testPolicyErrors},
		{"PolicyList", testPolicyList},
		{"PolicyAttach", testPolicyAttach},
		{"DeletePolicyAttached", testDeletePolicyAttached},

		{"Settings", testSettings},

		{"BucketRoundTrip", testBucketRoundTrip},
		{"BucketList", testBucketList},
		{"BucketConfig", testBucketConfig},
		{"DeleteBucket", testDeleteBucket},

		{"ObjectRoundTrip", testObjectRoundTrip},
		{"ObjectInvalid", testObjectInvalid},
		{"GetBucketObject", testGetBucketObject},
		{"ObjectKeys", testObjectKeys},
		{"ListObjectsDelimiter", testListObjectsDelimiter},
		{"ListObjectsEdges", testListObjectsEdges},
		{"ListObjectsPaging", testListObjectsPaging},
		{"ListObjectsRandom", testListObjectsRandom},
		{"ConcurrentPutObject", testConcurrentPutObject},
		{"BlobsInUse", testBlobsInUse},
		{"ObjectTags", testObjectTags},
		{"BucketTags", testBucketTags},
		{"ObjectACL", testObjectACL},
		{"BucketACLs", testBucketACLs},
		{"PutObjectIf", testPutObjectIf},
		{"DeleteObjectIf", testDeleteObjectIf},
		{"ConcurrentDeleteObjectIf", testConcurrentDeleteObjectIf},
		{"ConcurrentCreateOnly", testConcurrentCreateOnly},
		{"CompleteUploadIf", testCompleteUploadIf},
		{"PartChecksums", testPartChecksums},
		{"VersioningState", testVersioningState},
		{"Versions", testVersions},
		{"PutMarkerIf", testPutMarkerIf},
		{"ListObjectVersionsPaging", testListObjectVersionsPaging},
		{"ConcurrentVersionedPuts", testConcurrentVersionedPuts},
		{"VersionACLs", testVersionACLs},
		{"BucketObjectLock", testBucketObjectLock},
		{"ObjectLocks", testObjectLocks},
		{"ConcurrentRetention", testConcurrentRetention},

		{"UploadRoundTrip", testUploadRoundTrip},
		{"Multipart", testMultipart},
		{"ConcurrentPutParts", testConcurrentPutParts},
		{"ListUploads", testListUploads},
		{"ListUploadsCap", testListUploadsCap},
		{"ListPartsCap", testListPartsCap},

		{"JobRoundTrip", testJobRoundTrip},
		{"JobExists", testJobExists},
		{"JobInvalid", testJobInvalid},
		{"JobList", testJobList},
		{"JobListSort", testJobListSort},
		{"JobListCap", testJobListCap},
		{"JobUpdate", testJobUpdate},
		{"ConcurrentUpdateJob", testConcurrentUpdateJob},
		{"DeleteJobCascade", testDeleteJobCascade},
		{"ConcurrentDeleteJob", testConcurrentDeleteJob},
		{"JobOwnerDeleted", testJobOwnerDeleted},
		{"JobLogs", testJobLogs},
		{"JobLogText", testJobLogText},
		{"JobLogsMany", testJobLogsMany},
		{"JobMetrics", testJobMetrics},
		{"JobEvents", testJobEvents},

		{"ModelRoundTrip", testModelRoundTrip},
		{"ModelExists", testModelExists},
		{"ModelInvalid", testModelInvalid},
		{"ModelList", testModelList},
		{"ModelUpdate", testModelUpdate},
		{"DeleteModel", testDeleteModel},
		{"ConcurrentCreateModel", testConcurrentCreateModel},

		{"ServiceRoundTrip", testServiceRoundTrip},
		{"ServiceExists", testServiceExists},
		{"ServiceInvalid", testServiceInvalid},
		{"ServiceList", testServiceList},
		{"ServiceUpdate", testServiceUpdate},
		{"ConcurrentUpdateService", testConcurrentUpdateService},
		{"DeleteServiceCascade", testDeleteServiceCascade},
		{"ServiceLogs", testServiceLogs},
		{"ServiceEvents", testServiceEvents},
		{"ServiceUsage", testServiceUsage},
		{"ServicesUsingModel", testServicesUsingModel},

		{"DatasetRoundTrip", testDatasetRoundTrip},
		{"DatasetExists", testDatasetExists},
		{"DatasetInvalid", testDatasetInvalid},
		{"DatasetList", testDatasetList},
		{"DatasetUpdateDelete", testDatasetUpdateDelete},
		{"ConcurrentDatasetVersions", testConcurrentDatasetVersions},
		{"DatasetLabels", testDatasetLabels},
		{"DatasetPins", testDatasetPins},

		{"NotebookRoundTrip", testNotebookRoundTrip},
		{"NotebookExists", testNotebookExists},
		{"NotebookInvalid", testNotebookInvalid},
		{"NotebookNotFound", testNotebookNotFound},
		{"NotebookList", testNotebookList},
		{"NotebookCount", testNotebookCount},
		{"NotebookUpdate", testNotebookUpdate},
		{"ConcurrentUpdateNotebook", testConcurrentUpdateNotebook},
		{"DeleteNotebookCascade", testDeleteNotebookCascade},
		{"NotebookEvents", testNotebookEvents},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// RunReopen checks that what a store wrote survives Close: open returns a
// fresh, empty store and a function that opens the same database again
// (running the migrations a second time). Both stores must be closed by
// cleanups that open registers, or by the test.
func RunReopen(t *testing.T, open func(t *testing.T) (meta.Store, func() meta.Store)) {
	s, reopen := open(t)
	ctx := t.Context()
	u := user("u1", "ada")
	must(t, s.CreateUser(ctx, u))
	k := permanentKey("AK1", u.ID)
	must(t, s.CreateAccessKey(ctx, k))
	tok := token("t1", u.ID, "h1", base().Add(-time.Hour), base().Add(time.Hour))
	must(t, s.CreateToken(ctx, tok))
	p := policy("p1", "readers")
	must(t, s.CreatePolicy(ctx, p))
	must(t, s.AttachPolicy(ctx, u.ID, p.ID))
	must(t, s.PutSetting(ctx, "admin-key", "AK1"))
	b := bucket("b1", u.ID)
	b.Policy = `{"Statement":[]}`
	must(t, s.CreateBucket(ctx, b))
	o := object("b1", "dir/中文.txt", 3, 4)
	put(t, s, o)
	up := upload("up1", "b1", "big")
	must(t, s.CreateUpload(ctx, up))
	pt := part("up1", 1, "part-1", 5)
	_, err := s.PutPart(ctx, pt)
	must(t, err)
	seedJobForReopen(t, s)
	must(t, s.Close())

	s = reopen()
	checkJobAfterReopen(t, s)
	gotU, err := s.GetUser(ctx, u.ID)
	must(t, err)
	same(t, "user after reopen", *gotU, norm(*u))
	gotK, err := s.GetAccessKey(ctx, k.AccessKey)
	must(t, err)
	same(t, "access key after reopen", *gotK, norm(*k))
	gotT, err := s.GetTokenByHash(ctx, tok.Hash)
	must(t, err)
	same(t, "token after reopen", *gotT, norm(*tok))
	gotP, err := s.UserPolicies(ctx, u.ID)
	must(t, err)
	same(t, "policies after reopen", vals(gotP), []meta.Policy{norm(*p)})
	v, err := s.GetSetting(ctx, "admin-key")
	must(t, err)
	same(t, "setting after reopen", v, "AK1")
	must(t, s.CreateUser(ctx, user("u2", "grace")))
	_, n, err := s.ListUsers(ctx, meta.ListOptions{})
	must(t, err)
	same(t, "users after reopen", n, 2)
	gotB, err := s.GetBucket(ctx, "b1")
	must(t, err)
	same(t, "bucket after reopen", *gotB, norm(*b))
	gotO, err := s.GetObject(ctx, "b1", o.Key)
	must(t, err)
	sameObject(t, "object after reopen", gotO, o)
	gotUp, err := s.GetUpload(ctx, up.ID)
	must(t, err)
	same(t, "upload after reopen", *gotUp, normUpload(up))
	parts, _, err := s.ListParts(ctx, up.ID, 0, 0)
	must(t, err)
	same(t, "parts after reopen", vals(parts), []meta.UploadPart{norm(*pt)})
	inUse, err := s.BlobsInUse(ctx, []string{o.Blobs[0].ID, o.Blobs[1].ID, pt.Blob.ID})
	must(t, err)
	same(t, "blobs in use after reopen", len(inUse), 3)
}

// base is the time fixtures are created at: a non-UTC zone and nanoseconds
// that the store must round to milliseconds.
func base() time.Time {
	return time.Date(2025, 3, 14, 15, 9, 26, 535_897_932, time.FixedZone("UTC+1", 3600))
}

// ms is t as a store returns it: UTC, truncated to milliseconds.
func ms(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// norm is v as a store returns it: its times passed through ms.
func norm[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Type() == reflect.TypeFor[time.Time]() {
			f.Set(reflect.ValueOf(ms(f.Interface().(time.Time))))
		}
	}
	return v
}

func vals[T any](ps []*T) []T {
	out := make([]T, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out
}

func user(id, name string) *meta.User {
	return &meta.User{ID: id, Name: name, CreateTime: base()}
}

func permanentKey(ak, userID string) *meta.AccessKey {
	return &meta.AccessKey{
		AccessKey:   ak,
		UserID:      userID,
		SecretEnc:   []byte{0, 1, 2, 0xfe, 0xff, 'x'},
		Status:      meta.KeyActive,
		Description: "key " + ak,
		CreateTime:  base(),
	}
}

func temporaryKey(ak, userID string, expires time.Time) *meta.AccessKey {
	k := permanentKey(ak, userID)
	k.Temporary = true
	k.SessionTokenHash = "sth-" + ak
	k.ExpiresAt = expires
	k.SessionPolicy = `{"Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["*"]}]}`
	return k
}

func token(id, userID, hash string, created, expires time.Time) *meta.Token {
	return &meta.Token{ID: id, UserID: userID, Hash: hash, AccessKey: "AK-" + id, CreateTime: created, ExpiresAt: expires}
}

func policy(id, name string) *meta.Policy {
	return &meta.Policy{
		ID:          id,
		Name:        name,
		Description: "policy " + name,
		Document:    `{"Statement":[{"Effect":"Allow","Action":["*"],"Resource":["*"]}]}`,
		OwnerID:     "owner-1",
		CreateTime:  base(),
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantKind(t *testing.T, what string, err error, k errs.Kind) {
	t.Helper()
	if !errs.Is(err, k) {
		t.Fatalf("%s: got error %v (kind %q), want kind %q", what, err, errs.KindOf(err), k)
	}
}

func same[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\ngot  %+v\nwant %+v", what, got, want)
	}
}

func seedUsers(t *testing.T, s meta.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		must(t, s.CreateUser(t.Context(), user(id, "name-"+id)))
	}
}

func testPing(t *testing.T, s meta.Store) {
	must(t, s.Ping(t.Context()))
}

// testClose checks that a closed store fails every call, with an error that
// does not pretend to be an answer (NotFound, Exists, Conflict), and that a
// second Close is harmless.
func testClose(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1")
	seedBucket(t, s, "b1")
	put(t, s, object("b1", "k", 1))
	must(t, s.CreateUpload(ctx, upload("up1", "b1", "k")))
	_, err := s.PutPart(ctx, part("up1", 1, "x", 1))
	must(t, err)
	must(t, s.CreateJob(ctx, job("j1", "u1", "train")))
	must(t, s.CreateModel(ctx, modelVersion("m1", "u1", "n", "1.0.0")))
	must(t, s.CreateNotebook(ctx, notebook("nb1", "u1", "n")))
	must(t, s.Close())
	must(t, s.Close())
	b := base()
	opts := meta.ListOptions{}
	sample := []meta.JobMetric{{Attempt: 1, Seq: 1, Kind: "user"}}
	for name, call := range map[string]func() error{
		"Ping":                    func() error { return s.Ping(ctx) },
		"CreateUser":              func() error { return s.CreateUser(ctx, user("u2", "grace")) },
		"GetUser":                 func() error { _, err := s.GetUser(ctx, "u1"); return err },
		"GetUserByName":           func() error { _, err := s.GetUserByName(ctx, "name-u1"); return err },
		"ListUsers":               func() error { _, _, err := s.ListUsers(ctx, opts); return err },
		"DeleteUser":              func() error { return s.DeleteUser(ctx, "u1") },
		"CreateAccessKey":         func() error { return s.CreateAccessKey(ctx, permanentKey("AK", "u1")) },
		"GetAccessKey":            func() error { _, err := s.GetAccessKey(ctx, "AK"); return err },
		"ListAccessKeys":          func() error { _, _, err := s.ListAccessKeys(ctx, meta.AccessKeyFilter{}, opts); return err },
		"SetAccessKeyStatus":      func() error { return s.SetAccessKeyStatus(ctx, "AK", meta.KeyDisabled) },
		"DeleteAccessKey":         func() error { return s.DeleteAccessKey(ctx, "AK") },
		"DeleteExpiredAccessKeys": func() error { _, err := s.DeleteExpiredAccessKeys(ctx, b); return err },
		"CreateToken":             func() error { return s.CreateToken(ctx, token("t1", "u1", "h1", b, b)) },
		"GetToken":                func() error { _, err := s.GetToken(ctx, "t1"); return err },
		"GetTokenByHash":          func() error { _, err := s.GetTokenByHash(ctx, "h1"); return err },
		"ListTokens":              func() error { _, _, err := s.ListTokens(ctx, "u1", opts); return err },
		"RevokeToken":             func() error { return s.RevokeToken(ctx, "t1") },
		"DeleteExpiredTokens":     func() error { _, err := s.DeleteExpiredTokens(ctx, b); return err },
		"CreatePolicy":            func() error { return s.CreatePolicy(ctx, policy("p1", "readers")) },
		"GetPolicy":               func() error { _, err := s.GetPolicy(ctx, "p1"); return err },
		"GetPolicyByName":         func() error { _, err := s.GetPolicyByName(ctx, "readers"); return err },
		"ListPolicies":            func() error { _, _, err := s.ListPolicies(ctx, opts); return err },
		"DeletePolicy":            func() error { return s.DeletePolicy(ctx, "p1") },
		"AttachPolicy":            func() error { return s.AttachPolicy(ctx, "u1", "p1") },
		"DetachPolicy":            func() error { return s.DetachPolicy(ctx, "u1", "p1") },
		"UserPolicies":            func() error { _, err := s.UserPolicies(ctx, "u1"); return err },
		"PolicyUsers":             func() error { _, err := s.PolicyUsers(ctx, "p1"); return err },
		"GetSetting":              func() error { _, err := s.GetSetting(ctx, "k"); return err },
		"PutSetting":              func() error { return s.PutSetting(ctx, "k", "v") },
		"CreateBucket":            func() error { return s.CreateBucket(ctx, bucket("b2", "u1")) },
		"GetBucket":               func() error { _, err := s.GetBucket(ctx, "b1"); return err },
		"ListBuckets":             func() error { _, err := s.ListBuckets(ctx, ""); return err },
		"DeleteBucket":            func() error { return s.DeleteBucket(ctx, "b1") },
		"SetBucketConfig":         func() error { return s.SetBucketConfig(ctx, "b1", meta.BucketCORS, "{}") },
		"PutObject":               func() error { _, err := s.PutObject(ctx, object("b1", "k2", 1)); return err },
		"GetObject":               func() error { _, err := s.GetObject(ctx, "b1", "k"); return err },
		"GetBucketObject":         func() error { _, _, err := s.GetBucketObject(ctx, "b1", "k"); return err },
		"DeleteObject":            func() error { _, err := s.DeleteObject(ctx, "b1", "k"); return err },
		"SetObjectRetention": func() error {
			_, err := s.SetObjectRetention(ctx, "b1", "k", "", meta.ObjectLock{Mode: meta.LockGovernance, RetainUntil: b}, nil)
			return err
		},
		"SetObjectLegalHold": func() error { _, err := s.SetObjectLegalHold(ctx, "b1", "k", "", meta.LegalHoldOn); return err },
		"PutMarkerIf": func() error {
			_, err := s.PutMarkerIf(ctx, marker("b1", "k", "m9"), func(*meta.Object) bool { return true })
			return err
		},
		"DeleteObjectVersionIf": func() error { _, err := s.DeleteObjectVersionIf(ctx, "b1", "k", "", nil); return err },
		"ListObjects":           func() error { _, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"}); return err },
		"BlobsInUse":            func() error { _, err := s.BlobsInUse(ctx, []string{"x"}); return err },
		"CreateUpload":          func() error { return s.CreateUpload(ctx, upload("up2", "b1", "k")) },
		"GetUpload":             func() error { _, err := s.GetUpload(ctx, "up1"); return err },
		"ListUploads":           func() error { _, _, err := s.ListUploads(ctx, meta.ListUploadsQuery{Bucket: "b1"}); return err },
		"PutPart":               func() error { _, err := s.PutPart(ctx, part("up1", 2, "x", 1)); return err },
		"ListParts":             func() error { _, _, err := s.ListParts(ctx, "up1", 0, 0); return err },
		"CompleteUpload":        func() error { _, _, err := s.CompleteUpload(ctx, "up1", object("b1", "k", 1)); return err },
		"AbortUpload":           func() error { _, err := s.AbortUpload(ctx, "up1"); return err },
		"CreateJob":             func() error { return s.CreateJob(ctx, job("j2", "u1", "other")) },
		"GetJob":                func() error { _, err := s.GetJob(ctx, "j1"); return err },
		"ListJobs":              func() error { _, _, err := s.ListJobs(ctx, meta.JobFilter{}, opts); return err },
		"UpdateJob":             func() error { return s.UpdateJob(ctx, job("j1", "u1", "train")) },
		"DeleteJob":             func() error { return s.DeleteJob(ctx, "j1") },
		"AppendJobLogs":         func() error { return s.AppendJobLogs(ctx, "j1", logLines(1, 1, 1)) },
		"ReadJobLogs":           func() error { _, err := s.ReadJobLogs(ctx, "j1", meta.JobLogCursor{}, 0); return err },
		"AppendJobMetrics":      func() error { return s.AppendJobMetrics(ctx, "j1", sample) },
		"ListJobMetrics":        func() error { _, err := s.ListJobMetrics(ctx, "j1"); return err },
		"AddJobEvent":           func() error { return s.AddJobEvent(ctx, "j1", meta.JobEvent{Message: "x"}) },
		"ListJobEvents":         func() error { _, _, err := s.ListJobEvents(ctx, "j1", opts); return err },
		"CreateModel":           func() error { return s.CreateModel(ctx, modelVersion("m2", "u1", "n", "1.0.0")) },
		"GetModel":              func() error { _, err := s.GetModel(ctx, "m1"); return err },
		"ListModels":            func() error { _, _, err := s.ListModels(ctx, meta.ModelFilter{}, opts); return err },
		"UpdateModel":           func() error { return s.UpdateModel(ctx, modelVersion("m1", "u1", "n", "1.0.0")) },
		"DeleteModel":           func() error { return s.DeleteModel(ctx, "m1") },
		"CreateDataset":         func() error { return s.CreateDataset(ctx, dataset("d2", "u1", "n")) },
		"GetDataset":            func() error { _, err := s.GetDataset(ctx, "d1"); return err },
		"ListDatasetVersions":   func() error { _, _, err := s.ListDatasetVersions(ctx, "d1", opts); return err },
		"CreateNotebook":        func() error { return s.CreateNotebook(ctx, notebook("nb2", "u1", "other")) },
		"GetNotebook":           func() error { _, err := s.GetNotebook(ctx, "nb1"); return err },
		"ListNotebooks":         func() error { _, _, err := s.ListNotebooks(ctx, meta.NotebookFilter{}, opts); return err },
		"CountNotebooks":        func() error { _, err := s.CountNotebooks(ctx, "u1", nil); return err },
		"UpdateNotebook":        func() error { r := notebook("nb1", "u1", "n"); r.Version = 1; return s.UpdateNotebook(ctx, r) },
		"DeleteNotebook":        func() error { return s.DeleteNotebook(ctx, "nb1") },
		"AddNotebookEvent":      func() error { return s.AddNotebookEvent(ctx, "nb1", meta.NotebookEvent{Message: "x"}) },
		"ListNotebookEvents":    func() error { _, _, err := s.ListNotebookEvents(ctx, "nb1", opts); return err },
	} {
		err := call()
		if err == nil || errs.Is(err, errs.NotFound) || errs.Is(err, errs.Exists) || errs.Is(err, errs.Conflict) {
			t.Errorf("%s after Close: got %v, want a failure", name, err)
		}
	}
}

func testTimeRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	times := []time.Time{
		{},
		time.Unix(0, 0),
		time.Date(1969, 7, 20, 20, 17, 40, 123_456_789, time.UTC),
		base(),
		time.Date(2025, 3, 14, 15, 9, 26, 999_999_999, time.FixedZone("UTC-7", -7*3600)),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
	}
	for i, tm := range times {
		u := &meta.User{ID: fmt.Sprint("u", i), Name: fmt.Sprint("n", i), CreateTime: tm}
		must(t, s.CreateUser(ctx, u))
		got, err := s.GetUser(ctx, u.ID)
		must(t, err)
		if !got.CreateTime.Equal(ms(tm)) || got.CreateTime.IsZero() != tm.IsZero() {
			t.Errorf("time %v: got %v, want %v", tm, got.CreateTime, ms(tm))
		}
		if !tm.IsZero() && got.CreateTime.Location() != time.UTC {
			t.Errorf("time %v: got location %v, want UTC", tm, got.CreateTime.Location())
		}
	}
}

func testUserRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	admin := &meta.User{ID: "u1", Name: "ada", Admin: true, CreateTime: base()}
	plain := &meta.User{ID: "u2", Name: "grace"} // zero create time
	must(t, s.CreateUser(ctx, admin))
	must(t, s.CreateUser(ctx, plain))
	for _, want := range []*meta.User{admin, plain} {
		got, err := s.GetUser(ctx, want.ID)
		must(t, err)
		same(t, "GetUser", *got, norm(*want))
		got, err = s.GetUserByName(ctx, want.Name)
		must(t, err)
		same(t, "GetUserByName", *got, norm(*want))
	}
}

func testUserExists(t *testing.T, s meta.Store) {
	ctx := t.Context()
	u := user("u1", "ada")
	must(t, s.CreateUser(ctx, u))
	wantKind(t, "same name", s.CreateUser(ctx, user("u2", "ada")), errs.Exists)
	wantKind(t, "same id", s.CreateUser(ctx, user("u1", "grace")), errs.Exists)
	got, err := s.GetUser(ctx, "u1")
	must(t, err)
	same(t, "original user", *got, norm(*u))
	_, n, err := s.ListUsers(ctx, meta.ListOptions{})
	must(t, err)
	same(t, "user count", n, 1)
}

func testUserInvalid(t *testing.T, s meta.Store) {
	ctx := t.Context()
	wantKind(t, "empty id", s.CreateUser(ctx, user("", "ada")), errs.Invalid)
	wantKind(t, "empty name", s.CreateUser(ctx, user("u1", "")), errs.Invalid)
}

func testUserNotFound(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1")
	_, err := s.GetUser(ctx, "nobody")
	wantKind(t, "GetUser", err, errs.NotFound)
	_, err = s.GetUserByName(ctx, "nobody")
	wantKind(t, "GetUserByName", err, errs.NotFound)
	wantKind(t, "DeleteUser", s.DeleteUser(ctx, "nobody"), errs.NotFound)
	must(t, s.DeleteUser(ctx, "u1"))
	wantKind(t, "DeleteUser twice", s.DeleteUser(ctx, "u1"), errs.NotFound)
	_, err = s.GetUser(ctx, "u1")
	wantKind(t, "GetUser after delete", err, errs.NotFound)
}

func testUserList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	users, n, err := s.ListUsers(ctx, meta.ListOptions{})
	must(t, err)
	if len(users) != 0 || n != 0 {
		t.Fatalf("empty store: got %d users, total %d", len(users), n)
	}
	var names []string
	for i := range 25 {
		names = append(names, fmt.Sprintf("user-%02d", i))
	}
	for _, i := range rand.Perm(len(names)) {
		must(t, s.CreateUser(ctx, user(fmt.Sprint("id-", i), names[i])))
	}
	page := func(opts meta.ListOptions) []string {
		t.Helper()
		users, n, err := s.ListUsers(ctx, opts)
		must(t, err)
		same(t, fmt.Sprintf("total for %+v", opts), n, len(names))
		out := []string{}
		for _, u := range users {
			out = append(out, u.Name)
		}
		return out
	}
	same(t, "default page", page(meta.ListOptions{}), names)
	same(t, "first page", page(meta.ListOptions{Limit: 10}), names[:10])
	same(t, "second page", page(meta.ListOptions{Offset: 10, Limit: 10}), names[10:20])
	same(t, "last page", page(meta.ListOptions{Offset: 20, Limit: 10}), names[20:])
	same(t, "past the end", page(meta.ListOptions{Offset: 25, Limit: 10}), []string{})
	same(t, "negative offset", page(meta.ListOptions{Offset: -5, Limit: 3}), names[:3])
	same(t, "negative limit", page(meta.ListOptions{Offset: 24, Limit: -1}), names[24:])
}

func testUserListCap(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for i := range meta.MaxLimit + 1 {
		must(t, s.CreateUser(ctx, &meta.User{ID: fmt.Sprint("u", i), Name: fmt.Sprintf("n%04d", i)}))
	}
	users, n, err := s.ListUsers(ctx, meta.ListOptions{Limit: 2 * meta.MaxLimit})
	must(t, err)
	same(t, "page size", len(users), meta.MaxLimit)
	same(t, "total", n, meta.MaxLimit+1)
	users, _, err = s.ListUsers(ctx, meta.ListOptions{})
	must(t, err)
	same(t, "default page size", len(users), meta.DefaultLimit)
}

func testUserUTF8(t *testing.T, s meta.Store) {
	ctx := t.Context()
	names := []string{"zoë", "Zoe", "ålfa", "李雷", "🎉 party", "alice", "Bob", "Ωmega", "naïve café"}
	for i, name := range names {
		must(t, s.CreateUser(ctx, user(fmt.Sprint("u", i), name)))
	}
	for _, name := range names {
		got, err := s.GetUserByName(ctx, name)
		must(t, err)
		same(t, "name", got.Name, name)
	}
	_, err := s.GetUserByName(ctx, "zoe")
	wantKind(t, "names are case-sensitive", err, errs.NotFound)
	users, _, err := s.ListUsers(ctx, meta.ListOptions{})
	must(t, err)
	var got []string
	for _, u := range users {
		got = append(got, u.Name)
	}
	slices.Sort(names) // bytewise, as both stores order
	same(t, "order", got, names)
}

func testDeleteUserCascade(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1", "u2")
	p := policy("p1", "shared")
	must(t, s.CreatePolicy(ctx, p))
	for _, u := range []string{"u1", "u2"} {
		must(t, s.CreateAccessKey(ctx, permanentKey("AK-"+u, u)))
		must(t, s.CreateAccessKey(ctx, temporaryKey("TK-"+u, u, base().Add(time.Hour))))
		must(t, s.CreateToken(ctx, token("t-"+u, u, "h-"+u, base(), base().Add(time.Hour))))
		must(t, s.AttachPolicy(ctx, u, p.ID))
	}
	must(t, s.DeleteUser(ctx, "u1"))

	for _, ak := range []string{"AK-u1", "TK-u1"} {
		_, err := s.GetAccessKey(ctx, ak)
		wantKind(t, "key of deleted user", err, errs.NotFound)
	}
	_, err := s.GetToken(ctx, "t-u1")
	wantKind(t, "token of deleted user", err, errs.NotFound)
	_, err = s.GetTokenByHash(ctx, "h-u1")
	wantKind(t, "token hash of deleted user", err, errs.NotFound)
	ids, err := s.PolicyUsers(ctx, p.ID)
	must(t, err)
	same(t, "policy users", ids, []string{"u2"})

	for _, ak := range []string{"AK-u2", "TK-u2"} {
		_, err := s.GetAccessKey(ctx, ak)
		must(t, err)
	}
	_, err = s.GetToken(ctx, "t-u2")
	must(t, err)
	keys, n, err := s.ListAccessKeys(ctx, meta.AccessKeyFilter{IncludeTemporary: true}, meta.ListOptions{})
	must(t, err)
	same(t, "keys left", len(keys), 2)
	same(t, "keys left total", n, 2)
	// The policy survives and, once detached from u2, can be deleted.
	must(t, s.DetachPolicy(ctx, "u2", p.ID))
	must(t, s.DeletePolicy(ctx, p.ID))
}

func testConcurrentCreateUsers(t *testing.T, s meta.Store) {
	ctx := t.Context()
	const n = 20
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint("u", i)
			err := s.CreateUser(ctx, user(id, "name-"+id))
			if err == nil {
				err = s.CreateAccessKey(ctx, permanentKey("AK-"+id, id))
			}
			if err == nil {
				_, err = s.GetUser(ctx, id)
			}
			errc <- err
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		must(t, err)
	}
	_, total, err := s.ListUsers(ctx, meta.ListOptions{})
	must(t, err)
	same(t, "users", total, n)
	_, total, err = s.ListAccessKeys(ctx, meta.AccessKeyFilter{}, meta.ListOptions{})
	must(t, err)
	same(t, "keys", total, n)
}

func testConcurrentSameName(t *testing.T, s meta.Store) {
	ctx := t.Context()
	const n = 20
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errc <- s.CreateUser(ctx, user(fmt.Sprint("u", i), "contested")) })
	}
	wg.Wait()
	close(errc)
	ok := 0
	for err := range errc {
		if err == nil {
			ok++
			continue
		}
		wantKind(t, "losing writer", err, errs.Exists)
	}
	same(t, "winners", ok, 1)
}

func testAccessKeyRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1")
	perm := permanentKey("AKPERM", "u1")
	temp := temporaryKey("AKTEMP", "u1", base().Add(90*time.Minute))
	bare := &meta.AccessKey{AccessKey: "AKBARE", UserID: "u1", Status: meta.KeyDisabled}
	for _, k := range []*meta.AccessKey{perm, temp, bare} {
		must(t, s.CreateAccessKey(ctx, k))
	}
	for _, want := range []*meta.AccessKey{perm, temp} {
		got, err := s.GetAccessKey(ctx, want.AccessKey)
		must(t, err)
		same(t, "GetAccessKey", *got, norm(*want))
	}
	got, err := s.GetAccessKey(ctx, bare.AccessKey)
	must(t, err)
	if len(got.SecretEnc) != 0 || !got.CreateTime.IsZero() || !got.ExpiresAt.IsZero() || got.Status != meta.KeyDisabled {
		t.Fatalf("bare key: got %+v", got)
	}
}

func testAccessKeyErrors(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1")
	must(t, s.CreateAccessKey(ctx, permanentKey("AK1", "u1")))
	wantKind(t, "duplicate", s.CreateAccessKey(ctx, permanentKey("AK1", "u1")), errs.Exists)
	wantKind(t, "missing user", s.CreateAccessKey(ctx, permanentKey("AK2", "nobody")), errs.NotFound)
	wantKind(t, "empty access key", s.CreateAccessKey(ctx, permanentKey("", "u1")), errs.Invalid)
	wantKind(t, "empty user", s.CreateAccessKey(ctx, permanentKey("AK3", "")), errs.Invalid)
	bad := permanentKey("AK4", "u1")
	bad.Status = "paused"
	wantKind(t, "unknown status", s.CreateAccessKey(ctx, bad), errs.Invalid)
	bad.Status = ""
	wantKind(t, "empty status", s.CreateAccessKey(ctx, bad), errs.Invalid)

	_, err := s.GetAccessKey(ctx, "AK2")
	wantKind(t, "GetAccessKey", err, errs.NotFound)
	wantKind(t, "SetAccessKeyStatus", s.SetAccessKeyStatus(ctx, "AK2", meta.KeyDisabled), errs.NotFound)
	wantKind(t, "SetAccessKeyStatus bad", s.SetAccessKeyStatus(ctx, "AK1", "paused"), errs.Invalid)
	wantKind(t, "DeleteAccessKey", s.DeleteAccessKey(ctx, "AK2"), errs.NotFound)
	_, n, err := s.ListAccessKeys(ctx, meta.AccessKeyFilter{IncludeTemporary: true}, meta.ListOptions{})
	must(t, err)
	same(t, "keys stored", n, 1)
}

func testAccessKeyStatusAndDelete(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1")
	must(t, s.CreateAccessKey(ctx, permanentKey("AK1", "u1")))
	must(t, s.CreateAccessKey(ctx, permanentKey("AK2", "u1")))
	status := func(ak string) meta.KeyStatus {
		t.Helper()
		k, err := s.GetAccessKey(ctx, ak)
		must(t, err)
		return k.Status
	}
	must(t, s.SetAccessKeyStatus(ctx, "AK1", meta.KeyDisabled))
	same(t, "disabled", status("AK1"), meta.KeyDisabled)
	same(t, "other key", status("AK2"), meta.KeyActive)
	must(t, s.SetAccessKeyStatus(ctx, "AK1", meta.KeyDisabled))
	must(t, s.SetAccessKeyStatus(ctx, "AK1", meta.KeyActive))
	same(t, "enabled again", status("AK1"), meta.KeyActive)

	must(t, s.DeleteAccessKey(ctx, "AK1"))
	_, err := s.GetAccessKey(ctx, "AK1")
	wantKind(t, "deleted key", err, errs.NotFound)
	wantKind(t, "delete twice", s.DeleteAccessKey(ctx, "AK1"), errs.NotFound)
	same(t, "other key", status("AK2"), meta.KeyActive)
}

func testAccessKeyList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1", "u2")
	b := base()
	at := func(k *meta.AccessKey, ct time.Time) *meta.AccessKey { k.CreateTime = ct; return k }
	keys := []*meta.AccessKey{ // in the documented order: creation time, then access key
		at(permanentKey("AK-ZERO", "u2"), time.Time{}),
		at(permanentKey("AK-B", "u1"), b.Add(-time.Minute)),
		at(permanentKey("AK-A", "u1"), b),
		at(temporaryKey("AK-C", "u1", b.Add(time.Hour)), b),
		at(permanentKey("AK-D", "u2"), b),
		at(permanentKey("AK-E", "u1"), b.Add(time.Millisecond)),
	}
	for _, i := range rand.Perm(len(keys)) {
		must(t, s.CreateAccessKey(ctx, keys[i]))
	}
	pick := func(ids ...string) []string { return append([]string{}, ids...) }
	list := func(f meta.AccessKeyFilter, opts meta.ListOptions) ([]string, int) {
		t.Helper()
		got, n, err := s.ListAccessKeys(ctx, f, opts)
		must(t, err)
		out := []string{}
		for _, k := range got {
			out = append(out, k.AccessKey)
		}
		return out, n
	}
	for _, tc := range []struct {
		f     meta.AccessKeyFilter
		opts  meta.ListOptions
		want  []string
		total int
	}{
		{meta.AccessKeyFilter{}, meta.ListOptions{}, pick("AK-ZERO", "AK-B", "AK-A", "AK-D", "AK-E"), 5},
		{meta.AccessKeyFilter{IncludeTemporary: true}, meta.ListOptions{}, pick("AK-ZERO", "AK-B", "AK-A", "AK-C", "AK-D", "AK-E"), 6},
		{meta.AccessKeyFilter{UserID: "u1"}, meta.ListOptions{}, pick("AK-B", "AK-A", "AK-E"), 3},
		{meta.AccessKeyFilter{UserID: "u1", IncludeTemporary: true}, meta.ListOptions{}, pick("AK-B", "AK-A", "AK-C", "AK-E"), 4},
		{meta.AccessKeyFilter{UserID: "nobody", IncludeTemporary: true}, meta.ListOptions{}, pick(), 0},
		{meta.AccessKeyFilter{IncludeTemporary: true}, meta.ListOptions{Offset: 2, Limit: 2}, pick("AK-A", "AK-C"), 6},
		{meta.AccessKeyFilter{IncludeTemporary: true}, meta.ListOptions{Offset: 5, Limit: 2}, pick("AK-E"), 6},
		{meta.AccessKeyFilter{UserID: "u1"}, meta.ListOptions{Offset: 1, Limit: 1}, pick("AK-A"), 3},
		{meta.AccessKeyFilter{UserID: "u2"}, meta.ListOptions{Offset: 9}, pick(), 2},
	} {
		got, n := list(tc.f, tc.opts)
		same(t, fmt.Sprintf("keys for %+v %+v", tc.f, tc.opts), got, tc.want)
		same(t, fmt.Sprintf("total for %+v %+v", tc.f, tc.opts), n, tc.total)
	}
	got, _, err := s.ListAccessKeys(ctx, meta.AccessKeyFilter{IncludeTemporary: true}, meta.ListOptions{Offset: 3, Limit: 1})
	must(t, err)
	same(t, "listed key", vals(got), []meta.AccessKey{norm(*keys[3])})
}

func testDeleteExpiredAccessKeys(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1", "u2")
	now := base()
	permExpired := permanentKey("PERM-PAST", "u1") // permanent keys are never touched
	permExpired.ExpiresAt = now.Add(-time.Hour)
	for _, k := range []*meta.AccessKey{
		permExpired,
		permanentKey("PERM", "u1"),
		temporaryKey("TEMP-HOUR-AGO", "u1", now.Add(-time.Hour)),
		temporaryKey("TEMP-MS-AGO", "u2", now.Add(-time.Millisecond)),
		temporaryKey("TEMP-NOW", "u1", now),
		temporaryKey("TEMP-LATER", "u2", now.Add(time.Hour)),
		temporaryKey("TEMP-NO-EXPIRY", "u1", time.Time{}),
	} {
		must(t, s.CreateAccessKey(ctx, k))
	}
	n, err := s.DeleteExpiredAccessKeys(ctx, time.Time{})
	must(t, err)
	same(t, "removed before the zero time", n, 0)
	n, err = s.DeleteExpiredAccessKeys(ctx, now)
	must(t, err)
	same(t, "removed", n, 2)
	n, err = s.DeleteExpiredAccessKeys(ctx, now)
	must(t, err)
	same(t, "removed again", n, 0)
	got, _, err := s.ListAccessKeys(ctx, meta.AccessKeyFilter{IncludeTemporary: true}, meta.ListOptions{})
	must(t, err)
	var left []string
	for _, k := range got {
		left = append(left, k.AccessKey)
	}
	slices.Sort(left)
	same(t, "keys left", left, []string{"PERM", "PERM-PAST", "TEMP-LATER", "TEMP-NO-EXPIRY", "TEMP-NOW"})
}

func testTokenRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1")
	full := token("t1", "u1", "hash-1", base(), base().Add(12*time.Hour))
	full.Revoked = true
	bare := &meta.Token{ID: "t2", UserID: "u1", Hash: "hash-2"}
	for _, tok := range []*meta.Token{full, bare} {
		must(t, s.CreateToken(ctx, tok))
		got, err := s.GetToken(ctx, tok.ID)
		must(t, err)
		same(t, "GetToken", *got, norm(*tok))
		got, err = s.GetTokenByHash(ctx, tok.Hash)
		must(t, err)
		same(t, "GetTokenByHash", *got, norm(*tok))
	}
}

func testTokenErrors(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1")
	b := base()
	must(t, s.CreateToken(ctx, token("t1", "u1", "h1", b, b)))
	wantKind(t, "duplicate id", s.CreateToken(ctx, token("t1", "u1", "h2", b, b)), errs.Exists)
	wantKind(t, "duplicate hash", s.CreateToken(ctx, token("t2", "u1", "h1", b, b)), errs.Exists)
	wantKind(t, "missing user", s.CreateToken(ctx, token("t3", "nobody", "h3", b, b)), errs.NotFound)
	wantKind(t, "empty id", s.CreateToken(ctx, token("", "u1", "h4", b, b)), errs.Invalid)
	wantKind(t, "empty user", s.CreateToken(ctx, token("t5", "", "h5", b, b)), errs.Invalid)
	wantKind(t, "empty hash", s.CreateToken(ctx, token("t6", "u1", "", b, b)), errs.Invalid)
	_, err := s.GetToken(ctx, "t3")
	wantKind(t, "GetToken", err, errs.NotFound)
	_, err = s.GetTokenByHash(ctx, "h3")
	wantKind(t, "GetTokenByHash", err, errs.NotFound)
	wantKind(t, "RevokeToken", s.RevokeToken(ctx, "t3"), errs.NotFound)
	_, n, err := s.ListTokens(ctx, "u1", meta.ListOptions{})
	must(t, err)
	same(t, "tokens stored", n, 1)
}

func testTokenList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1", "u2")
	b := base()
	// Newest first, equal times by id descending, the zero time last.
	want := []string{"t5", "t4", "t3b", "t3", "t2", "t1", "t0", "t-zero"}
	created := map[string]time.Time{"t-zero": {}, "t3b": b.Add(3 * time.Minute)}
	for i := range 6 {
		created[fmt.Sprint("t", i)] = b.Add(time.Duration(i) * time.Minute)
	}
	for _, i := range rand.Perm(len(want)) {
		id := want[i]
		must(t, s.CreateToken(ctx, token(id, "u1", "h-"+id, created[id], b.Add(time.Hour))))
	}
	must(t, s.CreateToken(ctx, token("other", "u2", "h-other", b, b.Add(time.Hour))))

	list := func(user string, opts meta.ListOptions) ([]string, int) {
		t.Helper()
		got, n, err := s.ListTokens(ctx, user, opts)
		must(t, err)
		out := []string{}
		for _, tok := range got {
			out = append(out, tok.ID)
		}
		return out, n
	}
	got, n := list("u1", meta.ListOptions{})
	same(t, "all tokens", got, want)
	same(t, "total", n, len(want))
	got, n = list("u1", meta.ListOptions{Offset: 2, Limit: 3})
	same(t, "page", got, want[2:5])
	same(t, "page total", n, len(want))
	got, n = list("u1", meta.ListOptions{Offset: 100})
	same(t, "past the end", got, []string{})
	same(t, "past the end total", n, len(want))
	got, n = list("u2", meta.ListOptions{})
	same(t, "other user", got, []string{"other"})
	same(t, "other user total", n, 1)
	got, n = list("nobody", meta.ListOptions{})
	same(t, "unknown user", got, []string{})
	same(t, "unknown user total", n, 0)
}

func testRevokeToken(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1")
	b := base()
	must(t, s.CreateToken(ctx, token("t1", "u1", "h1", b, b.Add(time.Hour))))
	must(t, s.CreateToken(ctx, token("t2", "u1", "h2", b, b.Add(time.Hour))))
	must(t, s.RevokeToken(ctx, "t1"))
	must(t, s.RevokeToken(ctx, "t1"))
	got, err := s.GetTokenByHash(ctx, "h1")
	must(t, err)
	same(t, "revoked", got.Revoked, true)
	got, err = s.GetToken(ctx, "t2")
	must(t, err)
	same(t, "other token revoked", got.Revoked, false)
}

func testDeleteExpiredTokens(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1", "u2")
	now := base()
	revokedPast := token("revoked-past", "u1", "h-rp", now, now.Add(-time.Minute))
	revokedPast.Revoked = true
	revokedLater := token("revoked-later", "u2", "h-rl", now, now.Add(time.Minute))
	revokedLater.Revoked = true
	for _, tok := range []*meta.Token{
		token("past", "u1", "h-past", now, now.Add(-time.Hour)),
		token("ms-ago", "u2", "h-ms", now, now.Add(-time.Millisecond)),
		token("now", "u1", "h-now", now, now),
		token("later", "u2", "h-later", now, now.Add(time.Hour)),
		token("never", "u1", "h-never", now, time.Time{}),
		revokedPast,
		revokedLater,
	} {
		must(t, s.CreateToken(ctx, tok))
	}
	n, err := s.DeleteExpiredTokens(ctx, time.Time{})
	must(t, err)
	same(t, "removed before the zero time", n, 0)
	n, err = s.DeleteExpiredTokens(ctx, now)
	must(t, err)
	same(t, "removed", n, 3)
	n, err = s.DeleteExpiredTokens(ctx, now)
	must(t, err)
	same(t, "removed again", n, 0)
	var left []string
	for _, u := range []string{"u1", "u2"} {
		got, _, err := s.ListTokens(ctx, u, meta.ListOptions{})
		must(t, err)
		for _, tok := range got {
			left = append(left, tok.ID)
		}
	}
	slices.Sort(left)
	same(t, "tokens left", left, []string{"later", "never", "now", "revoked-later"})
}

func testPolicyRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	full := policy("p1", "readers")
	bare := &meta.Policy{ID: "p2", Name: "lecteurs-é"}
	for _, p := range []*meta.Policy{full, bare} {
		must(t, s.CreatePolicy(ctx, p))
		got, err := s.GetPolicy(ctx, p.ID)
		must(t, err)
		same(t, "GetPolicy", *got, norm(*p))
		got, err = s.GetPolicyByName(ctx, p.Name)
		must(t, err)
		same(t, "GetPolicyByName", *got, norm(*p))
	}
}

func testPolicyErrors(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreatePolicy(ctx, policy("p1", "readers")))
	wantKind(t, "same name", s.CreatePolicy(ctx, policy("p2", "readers")), errs.Exists)
	wantKind(t, "same id", s.CreatePolicy(ctx, policy("p1", "writers")), errs.Exists)
	wantKind(t, "empty id", s.CreatePolicy(ctx, policy("", "writers")), errs.Invalid)
	wantKind(t, "empty name", s.CreatePolicy(ctx, policy("p3", "")), errs.Invalid)
	_, err := s.GetPolicy(ctx, "p2")
	wantKind(t, "GetPolicy", err, errs.NotFound)
	_, err = s.GetPolicyByName(ctx, "writers")
	wantKind(t, "GetPolicyByName", err, errs.NotFound)
	wantKind(t, "DeletePolicy", s.DeletePolicy(ctx, "p2"), errs.NotFound)
	must(t, s.DeletePolicy(ctx, "p1"))
	wantKind(t, "DeletePolicy twice", s.DeletePolicy(ctx, "p1"), errs.NotFound)
	_, err = s.GetPolicy(ctx, "p1")
	wantKind(t, "GetPolicy after delete", err, errs.NotFound)
}

func testPolicyList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	names := []string{"Admins", "admins", "readers", "writers", "ops", "éditeurs", "auditors"}
	for i, name := range names {
		must(t, s.CreatePolicy(ctx, policy(fmt.Sprint("p", i), name)))
	}
	slices.Sort(names)
	list := func(opts meta.ListOptions) []string {
		t.Helper()
		got, n, err := s.ListPolicies(ctx, opts)
		must(t, err)
		same(t, "total", n, len(names))
		out := []string{}
		for _, p := range got {
			out = append(out, p.Name)
		}
		return out
	}
	same(t, "all", list(meta.ListOptions{}), names)
	same(t, "page", list(meta.ListOptions{Offset: 2, Limit: 3}), names[2:5])
	same(t, "past the end", list(meta.ListOptions{Offset: len(names)}), []string{})
}

func testPolicyAttach(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1", "u2", "u3")
	pz := policy("p1", "zeta")
	pa := policy("p2", "alpha")
	must(t, s.CreatePolicy(ctx, pz))
	must(t, s.CreatePolicy(ctx, pa))

	must(t, s.AttachPolicy(ctx, "u1", "p1"))
	must(t, s.AttachPolicy(ctx, "u1", "p1")) // twice is fine
	must(t, s.AttachPolicy(ctx, "u1", "p2"))
	must(t, s.AttachPolicy(ctx, "u2", "p1"))
	wantKind(t, "missing user", s.AttachPolicy(ctx, "nobody", "p1"), errs.NotFound)
	wantKind(t, "missing policy", s.AttachPolicy(ctx, "u1", "nothing"), errs.NotFound)

	got, err := s.UserPolicies(ctx, "u1")
	must(t, err)
	same(t, "u1 policies", vals(got), []meta.Policy{norm(*pa), norm(*pz)})
	got, err = s.UserPolicies(ctx, "u3")
	must(t, err)
	same(t, "u3 policies", vals(got), []meta.Policy{})
	got, err = s.UserPolicies(ctx, "nobody")
	must(t, err)
	same(t, "unknown user policies", len(got), 0)
	ids, err := s.PolicyUsers(ctx, "p1")
	must(t, err)
	same(t, "p1 users", ids, []string{"u1", "u2"})
	ids, err = s.PolicyUsers(ctx, "nothing")
	must(t, err)
	same(t, "unknown policy users", len(ids), 0)

	must(t, s.DetachPolicy(ctx, "u1", "p1"))
	wantKind(t, "detach twice", s.DetachPolicy(ctx, "u1", "p1"), errs.NotFound)
	wantKind(t, "detach never attached", s.DetachPolicy(ctx, "u3", "p1"), errs.NotFound)
	wantKind(t, "detach unknown", s.DetachPolicy(ctx, "nobody", "nothing"), errs.NotFound)
	ids, err = s.PolicyUsers(ctx, "p1")
	must(t, err)
	same(t, "p1 users after detach", ids, []string{"u2"})
	got, err = s.UserPolicies(ctx, "u1")
	must(t, err)
	same(t, "u1 policies after detach", vals(got), []meta.Policy{norm(*pa)})
}

func testDeletePolicyAttached(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1", "u2")
	must(t, s.CreatePolicy(ctx, policy("p1", "readers")))
	must(t, s.AttachPolicy(ctx, "u1", "p1"))
	must(t, s.AttachPolicy(ctx, "u2", "p1"))
	wantKind(t, "attached to two", s.DeletePolicy(ctx, "p1"), errs.Conflict)
	must(t, s.DetachPolicy(ctx, "u1", "p1"))
	wantKind(t, "attached to one", s.DeletePolicy(ctx, "p1"), errs.Conflict)
	_, err := s.GetPolicy(ctx, "p1")
	must(t, err)
	ids, err := s.PolicyUsers(ctx, "p1")
	must(t, err)
	same(t, "users after refused delete", ids, []string{"u2"})
	must(t, s.DetachPolicy(ctx, "u2", "p1"))
	must(t, s.DeletePolicy(ctx, "p1"))
	_, err = s.GetPolicy(ctx, "p1")
	wantKind(t, "deleted", err, errs.NotFound)
}

func testSettings(t *testing.T, s meta.Store) {
	ctx := t.Context()
	_, err := s.GetSetting(ctx, "admin-key")
	wantKind(t, "unset", err, errs.NotFound)
	wantKind(t, "empty key", s.PutSetting(ctx, "", "v"), errs.Invalid)
	must(t, s.PutSetting(ctx, "admin-key", "AK1"))
	must(t, s.PutSetting(ctx, "other", "x"))
	must(t, s.PutSetting(ctx, "admin-key", "AK2"))
	for key, want := range map[string]string{"admin-key": "AK2", "other": "x"} {
		v, err := s.GetSetting(ctx, key)
		must(t, err)
		same(t, key, v, want)
	}
	for _, want := range []string{"", "ünïcødé ✓\nsecond line\t'quoted' \"double\" ?"} {
		must(t, s.PutSetting(ctx, "odd", want))
		v, err := s.GetSetting(ctx, "odd")
		must(t, err)
		same(t, "odd value", v, want)
	}
}
