package sigv4

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// checkClaim checks the credential scope, the time and the signed headers
// of a claim, before any key is looked up.
func (v *Verifier) checkClaim(r *http.Request, c claim) *failure {
	checks := []func(*http.Request, claim) *failure{v.checkScope, v.checkTime, checkSignedHeaders}
	for _, check := range checks {
		if f := check(r, c); f != nil {
			return f
		}
	}
	return nil
}

func (v *Verifier) checkScope(_ *http.Request, c claim) *failure {
	cr := c.cred
	malformed := func(code errs.Code, msg, hint string) *failure {
		return &failure{errs.Invalid, code, malformedS3(c.presigned), msg, hint}
	}
	const scopeHint = "the credential is <access key>/<YYYYMMDD>/<region>/<service>/aws4_request"
	if cr.terminator != scopeTerminator {
		return malformed(CodeBadScope, fmt.Sprintf("the credential scope %q does not end in %s", cr.scope(), scopeTerminator), scopeHint)
	}
	if _, err := time.Parse(dateFormat, cr.date); err != nil {
		return malformed(CodeBadScope, fmt.Sprintf("the credential scope %q has a malformed date %q", cr.scope(), cr.date), scopeHint)
	}
	if cr.region == "" {
		return malformed(CodeBadScope, fmt.Sprintf("the credential scope %q has no region", cr.scope()), scopeHint)
	}
	if cr.service != v.Service {
		return malformed(CodeWrongService,
			fmt.Sprintf("the credential scope is for service %q; this endpoint is service %q", cr.service, v.Service),
			fmt.Sprintf("sign for service %q, e.g. `curl --aws-sigv4 \"aws:amz:REGION:%s\"`", v.Service, v.Service))
	}
	if !v.AnyRegion && cr.region != v.Region {
		return malformed(CodeWrongRegion,
			fmt.Sprintf("the credential scope is for region %q; this server expects region %q", cr.region, v.Region),
			fmt.Sprintf("sign for region %q (e.g. AWS_DEFAULT_REGION=%s or the client's region setting)", v.Region, v.Region))
	}
	if day := c.time.Format(dateFormat); cr.date != day {
		return malformed(CodeScopeDate,
			fmt.Sprintf("the credential date %s is not the day of the request time %s", cr.date, c.time.Format(timeFormat)),
			"sign with the credential date of the X-Amz-Date day (UTC)")
	}
	return nil
}

func (v *Verifier) checkTime(_ *http.Request, c claim) *failure {
	now := v.now()
	skew := v.maxSkew()
	if !c.presigned {
		if d := now.Sub(c.time); d > skew || d < -skew {
			return &failure{errs.Unauthenticated, CodeSkewed, S3RequestTimeTooSkewed,
				fmt.Sprintf("the request time %s differs from the server time %s by more than %s",
					c.time.Format(timeFormat), now.UTC().Format(timeFormat), skew),
				"synchronise the client's clock (NTP) and sign again"}
		}
		return nil
	}
	if c.time.Sub(now) > skew {
		return &failure{errs.Unauthenticated, CodeNotYetValid, S3AccessDenied,
			"Request is not valid yet",
			fmt.Sprintf("the URL was presigned for %s, later than the server time %s; synchronise the client's clock",
				c.time.Format(timeFormat), now.UTC().Format(timeFormat))}
	}
	if expiry := c.time.Add(c.expires); now.After(expiry) {
		return &failure{errs.Unauthenticated, CodeExpired, S3AccessDenied,
			"Request has expired",
			fmt.Sprintf("the presigned URL expired at %s; presign it again", expiry.UTC().Format(time.RFC3339))}
	}
	return nil
}

// checkSignedHeaders requires host and every x-amz-* header of the request
// to be signed, so that none can be added to a captured request.
func checkSignedHeaders(r *http.Request, c claim) *failure {
	var unsigned []string
	if !slices.Contains(c.signedHeaders, "host") {
		unsigned = append(unsigned, "host")
	}
	for name := range r.Header {
		lower := strings.ToLower(name)
		if strings.HasPrefix(lower, "x-amz-") && !slices.Contains(c.signedHeaders, lower) {
			unsigned = append(unsigned, lower)
		}
	}
	if len(unsigned) == 0 {
		return nil
	}
	slices.Sort(unsigned)
	return &failure{errs.Unauthenticated, CodeUnsignedHeaders, S3AccessDenied,
		"there were headers present in the request which were not signed: " + strings.Join(unsigned, ", "),
		"sign host and every x-amz-* header the request sends"}
}

// lookup returns the secret of an access key.
func (v *Verifier) lookup(ctx context.Context, accessKey string) (string, error) {
	secret, err := v.Lookup(ctx, accessKey)
	switch {
	case err == nil:
		return secret, nil
	case errs.Is(err, errs.NotFound):
		return "", failure{errs.Unauthenticated, CodeUnknownKey, S3InvalidAccessKeyID,
			fmt.Sprintf("the access key %q does not exist", accessKey),
			"check the access key id; list yours with `atelier access-key list`"}.err(opVerify)
	case errs.KindOf(err) == errs.Other:
		return "", errs.E(opVerify, errs.Unavailable, CodeLookupFailed, "cannot look up the access key", err,
			errs.Hint("try again; if it persists, check the server's metadata store"))
	}
	return "", errs.E(opVerify, err)
}

// mismatch is the failure of a signature that does not match.
func (v *Verifier) mismatch(c claim) *failure {
	where := "service " + fmt.Sprintf("%q", v.Service)
	if !v.AnyRegion {
		where += fmt.Sprintf(" and region %q", v.Region)
	}
	return &failure{errs.Unauthenticated, CodeSignatureMismatch, S3SignatureDoesNotMatch,
		"the request signature we calculated does not match the signature you provided",
		fmt.Sprintf("check the secret key of %s and that the client signs for %s; proxies must not rewrite the path, query or signed headers",
			c.cred.accessKey, where)}
}
