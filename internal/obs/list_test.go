package obs

import (
	"context"
	"slices"
	"strings"
	"testing"
)

type namer map[string]string

func (n namer) UserName(_ context.Context, id string) string { return n[id] }

func TestListObjectsPaging(t *testing.T) {
	e := newEnv(t, func(o *Options, _ *env) { o.Users = namer{"id-alice": "alice"} })
	e.mkBucket(e.alice, "data")
	for _, k := range []string{"a/1", "a/2", "b", "c/x/1", "c/y", "d", "e/", "f"} {
		e.put(e.alice, "data", k, k)
	}
	// all pages the listing yields, as "key" and "prefix/" entries.
	walk := func(o ListOptions) ([]string, int) {
		t.Helper()
		var got []string
		pages := 0
		for {
			res, err := e.svc.ListObjects(e.ctx, e.alice, "data", o)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if res.KeyCount != len(res.Objects)+len(res.CommonPrefixes) || res.KeyCount > o.MaxKeys {
				t.Fatalf("page of %d with KeyCount %d", len(res.Objects)+len(res.CommonPrefixes), res.KeyCount)
			}
			// Merge objects and prefixes in key order, as S3 renders them.
			entries := append([]string{}, res.CommonPrefixes...)
			for _, ob := range res.Objects {
				entries = append(entries, ob.Key)
				if o.FetchOwner && (ob.Owner == nil || ob.Owner.DisplayName != "alice" || ob.Owner.ID != "id-alice") {
					t.Errorf("owner of %s: %+v", ob.Key, ob.Owner)
				}
				if !o.FetchOwner && ob.Owner != nil {
					t.Errorf("owner without FetchOwner")
				}
			}
			got = append(got, entries...)
			if !res.IsTruncated {
				if res.NextContinuationToken != "" || res.NextMarker != "" {
					t.Errorf("last page has a next marker")
				}
				slices.Sort(got)
				return got, pages
			}
			if o.V2 {
				if res.NextContinuationToken == "" || strings.Contains(res.NextContinuationToken, "/") {
					t.Fatalf("token %q", res.NextContinuationToken)
				}
				o.ContinuationToken = res.NextContinuationToken
			} else {
				o.Marker = res.NextMarker
			}
		}
	}
	all := "a/,b,c/,d,e/,f"
	for _, v2 := range []bool{false, true} {
		for _, max := range []int{1, 2, 3, 1000} {
			got, pages := walk(ListOptions{Delimiter: "/", MaxKeys: max, V2: v2, FetchOwner: !v2})
			if strings.Join(got, ",") != all {
				t.Errorf("v2=%v max=%d: %v", v2, max, got)
			}
			if want := (6 + max - 1) / max; pages != want {
				t.Errorf("v2=%v max=%d: %d pages; want %d", v2, max, pages, want)
			}
		}
	}
	if got, _ := walk(ListOptions{MaxKeys: 3, V2: true}); strings.Join(got, ",") != "a/1,a/2,b,c/x/1,c/y,d,e/,f" {
		t.Errorf("flat: %v", got)
	}
	if got, _ := walk(ListOptions{Prefix: "c/", Delimiter: "/", MaxKeys: 1, V2: true}); strings.Join(got, ",") != "c/x/,c/y" {
		t.Errorf("prefix c/: %v", got)
	}
	// "a" as a prefix without the slash groups "a/" (the directory).
	if got, _ := walk(ListOptions{Prefix: "a", Delimiter: "/", MaxKeys: 10, V2: true}); strings.Join(got, ",") != "a/" {
		t.Errorf("prefix a: %v", got)
	}
	if got, _ := walk(ListOptions{StartAfter: "c/y", MaxKeys: 2, V2: true}); strings.Join(got, ",") != "d,e/,f" {
		t.Errorf("start-after: %v", got)
	}
	if got, _ := walk(ListOptions{Marker: "b", Delimiter: "/", MaxKeys: 2}); strings.Join(got, ",") != "c/,d,e/,f" {
		t.Errorf("marker: %v", got)
	}
	// The token wins over StartAfter.
	first, _ := e.svc.ListObjects(e.ctx, e.alice, "data", ListOptions{MaxKeys: 2, V2: true})
	next, err := e.svc.ListObjects(e.ctx, e.alice, "data", ListOptions{MaxKeys: 1, V2: true, StartAfter: "e/", ContinuationToken: first.NextContinuationToken})
	if err != nil || next.Objects[0].Key != "b" {
		t.Errorf("token after StartAfter: %+v %v", next, err)
	}

	res, err := e.svc.ListObjects(e.ctx, e.alice, "data", ListOptions{MaxKeys: 0, V2: true})
	if err != nil || res.KeyCount != 0 || res.IsTruncated {
		t.Errorf("max-keys 0: %+v %v", res, err)
	}
	res, err = e.svc.ListObjects(e.ctx, e.alice, "data", ListOptions{MaxKeys: 5000})
	if err != nil || len(res.Objects) != 8 {
		t.Errorf("max-keys 5000: %v", err)
	}
	_, err = e.svc.ListObjects(e.ctx, e.alice, "data", ListOptions{MaxKeys: -1})
	wantCode(t, err, CodeBadListArgument)
	for _, tok := range []string{"!!!", "eA", encodeToken("")} {
		_, err = e.svc.ListObjects(e.ctx, e.alice, "data", ListOptions{MaxKeys: 1, V2: true, ContinuationToken: tok})
		wantCode(t, err, CodeBadContinuationToken)
	}
	_, err = e.svc.ListObjects(e.ctx, e.bob, "data", ListOptions{MaxKeys: 1})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.ListObjects(e.ctx, e.alice, "nobucket", ListOptions{MaxKeys: 1})
	wantCode(t, err, CodeNoSuchBucket)
}

func TestListWithPrefixCondition(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "home")
	e.put(e.alice, "home", "bob/notes.txt", "x")
	e.put(e.alice, "home", "carol/notes.txt", "y")
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::home","Condition":{"StringLike":{"s3:prefix":["${aws:username}/*"]}}}]}`
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "home", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.ListObjects(e.ctx, e.bob, "home", ListOptions{Prefix: "bob/", MaxKeys: 10, V2: true})
	if err != nil || len(res.Objects) != 1 {
		t.Fatalf("bob lists his home: %+v %v", res, err)
	}
	_, err = e.svc.ListObjects(e.ctx, e.bob, "home", ListOptions{Prefix: "carol/", MaxKeys: 10, V2: true})
	wantCode(t, err, CodeAccessDenied)
}
