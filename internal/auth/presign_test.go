package auth

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/errs"
)

// TestPresign: a URL is signed with the caller's own key and verifies with
// its secret; temporary credentials, another user's key and a disabled key
// cannot presign.
func TestPresign(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	alice, aliceAK, aliceSK := f.user(t, "alice")
	bob, bobAK, _ := f.user(t, "bob")
	target, _ := url.Parse("http://127.0.0.1:9000/bkt/dir/a%20b.txt")

	u, err := f.svc.Presign(ctx, alice, http.MethodGet, target, "us-east-1", "s3", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u.Query().Get("X-Amz-Credential"), aliceAK+"/") {
		t.Errorf("signed with %s", u.Query().Get("X-Amz-Credential"))
	}
	req, _ := http.NewRequest("GET", u.String(), nil)
	v := sigv4.Verifier{Region: "us-east-1", Service: "s3", Now: f.clock.now,
		Lookup: func(context.Context, string) (string, error) { return aliceSK, nil }}
	if _, err := v.Verify(req); err != nil {
		t.Errorf("verify: %v", err)
	}
	if _, err := f.svc.Presign(ctx, alice, http.MethodGet, target, "us-east-1", "s3", 8*24*time.Hour); errs.CodeOf(err) != sigv4.CodeBadPresignArgs {
		t.Errorf("8 days: %v", err)
	}

	// Alice's principal naming bob's key is refused.
	forged := *alice
	forged.AccessKey = bobAK
	if _, err := f.svc.Presign(ctx, &forged, http.MethodGet, target, "us-east-1", "s3", time.Hour); errs.CodeOf(err) != CodeCannotPresign {
		t.Errorf("another's key: %v", err)
	}
	tmp, err := f.svc.IssueTemporary(ctx, alice.User.ID, nil, time.Hour, "job")
	if err != nil {
		t.Fatal(err)
	}
	tp := *alice
	tp.AccessKey, tp.Temporary = tmp.AccessKey, true
	if _, err := f.svc.Presign(ctx, &tp, http.MethodGet, target, "us-east-1", "s3", time.Hour); errs.CodeOf(err) != CodeCannotPresign {
		t.Errorf("temporary: %v", err)
	}
	tp.Temporary = false // a principal that hides it: the key itself says so
	if _, err := f.svc.Presign(ctx, &tp, http.MethodGet, target, "us-east-1", "s3", time.Hour); errs.CodeOf(err) != CodeCannotPresign {
		t.Errorf("temporary key: %v", err)
	}
	if _, err := f.svc.SetAccessKeyStatus(ctx, f.admin, bobAK, "disabled"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Presign(ctx, bob, http.MethodGet, target, "us-east-1", "s3", time.Hour); errs.CodeOf(err) != CodeKeyDisabled {
		t.Errorf("disabled: %v", err)
	}
}
