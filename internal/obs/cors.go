package obs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// CORSRule is one rule of a bucket's CORS configuration. Origins and
// headers may hold one '*' wildcard each.
type CORSRule struct {
	ID             string   `json:"id,omitempty"`
	AllowedOrigins []string `json:"allowed_origins"`
	AllowedMethods []string `json:"allowed_methods"` // GET, PUT, POST, DELETE, HEAD
	AllowedHeaders []string `json:"allowed_headers,omitempty"`
	ExposeHeaders  []string `json:"expose_headers,omitempty"`
	MaxAgeSeconds  int      `json:"max_age_seconds,omitempty"`
}

// MaxCORSRules is the most rules a bucket's CORS configuration holds.
const MaxCORSRules = 100

// ValidateCORS checks a CORS configuration.
func ValidateCORS(rules []CORSRule) error {
	const op errs.Op = "obs.ValidateCORS"
	const hint = "each rule needs AllowedOrigin and AllowedMethod (GET, PUT, POST, DELETE or HEAD); origins and headers hold at most one '*'"
	bad := func(format string, args ...any) error {
		return fail(op, CodeBadCORS, "invalid CORS configuration: "+fmt.Sprintf(format, args...), hint)
	}
	switch {
	case len(rules) == 0:
		return bad("no rules (delete the configuration to remove every rule)")
	case len(rules) > MaxCORSRules:
		return bad("%d rules; the limit is %d", len(rules), MaxCORSRules)
	}
	for i, r := range rules {
		name := fmt.Sprintf("rule %d", i+1)
		if r.ID != "" {
			name = fmt.Sprintf("rule %q", r.ID)
		}
		switch {
		case len(r.ID) > maxRuleIDLen:
			return bad("%s: the ID is longer than %d characters", name, maxRuleIDLen)
		case len(r.AllowedOrigins) == 0:
			return bad("%s has no AllowedOrigin", name)
		case len(r.AllowedMethods) == 0:
			return bad("%s has no AllowedMethod", name)
		case r.MaxAgeSeconds < 0:
			return bad("%s: MaxAgeSeconds is negative", name)
		}
		for _, m := range r.AllowedMethods {
			switch m {
			case "GET", "PUT", "POST", "DELETE", "HEAD":
			default:
				return bad("%s: AllowedMethod %q is not GET, PUT, POST, DELETE or HEAD", name, m)
			}
		}
		for _, o := range r.AllowedOrigins {
			if o == "" || strings.Count(o, "*") > 1 {
				return bad("%s: AllowedOrigin %q is empty or has more than one '*'", name, o)
			}
		}
		for _, h := range r.AllowedHeaders {
			if h == "" || strings.Count(h, "*") > 1 {
				return bad("%s: AllowedHeader %q is empty or has more than one '*'", name, h)
			}
		}
	}
	return nil
}

// MatchCORS returns the first rule that allows a request from origin with
// method and, for a preflight, the requested headers. A pure function.
func MatchCORS(rules []CORSRule, origin, method string, headers []string) (CORSRule, bool) {
	for _, r := range rules {
		if !matchAny(r.AllowedOrigins, origin, false) {
			continue
		}
		methodOK := false
		for _, m := range r.AllowedMethods {
			if m == method {
				methodOK = true
			}
		}
		if !methodOK {
			continue
		}
		headersOK := true
		for _, h := range headers {
			if !matchAny(r.AllowedHeaders, h, true) {
				headersOK = false
				break
			}
		}
		if headersOK {
			return r, true
		}
	}
	return CORSRule{}, false
}

// matchAny reports whether s matches one of the patterns, each with at most
// one '*'.
func matchAny(patterns []string, s string, foldCase bool) bool {
	if foldCase {
		s = strings.ToLower(s)
	}
	for _, p := range patterns {
		if foldCase {
			p = strings.ToLower(p)
		}
		before, after, wild := strings.Cut(p, "*")
		if !wild {
			if p == s {
				return true
			}
			continue
		}
		if len(s) >= len(before)+len(after) && strings.HasPrefix(s, before) && strings.HasSuffix(s, after) {
			return true
		}
	}
	return false
}

// PutCORS replaces the bucket's CORS rules.
func (s *Service) PutCORS(ctx context.Context, c *Caller, bucket string, rules []CORSRule) error {
	const op errs.Op = "obs.PutCORS"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketCORS, "", nil); err != nil {
		return err
	}
	if err := ValidateCORS(rules); err != nil {
		return err
	}
	doc, err := json.Marshal(rules)
	if err != nil {
		return errs.E(op, errs.Internal, "encoding CORS rules", err)
	}
	return s.setConfig(ctx, op, bucket, meta.BucketCORS, string(doc))
}

// GetCORS returns the bucket's CORS rules; NoSuchCORSConfiguration if none.
func (s *Service) GetCORS(ctx context.Context, c *Caller, bucket string) ([]CORSRule, error) {
	const op errs.Op = "obs.GetCORS"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionGetBucketCORS, "", nil); err != nil {
		return nil, err
	}
	return decodeCORS(op, b)
}

// DeleteCORS removes the bucket's CORS rules (S3 checks obs:PutBucketCORS
// for it).
func (s *Service) DeleteCORS(ctx context.Context, c *Caller, bucket string) error {
	const op errs.Op = "obs.DeleteCORS"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketCORS, "", nil); err != nil {
		return err
	}
	return s.setConfig(ctx, op, bucket, meta.BucketCORS, "")
}

// CORSFor returns the rule that allows a cross-origin request to the
// bucket, for the S3 front end's preflight (OPTIONS) answers and response
// headers. Like S3 it needs no authorization: browsers send preflights
// without credentials, and the headers of an actual request are decided
// before (and whatever) its authentication. ok is false when no rule
// matches; a bucket without a CORS configuration is CodeNoSuchCORS (S3
// says "CORS is not enabled for this bucket").
func (s *Service) CORSFor(ctx context.Context, bucket, origin, method string, headers []string) (rule CORSRule, ok bool, err error) {
	const op errs.Op = "obs.CORSFor"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return CORSRule{}, false, err
	}
	rules, err := decodeCORS(op, b)
	if err != nil {
		return CORSRule{}, false, err
	}
	rule, ok = MatchCORS(rules, origin, method, headers)
	return rule, ok, nil
}

func decodeCORS(op errs.Op, b *meta.Bucket) ([]CORSRule, error) {
	if b.CORS == "" {
		return nil, fail(op, CodeNoSuchCORS, fmt.Sprintf("bucket %q has no CORS configuration", b.Name), "")
	}
	var rules []CORSRule
	if err := json.Unmarshal([]byte(b.CORS), &rules); err != nil {
		return nil, fail(op, CodeInconsistent, fmt.Sprintf("the stored CORS configuration of bucket %q does not decode", b.Name), "put the configuration again", err)
	}
	return rules, nil
}
