package obs

import (
	"strings"
	"sync"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
)

func TestValidateTags(t *testing.T) {
	many := func(n int) []Tag {
		out := make([]Tag, n)
		for i := range out {
			out[i] = Tag{Key: "k" + strings.Repeat("x", i), Value: "v"}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		tags []Tag
		max  int
		code errs.Code // "" for valid
	}{
		{"none", nil, MaxObjectTags, ""},
		{"one", []Tag{{"project", "atelier"}}, MaxObjectTags, ""},
		{"empty value", []Tag{{"k", ""}}, MaxObjectTags, ""},
		{"allowed punctuation", []Tag{{"a+b-c=d.e_f:g/h@i j", "+-=._:/@ x"}}, MaxObjectTags, ""},
		{"unicode letters", []Tag{{"中文", "ünïcødé"}}, MaxObjectTags, ""},
		{"ten on an object", many(10), MaxObjectTags, ""},
		{"eleven on an object", many(11), MaxObjectTags, CodeTooManyTags},
		{"fifty on a bucket", many(50), MaxBucketTags, ""},
		{"fifty-one on a bucket", many(51), MaxBucketTags, CodeTooManyTags},
		{"key of 128 characters", []Tag{{strings.Repeat("é", 128), "v"}}, MaxObjectTags, ""},
		{"key of 129 characters", []Tag{{strings.Repeat("k", 129), "v"}}, MaxObjectTags, CodeInvalidTag},
		{"value of 256 characters", []Tag{{"k", strings.Repeat("é", 256)}}, MaxObjectTags, ""},
		{"value of 257 characters", []Tag{{"k", strings.Repeat("v", 257)}}, MaxObjectTags, CodeInvalidTag},
		{"empty key", []Tag{{"", "v"}}, MaxObjectTags, CodeInvalidTag},
		{"duplicate key", []Tag{{"k", "1"}, {"k", "2"}}, MaxObjectTags, CodeInvalidTag},
		{"keys differ in case", []Tag{{"k", "1"}, {"K", "2"}}, MaxObjectTags, ""},
		{"aws: prefix", []Tag{{"aws:cloudformation:stack", "v"}}, MaxObjectTags, CodeInvalidTag},
		{"AWS: prefix", []Tag{{"AWS:x", "v"}}, MaxBucketTags, CodeInvalidTag},
		{"aws without colon", []Tag{{"awsome", "v"}}, MaxObjectTags, ""},
		{"comma in value", []Tag{{"k", "a,b"}}, MaxObjectTags, CodeInvalidTag},
		{"star in key", []Tag{{"k*", "v"}}, MaxObjectTags, CodeInvalidTag},
		{"bad UTF-8", []Tag{{"k", "\xff"}}, MaxObjectTags, CodeInvalidTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTags(tc.tags, tc.max)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, tc.code)
		})
	}
}

func TestParseTagging(t *testing.T) {
	for _, tc := range []struct {
		h    string
		want []Tag
		bad  bool
	}{
		{"", nil, false},
		{"a=1", []Tag{{"a", "1"}}, false},
		{"a=1&b=2", []Tag{{"a", "1"}, {"b", "2"}}, false},
		{"a", []Tag{{"a", ""}}, false},
		{"a=&b", []Tag{{"a", ""}, {"b", ""}}, false},
		{"k%20x=v+w", []Tag{{"k x", "v w"}}, false},
		{"%E4%B8%AD=%C3%BC", []Tag{{"中", "ü"}}, false},
		{"a=1=2", []Tag{{"a", "1=2"}}, false},
		{"a=1&&b=2", []Tag{{"a", "1"}, {"b", "2"}}, false},
		{"a=1&a=2", nil, true},
		{"a=%zz", nil, true},
		{"%ff=1", nil, true},
	} {
		got, err := ParseTagging(tc.h)
		if tc.bad {
			wantCode(t, err, CodeBadTagging)
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.h, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%q: got %v, want %v", tc.h, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%q: got %v, want %v", tc.h, got, tc.want)
			}
		}
	}
}

func FuzzParseTagging(f *testing.F) {
	for _, s := range []string{"", "a=1", "a=1&b=2", "a", "k%20x=v+w", "a=1&a=2", "%zz", "=&=", "%E4%B8%AD=%C3%BC"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tags, err := ParseTagging(h)
		if err != nil {
			if errs.CodeOf(err) != CodeBadTagging {
				t.Fatalf("%q: error with code %s: %v", h, errs.CodeOf(err), err)
			}
			return
		}
		seen := map[string]bool{}
		for _, tg := range tags {
			if seen[tg.Key] {
				t.Fatalf("%q: key %q twice", h, tg.Key)
			}
			seen[tg.Key] = true
		}
		// What is accepted round-trips through EncodeTagging.
		again, err := ParseTagging(EncodeTagging(tags))
		if err != nil {
			t.Fatalf("%q: the encoding of %v does not parse: %v", h, tags, err)
		}
		if len(again) != len(tags) {
			t.Fatalf("%q: %v round-trips as %v", h, tags, again)
		}
		for i := range tags {
			if again[i] != tags[i] {
				t.Fatalf("%q: %v round-trips as %v", h, tags, again)
			}
		}
		_ = ValidateTags(tags, MaxObjectTags) // must not panic
	})
}

func TestObjectTagging(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	tags := []Tag{{"project", "atelier"}, {"stage", "dev"}}
	o, err := e.svc.PutObject(e.ctx, e.alice, "data", "k", strings.NewReader("abc"), PutOptions{Size: 3, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetObjectTagging(e.ctx, e.alice, "data", "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != tags[0] || got[1] != tags[1] {
		t.Fatalf("tags %v", got)
	}
	if err := e.svc.PutObjectTagging(e.ctx, e.alice, "data", "k", []Tag{{"stage", "prod"}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.HeadObject(e.ctx, e.alice, "data", "k", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Object.ETag != o.ETag || !res.Object.LastModified.Equal(o.LastModified) || res.Object.Tags["stage"] != "prod" || len(res.Object.Tags) != 1 {
		t.Fatalf("after PutObjectTagging: %+v", res.Object)
	}
	if err := e.svc.DeleteObjectTagging(e.ctx, e.alice, "data", "k"); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.svc.GetObjectTagging(e.ctx, e.alice, "data", "k"); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
	_, err = e.svc.GetObjectTagging(e.ctx, e.alice, "data", "missing")
	wantCode(t, err, CodeNoSuchKey)
	err = e.svc.PutObjectTagging(e.ctx, e.alice, "data", "k", []Tag{{"aws:x", "v"}})
	wantCode(t, err, CodeInvalidTag)
	_, err = e.svc.GetObjectTagging(e.ctx, e.bob, "data", "k")
	wantCode(t, err, CodeAccessDenied)
	// Bob learns nothing of a missing key he may not read.
	_, err = e.svc.GetObjectTagging(e.ctx, e.bob, "data", "missing")
	wantCode(t, err, CodeAccessDenied)

	// Copies keep the source's tags, or take new ones.
	if err := e.svc.PutObjectTagging(e.ctx, e.alice, "data", "k", tags); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CopyObject(e.ctx, e.alice, "data", "k", "data", "copy", CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.svc.GetObjectTagging(e.ctx, e.alice, "data", "copy"); len(got) != 2 {
		t.Fatalf("copied tags %v", got)
	}
	if _, err := e.svc.CopyObject(e.ctx, e.alice, "data", "k", "data", "copy", CopyOptions{TaggingDirective: TaggingReplace, Tags: []Tag{{"new", "1"}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.svc.GetObjectTagging(e.ctx, e.alice, "data", "copy"); len(got) != 1 || got[0] != (Tag{"new", "1"}) {
		t.Fatalf("replaced tags %v", got)
	}
	// Copying onto itself with new tags only is allowed.
	if _, err := e.svc.CopyObject(e.ctx, e.alice, "data", "k", "data", "k", CopyOptions{TaggingDirective: TaggingReplace}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.CopyObject(e.ctx, e.alice, "data", "k", "data", "c2", CopyOptions{TaggingDirective: "MOVE"})
	wantCode(t, err, CodeBadDirective)
}

func TestBucketTagging(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	_, err := e.svc.GetBucketTagging(e.ctx, e.alice, "data")
	wantCode(t, err, CodeNoSuchTagSet)
	tags := []Tag{{"team", "ml"}, {"cost-center", "42"}}
	if err := e.svc.PutBucketTagging(e.ctx, e.alice, "data", tags); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetBucketTagging(e.ctx, e.alice, "data")
	if err != nil || len(got) != 2 || got[0] != tags[0] || got[1] != tags[1] {
		t.Fatalf("got %v, %v", got, err)
	}
	wantCode(t, e.svc.PutBucketTagging(e.ctx, e.bob, "data", tags), CodeAccessDenied)
	if err := e.svc.DeleteBucketTagging(e.ctx, e.alice, "data"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetBucketTagging(e.ctx, e.alice, "data")
	wantCode(t, err, CodeNoSuchTagSet)
}

// TestExistingObjectTagCondition grants bob reads of alice's objects only
// where they are tagged public=yes, and tag writes only with allowed keys.
func TestExistingObjectTagCondition(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	doc := `{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Principal":{"AWS":["user/bob"]},"Action":["s3:GetObject","s3:GetObjectTagging"],
	  "Resource":"arn:aws:s3:::data/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/public":"yes"}}},
	 {"Effect":"Allow","Principal":{"AWS":["user/bob"]},"Action":["s3:PutObject","s3:PutObjectTagging"],
	  "Resource":"arn:aws:s3:::data/*","Condition":{"StringEquals":{"s3:RequestObjectTag/owner":"bob"}}}]}`
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.PutObject(e.ctx, e.alice, "data", "open", strings.NewReader("o"), PutOptions{Size: 1, Tags: []Tag{{"public", "yes"}}}); err != nil {
		t.Fatal(err)
	}
	e.put(e.alice, "data", "closed", "c")
	if got := e.get(e.bob, "data", "open", GetOptions{}); got != "o" {
		t.Fatalf("bob read %q", got)
	}
	_, err := e.svc.GetObject(e.ctx, e.bob, "data", "closed", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.HeadObject(e.ctx, e.bob, "data", "closed", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	if _, err := e.svc.GetObjectTagging(e.ctx, e.bob, "data", "open"); err != nil {
		t.Fatal(err)
	}
	// RequestObjectTag: bob may write only objects he tags owner=bob.
	_, err = e.svc.PutObject(e.ctx, e.bob, "data", "b1", strings.NewReader("b"), PutOptions{Size: 1})
	wantCode(t, err, CodeAccessDenied)
	if _, err := e.svc.PutObject(e.ctx, e.bob, "data", "b1", strings.NewReader("b"), PutOptions{Size: 1, Tags: []Tag{{"owner", "bob"}}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.PutObjectTagging(e.ctx, e.bob, "data", "b1", []Tag{{"owner", "eve"}}), CodeAccessDenied)
	if err := e.svc.PutObjectTagging(e.ctx, e.bob, "data", "b1", []Tag{{"owner", "bob"}, {"public", "yes"}}); err != nil {
		t.Fatal(err)
	}
	// Retagging alice's closed object public lets bob read it.
	if err := e.svc.PutObjectTagging(e.ctx, e.alice, "data", "closed", []Tag{{"public", "yes"}}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(e.bob, "data", "closed", GetOptions{}); got != "c" {
		t.Fatalf("bob read %q", got)
	}
	// A copy's source is read under the same condition.
	_, err = e.svc.CopyObject(e.ctx, e.bob, "data", "b1", "data", "b2", CopyOptions{TaggingDirective: TaggingReplace, Tags: []Tag{{"owner", "bob"}}})
	if err != nil {
		t.Fatal(err)
	}
}

func TestConditionalPut(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	put := func(key, body string, c WriteConditions) error {
		_, err := e.svc.PutObject(e.ctx, e.alice, "data", key, strings.NewReader(body), PutOptions{Size: int64(len(body)), Conditions: c})
		return err
	}
	if err := put("k", "one", WriteConditions{IfNoneMatch: "*"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, put("k", "two", WriteConditions{IfNoneMatch: "*"}), CodePreconditionFailed)
	wantCode(t, put("k", "two", WriteConditions{IfMatch: `"0123"`}), CodePreconditionFailed)
	wantCode(t, put("missing", "two", WriteConditions{IfMatch: `"0123"`}), CodeNoSuchKey)
	wantCode(t, put("k", "two", WriteConditions{IfNoneMatch: `"abc"`}), CodeBadWriteCondition)
	wantCode(t, put("k", "two", WriteConditions{IfMatch: "*"}), CodeBadWriteCondition)
	if got := e.get(e.alice, "data", "k", GetOptions{}); got != "one" {
		t.Fatalf("object is %q", got)
	}
	if err := put("k", "two", WriteConditions{IfMatch: `"` + md5hex([]byte("one")) + `"`}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(e.alice, "data", "k", GetOptions{}); got != "two" {
		t.Fatalf("object is %q", got)
	}
	e.noLeaks()
}

// TestConditionalPutRace: of many create-only PUTs of one key, exactly one
// succeeds; the others are PreconditionFailed (the key was taken when they
// began) or ConditionalRequestConflict (when they committed), and no blob
// is left behind.
func TestConditionalPutRace(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	for round := range 5 {
		key := "race" + strings.Repeat("x", round)
		const n = 12
		errc := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				body := strings.Repeat("b", i+1)
				_, errc[i] = e.svc.PutObject(e.ctx, e.alice, "data", key, strings.NewReader(body), PutOptions{Size: int64(len(body)), Conditions: WriteConditions{IfNoneMatch: "*"}})
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errc {
			switch {
			case err == nil:
				won++
			case errs.CodeOf(err) == CodePreconditionFailed, errs.CodeOf(err) == CodeConditionalConflict:
			default:
				t.Fatalf("unexpected error: %v", err)
			}
		}
		if won != 1 {
			t.Fatalf("%s: %d create-only puts succeeded", key, won)
		}
	}
	e.noLeaks()
}

func TestConditionalComplete(t *testing.T) {
	e := newEnv(t, withMinPart(1))
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "k", "old")
	u, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "k", UploadOptions{Tags: []Tag{{"from", "mpu"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.svc.UploadPart(e.ctx, e.alice, "data", "k", u.ID, 1, strings.NewReader("part"), PartOptions{Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	parts := []CompletedPart{{Number: 1, ETag: p.Blob.ETag}}
	_, err = e.svc.CompleteMultipartUploadIf(e.ctx, e.alice, "data", "k", u.ID, parts, WriteConditions{IfNoneMatch: "*"})
	wantCode(t, err, CodePreconditionFailed)
	_, err = e.svc.CompleteMultipartUploadIf(e.ctx, e.alice, "data", "k", u.ID, parts, WriteConditions{IfMatch: "deadbeef"})
	wantCode(t, err, CodePreconditionFailed)
	// The upload is still there: complete it with the right ETag.
	o, err := e.svc.CompleteMultipartUploadIf(e.ctx, e.alice, "data", "k", u.ID, parts, WriteConditions{IfMatch: md5hex([]byte("old"))})
	if err != nil {
		t.Fatal(err)
	}
	if o.Tags["from"] != "mpu" {
		t.Fatalf("tags %v", o.Tags)
	}
	if got := e.get(e.alice, "data", "k", GetOptions{}); got != "part" {
		t.Fatalf("object is %q", got)
	}
	e.noLeaks()
}
