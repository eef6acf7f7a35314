package obs

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/errs"
)

func TestAuthorize(t *testing.T) {
	const ownerID = "id-alice"
	subj := func(name string, admin bool, docs ...string) *auth.Subject {
		s := &auth.Subject{Name: name, Admin: admin}
		for _, d := range docs {
			s.Policies = append(s.Policies, mustPolicy(t, d, policy.Identity))
		}
		return s
	}
	session := func(s *auth.Subject, doc string) *auth.Subject {
		c := *s
		c.Session = mustPolicy(t, doc, policy.Identity)
		return &c
	}
	bp := func(doc string) *policy.Policy { return mustPolicy(t, doc, policy.Resource) }

	alice := subj("alice", false)
	bob := subj("bob", false)
	admin := subj("root", true)

	publicRead := bp(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`)
	bobRW := bp(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::123:user/bob"]},"Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::data/shared/*"}]}`)
	obsGrammarBucket := bp(`{"Statement":[{"Effect":"Allow","Principal":{"ID":["domain/d1:user/bob"]},"Action":["GetObject"],"Resource":["data/*"]}]}`)
	denyBob := bp(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::data/secret/*"}]}`)
	denyAllDelete := bp(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":["s3:DeleteObject","s3:PutBucketPolicy","s3:GetBucketPolicy"],"Resource":["arn:aws:s3:::data/*","arn:aws:s3:::data"]}]}`)
	fromOffice := bp(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}]}`)
	listHome := bp(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::data","Condition":{"StringLike":{"s3:prefix":"home/${aws:username}/*"}}}]}`)

	awsRead := subj("bob", false, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`)
	obsRead := subj("bob", false, `{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["obs:object:GetObject"],"Resource":["obs:*:*:object:data/*"]}]}`)
	aliceDenied := subj("alice", false, `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:DeleteObject","Resource":"*"}]}`)
	jobCreds := session(alice, `{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["obs:GetObject"],"Resource":["obs:::data/in/*"]},{"Effect":"Allow","Action":["obs:PutObject"],"Resource":["obs:::data/out/*"]}]}`)
	adminSession := session(admin, `{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["obs:GetObject"],"Resource":["obs:::data/in/*"]}]}`)

	obj := func(key string) string { return "obs:::data/" + key }
	tests := []struct {
		name   string
		sub    *auth.Subject
		userID string
		policy *policy.Policy
		action string
		res    string
		ctx    map[string][]string
		want   Decision
	}{
		{"owner reads own object", alice, ownerID, nil, ActionGetObject, obj("a"), nil, Decision{true, ReasonOwner}},
		{"owner deletes own bucket", alice, ownerID, nil, ActionDeleteBucket, "obs:::data", nil, Decision{true, ReasonOwner}},
		{"other user: private by default", bob, "id-bob", nil, ActionGetObject, obj("a"), nil, Decision{false, ReasonNoGrant}},
		{"other user lists: private", bob, "id-bob", nil, ActionListBucket, "obs:::data", nil, Decision{false, ReasonNoGrant}},
		{"admin", admin, "id-root", nil, ActionDeleteObject, obj("a"), nil, Decision{true, ReasonAdmin}},
		{"anonymous: private by default", nil, "", nil, ActionGetObject, obj("a"), nil, Decision{false, ReasonNoGrant}},
		{"anonymous with empty owner is no owner", nil, "", nil, ActionGetObject, obj("a"), nil, Decision{false, ReasonNoGrant}},
		{"public read: anonymous reads", nil, "", publicRead, ActionGetObject, obj("a"), nil, Decision{true, ReasonBucketPolicy}},
		{"public read: anonymous cannot write", nil, "", publicRead, ActionPutObject, obj("a"), nil, Decision{false, ReasonNoGrant}},
		{"public read: anonymous cannot list", nil, "", publicRead, ActionListBucket, "obs:::data", nil, Decision{false, ReasonNoGrant}},
		{"public read: other user reads", bob, "id-bob", publicRead, ActionGetObject, obj("a"), nil, Decision{true, ReasonBucketPolicy}},
		{"named user in bucket policy", bob, "id-bob", bobRW, ActionPutObject, obj("shared/x"), nil, Decision{true, ReasonBucketPolicy}},
		{"named user outside the granted prefix", bob, "id-bob", bobRW, ActionPutObject, obj("private/x"), nil, Decision{false, ReasonNoGrant}},
		{"another user than the named one", subj("carol", false), "id-carol", bobRW, ActionGetObject, obj("shared/x"), nil, Decision{false, ReasonNoGrant}},
		{"named user: anonymous not included", nil, "", bobRW, ActionGetObject, obj("shared/x"), nil, Decision{false, ReasonNoGrant}},
		{"OBS grammar bucket policy", bob, "id-bob", obsGrammarBucket, ActionGetObject, obj("x"), nil, Decision{true, ReasonBucketPolicy}},
		{"identity policy, AWS grammar", awsRead, "id-bob", nil, ActionGetObject, obj("x"), nil, Decision{true, ReasonIdentityPolicy}},
		{"identity policy, OBS grammar", obsRead, "id-bob", nil, ActionGetObject, obj("x"), nil, Decision{true, ReasonIdentityPolicy}},
		{"identity policy does not cover writes", obsRead, "id-bob", nil, ActionPutObject, obj("x"), nil, Decision{false, ReasonNoGrant}},
		{"bucket Deny wins over identity Allow", awsRead, "id-bob", denyBob, ActionGetObject, obj("secret/x"), nil, Decision{false, ReasonBucketPolicyDeny}},
		{"bucket Deny applies only where it says", awsRead, "id-bob", denyBob, ActionGetObject, obj("open/x"), nil, Decision{true, ReasonIdentityPolicy}},
		{"bucket Deny binds the owner", alice, ownerID, denyAllDelete, ActionDeleteObject, obj("x"), nil, Decision{false, ReasonBucketPolicyDeny}},
		{"bucket Deny binds the admin", admin, "id-root", denyAllDelete, ActionDeleteObject, obj("x"), nil, Decision{false, ReasonBucketPolicyDeny}},
		{"owner may always replace the policy", alice, ownerID, denyAllDelete, ActionPutBucketPolicy, "obs:::data", nil, Decision{true, ReasonOwner}},
		{"owner may always read the policy (s3 alias)", alice, ownerID, denyAllDelete, "s3:GetBucketPolicy", "obs:::data", nil, Decision{true, ReasonOwner}},
		{"admin may always replace the policy", admin, "id-root", denyAllDelete, ActionPutBucketPolicy, "obs:::data", nil, Decision{true, ReasonAdmin}},
		{"others may not replace a denying policy", awsRead, "id-bob", denyAllDelete, ActionPutBucketPolicy, "obs:::data", nil, Decision{false, ReasonBucketPolicyDeny}},
		{"identity Deny binds the owner", aliceDenied, ownerID, nil, ActionDeleteObject, obj("x"), nil, Decision{false, ReasonIdentityPolicyDeny}},
		{"identity Deny leaves other actions", aliceDenied, ownerID, nil, ActionGetObject, obj("x"), nil, Decision{true, ReasonOwner}},
		{"session allows reading inputs", jobCreds, ownerID, nil, ActionGetObject, obj("in/x"), nil, Decision{true, ReasonOwner}},
		{"session narrows the owner", jobCreds, ownerID, nil, ActionGetObject, obj("out/x"), nil, Decision{false, ReasonSessionPolicy}},
		{"session allows writing outputs", jobCreds, ownerID, nil, ActionPutObject, obj("out/x"), nil, Decision{true, ReasonOwner}},
		{"session forbids deleting", jobCreds, ownerID, nil, ActionDeleteObject, obj("in/x"), nil, Decision{false, ReasonSessionPolicy}},
		{"session narrows the admin", adminSession, "id-root", nil, ActionPutObject, obj("in/x"), nil, Decision{false, ReasonSessionPolicy}},
		{"session narrows public access", session(bob, `{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["obs:PutObject"],"Resource":["*"]}]}`),
			"id-bob", publicRead, ActionGetObject, obj("a"), nil, Decision{false, ReasonSessionPolicy}},
		{"condition met", nil, "", fromOffice, ActionGetObject, obj("a"), map[string][]string{"aws:sourceip": {"10.1.2.3"}}, Decision{true, ReasonBucketPolicy}},
		{"condition not met", nil, "", fromOffice, ActionGetObject, obj("a"), map[string][]string{"aws:sourceip": {"192.168.1.1"}}, Decision{false, ReasonNoGrant}},
		{"prefix condition with username", bob, "id-bob", listHome, ActionListBucket, "obs:::data", map[string][]string{"s3:prefix": {"home/bob/x"}}, Decision{true, ReasonBucketPolicy}},
		{"prefix condition, another home", bob, "id-bob", listHome, ActionListBucket, "obs:::data", map[string][]string{"s3:prefix": {"home/alice/"}}, Decision{false, ReasonNoGrant}},
		{"create bucket: caller is the would-be owner", bob, "id-bob", nil, ActionCreateBucket, "obs:::new", nil, Decision{true, ReasonOwner}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := ownerID
			if tt.action == ActionCreateBucket {
				owner = tt.userID
			}
			got := Authorize(AuthzInput{Subject: tt.sub, UserID: tt.userID, BucketOwner: owner, BucketPolicy: tt.policy,
				Action: tt.action, Resource: tt.res, Context: tt.ctx})
			if got != tt.want {
				t.Errorf("Authorize = %+v (%s); want %+v (%s)", got, got.Reason, tt.want, tt.want.Reason)
			}
		})
	}
}

func TestDeniedErrorNamesEverything(t *testing.T) {
	bob := caller(t, "bob", false)
	err := deniedError("obs.GetObject", bob, ActionGetObject, "data", "train/1.jpg", ReasonNoGrant)
	wantCode(t, err, CodeAccessDenied)
	msg := errs.UserMessage(err)
	for _, want := range []string{`user "bob"`, "obs:GetObject", `bucket "data"`, `key "train/1.jpg"`, "no policy grants it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
	if h := string(errs.HintOf(err)); !strings.Contains(h, "obs:::data/train/1.jpg") || !strings.Contains(h, "user/bob") {
		t.Errorf("hint %q does not say what to grant", h)
	}
	anon := deniedError("obs.GetObject", nil, ActionGetObject, "data", "x", ReasonNoGrant)
	if msg := errs.UserMessage(anon); !strings.Contains(msg, "anonymous") {
		t.Errorf("anonymous message %q", msg)
	}
	if h := string(errs.HintOf(anon)); !strings.Contains(h, `Principal "*"`) {
		t.Errorf("anonymous hint %q", h)
	}
	for _, r := range []Reason{ReasonBucketPolicyDeny, ReasonIdentityPolicyDeny, ReasonSessionPolicy} {
		err := deniedError("op", bob, ActionPutObject, "data", "k", r)
		if !strings.Contains(errs.UserMessage(err), r.String()) || errs.HintOf(err) == "" {
			t.Errorf("reason %v: %q / %q", r, errs.UserMessage(err), errs.HintOf(err))
		}
	}
}
