package auth

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

type rec struct{ id, owner string }

// recPages serves recs as a store does: an owner's ("" for every owner's),
// paged, with the total.
func recPages(recs []rec, fetched *int) Page[rec] {
	return func(_ context.Context, owner string, opts meta.ListOptions) ([]rec, int, error) {
		*fetched++
		var sel []rec
		for _, r := range recs {
			if owner == "" || r.owner == owner {
				sel = append(sel, r)
			}
		}
		return pageOf(sel, opts), len(sel), nil
	}
}

func recName(r rec) (string, string) { return r.id, r.owner }

// TestList: every list obeys the policy a get of each record obeys; a
// session policy or an explicit Deny of the list refuses it.
func TestList(t *testing.T) {
	f := newFixture(t)
	var recs []rec
	for i := range 5 {
		recs = append(recs, rec{fmt.Sprintf("a%d", i), "alice-id"}, rec{fmt.Sprintf("b%d", i), "bob-id"})
	}
	alice := &meta.User{ID: "alice-id", Name: "alice"}
	admin := &meta.User{ID: "admin-id", Name: "admin", Admin: true}
	pol := func(doc string) []*policy.Policy { return []*policy.Policy{mustPolicy(t, doc)} }
	session := mustPolicy(t, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::in/*"}]}`)
	listSession := mustPolicy(t, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["atelier:job:List","atelier:job:Get"],"Resource":"*"},
		{"Effect":"Deny","Action":"atelier:job:Get","Resource":"atelier:::job/a1"}]}`)
	tests := []struct {
		name   string
		user   *meta.User
		sub    Subject
		area   string
		opts   api.ListOptions
		want   []string
		total  int
		denied bool
	}{
		{name: "owner sees its own", user: alice, area: "job", want: ids("a", 5), total: 5},
		{name: "owner pages its own", user: alice, area: "job", opts: api.ListOptions{Offset: 3, Limit: 10}, want: []string{"a3", "a4"}, total: 5},
		{name: "admin sees every owner's", user: admin, sub: Subject{Admin: true}, area: "job", opts: api.ListOptions{Limit: 100}, want: append(ids("a", 5), ids("b", 5)...), total: 10},
		{name: "temporary credentials list nothing", user: alice, sub: Subject{Session: session}, area: "job", denied: true},
		{name: "temporary credentials of an admin list nothing", user: admin, sub: Subject{Admin: true, Session: session}, area: "service", denied: true},
		{name: "explicit Deny of the list", user: alice, area: "job", denied: true,
			sub: Subject{Policies: pol(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"atelier:job:List","Resource":"*"}]}`)}},
		{name: "explicit Deny of the list for an admin", user: admin, area: "model", denied: true,
			sub: Subject{Admin: true, Policies: pol(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"atelier:*:List","Resource":"*"}]}`)}},
		{name: "a Deny of one record hides it", user: alice, area: "job", want: []string{"a0", "a2", "a3", "a4"}, total: 4,
			sub: Subject{Policies: pol(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"atelier:job:Get","Resource":"atelier:::job/a1"}]}`)}},
		{name: "a Deny hides it across pages", user: alice, area: "job", opts: api.ListOptions{Offset: 1, Limit: 2}, want: []string{"a2", "a3"}, total: 4,
			sub: Subject{Policies: pol(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"atelier:job:Get","Resource":"atelier:::job/a1"}]}`)}},
		{name: "an admin's Deny of one record hides it", user: admin, area: "job", opts: api.ListOptions{Limit: 100}, total: 9,
			want: []string{"a0", "a1", "a2", "a3", "a4", "b0", "b2", "b3", "b4"},
			sub:  Subject{Admin: true, Policies: pol(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"atelier:job:*","Resource":"atelier:::job/b1"}]}`)}},
		{name: "a Deny of another area hides nothing", user: alice, area: "job", want: ids("a", 5), total: 5,
			sub: Subject{Policies: pol(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"atelier:service:Get","Resource":"*"}]}`)}},
		{name: "a session granting the list and gets", user: alice, area: "job", want: []string{"a0", "a2", "a3", "a4"}, total: 4,
			sub: Subject{Session: listSession}},
		{name: "without a list grant (policies): what p may get", user: alice, area: "policy", want: ids("a", 5), total: 5},
		{name: "policies with a grant to get one of bob's", user: alice, area: "policy", want: append(ids("a", 5), "b3"), total: 6,
			sub: Subject{Policies: pol(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"atelier:policy:Get","Resource":"atelier:::policy/b3"}]}`)}},
		{name: "policies with temporary credentials", user: alice, sub: Subject{Session: session}, area: "policy", denied: true},
		{name: "a list grant does not make another owner's jobs a user's", user: alice, area: "job", want: ids("a", 5), total: 5, opts: api.ListOptions{Limit: 100},
			sub: Subject{Policies: pol(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"atelier:job:List","Resource":"*"},{"Effect":"Allow","Action":"atelier:job:Get","Resource":"atelier:::job/b0"}]}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.sub.Name = tt.user.Name
			p := &Principal{User: tt.user, Subject: tt.sub}
			var fetched int
			got, total, err := List(context.Background(), f.svc, p, tt.area, tt.opts, recPages(recs, &fetched), recName)
			if tt.denied {
				wantErr(t, err, errs.PermissionDenied, CodeDenied, "may not atelier:"+tt.area+":List")
				if fetched != 0 {
					t.Errorf("a refused list fetched %d pages", fetched)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, r := range got {
				gotIDs = append(gotIDs, r.id)
			}
			slices.Sort(gotIDs)
			if !slices.Equal(gotIDs, tt.want) || total != tt.total {
				t.Errorf("got %v (total %d), want %v (total %d)", gotIDs, total, tt.want, tt.total)
			}
		})
	}
}

func ids(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// The REST API's largest page is what the store pages at most, so that
// List never asks the store for more than it answers.
func TestListLimitsAgree(t *testing.T) {
	if api.MaxListLimit != meta.MaxLimit {
		t.Errorf("api.MaxListLimit = %d, meta.MaxLimit = %d", api.MaxListLimit, meta.MaxLimit)
	}
}
