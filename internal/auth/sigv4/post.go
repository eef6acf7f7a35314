package sigv4

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Browser-form (POST Object) uploads are signed by signing the base64
// policy document of the form: with Signature Version 4 the string to sign
// is the policy itself, signed with the key derived for the credential's
// scope date, region and service; with Signature Version 2 it is the
// HMAC-SHA1 of the policy. PresignPost builds such a form (the client side,
// `atelier obs presign --post`); VerifyPost checks one (the server side).

// CodePostFields: a POST form's signature fields are missing, malformed or
// of an unsupported algorithm.
const CodePostFields errs.Code = "ATL.AUTH.0043"

const (
	opVerifyPost  errs.Op = "sigv4.VerifyPost"
	opPresignPost errs.Op = "sigv4.PresignPost"
)

// PostSignature is what a POST form says about its signature: the fields as
// sent (names matched case-insensitively by the caller). V2 forms have
// AccessKeyID and Signature; V4 forms the X-Amz-* fields.
type PostSignature struct {
	Policy        string // the policy field, base64 as sent
	Algorithm     string // x-amz-algorithm
	Credential    string // x-amz-credential
	Date          string // x-amz-date
	Signature     string // x-amz-signature (V4) or signature (V2)
	SecurityToken string // x-amz-security-token
	AccessKeyID   string // AWSAccessKeyId (V2 only)
	V2            bool
}

// PostPolicySignatureV4 is the x-amz-signature of a base64 policy signed
// with secret for the scope date (YYYYMMDD), region and service.
func PostPolicySignatureV4(secret, date, region, service, policy string) string {
	return Signature(signingKey(secret, date, region, service), policy)
}

// PostPolicySignatureV2 is the signature field of a base64 policy signed
// with Signature Version 2 (base64 HMAC-SHA1).
func PostPolicySignatureV2(secret, policy string) string {
	return v2Signature(secret, policy)
}

// VerifyPost checks the signature of a POST form's policy. The scope must
// be this verifier's service and region and the day of x-amz-date; the
// policy's expiration and conditions are the caller's to check (they are
// S3's, not the signature's). The Result has Presigned set, no signing key
// and UNSIGNED-PAYLOAD: the file is covered by the policy's conditions only.
func (v *Verifier) VerifyPost(ctx context.Context, p PostSignature) (*Result, error) {
	if err := v.validate(); err != nil {
		return nil, err
	}
	bad := func(msg, hint string) error {
		return failure{errs.Invalid, CodePostFields, S3InvalidArgument, msg, hint}.err(opVerifyPost)
	}
	mismatch := failure{errs.Unauthenticated, CodeSignatureMismatch, S3SignatureDoesNotMatch,
		"The request signature we calculated does not match the signature you provided. Check your key and signing method.",
		"sign the base64 policy field exactly as it is sent, with the key of the form's credential"}
	if p.V2 {
		if p.AccessKeyID == "" || p.Signature == "" {
			return nil, bad("a Signature Version 2 POST form needs the fields AWSAccessKeyId and signature", "")
		}
		secret, err := v.lookup(ctx, p.AccessKeyID)
		if err != nil {
			return nil, err
		}
		if !hmac.Equal([]byte(PostPolicySignatureV2(secret, p.Policy)), []byte(p.Signature)) {
			mismatch.hint = "check the secret key of " + p.AccessKeyID
			return nil, mismatch.err(opVerifyPost)
		}
		return &Result{AccessKey: p.AccessKeyID, Service: v.Service, Region: v.Region, Presigned: true, Time: v.now(),
			PayloadHash: UnsignedPayload, Signature: p.Signature, SecurityToken: p.SecurityToken}, nil
	}
	if !strings.EqualFold(p.Algorithm, algorithm) {
		return nil, bad("the x-amz-algorithm field is "+quote(p.Algorithm)+"; POST forms are signed with "+algorithm,
			"sign the policy with AWS Signature Version 4 (boto3 generate_presigned_post, minio-go PresignedPostPolicy)")
	}
	cred, err := parseCredential(p.Credential)
	if err != nil {
		return nil, bad("the x-amz-credential field: "+err.Error(), "")
	}
	t, err := time.Parse(timeFormat, p.Date)
	if err != nil {
		return nil, bad("the x-amz-date field "+quote(p.Date)+" is not in the form YYYYMMDDTHHMMSSZ", "")
	}
	sig, err := hex.DecodeString(p.Signature)
	if err != nil || len(sig) != 32 {
		return nil, bad("the x-amz-signature field is not 64 hex digits", "")
	}
	c := claim{presigned: true, cred: cred, time: t, token: p.SecurityToken}
	if f := v.checkScope(nil, c); f != nil {
		f.s3 = S3InvalidArgument
		return nil, f.err(opVerifyPost)
	}
	secret, err := v.lookup(ctx, cred.accessKey)
	if err != nil {
		return nil, err
	}
	key := signingKey(secret, cred.date, cred.region, cred.service)
	if !hmac.Equal([]byte(Signature(key, p.Policy)), []byte(strings.ToLower(p.Signature))) {
		mismatch.hint = "check the secret key of " + cred.accessKey + " and that the policy is signed for service " +
			quote(v.Service) + " and region " + quote(cred.region)
		return nil, mismatch.err(opVerifyPost)
	}
	return &Result{AccessKey: cred.accessKey, Region: cred.region, Service: cred.service, Time: t, Scope: cred.scope(),
		Presigned: true, PayloadHash: UnsignedPayload, Signature: strings.ToLower(p.Signature), SecurityToken: p.SecurityToken}, nil
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// PostOptions describe a POST form for PresignPost.
type PostOptions struct {
	Bucket string
	// Key is the object key; with KeyPrefix it is a prefix instead: the
	// policy has ["starts-with", "$key", Key] and the form's key field is
	// Key + "${filename}" (the browser's file name), which the uploader may
	// change to any key under the prefix.
	Key       string
	KeyPrefix bool
	// MaxSize > 0 adds ["content-length-range", MinSize, MaxSize].
	MinSize, MaxSize int64
	// ContentTypePrefix, when set, adds ["starts-with", "$Content-Type", it]
	// and a Content-Type field of that value.
	ContentTypePrefix string
	// ContentType, when set (and ContentTypePrefix is not), adds
	// {"Content-Type": it}, an exact condition, and that field.
	ContentType string
	// SuccessActionStatus ("200", "201" or "204"), when set, is a field
	// and an exact condition.
	SuccessActionStatus string
}

// PostPolicyTimeFormat is how PresignPost writes the expiration.
const PostPolicyTimeFormat = "2006-01-02T15:04:05.000Z"

// PresignPost returns the form fields of a browser-form upload signed with
// c for region (service s3) at time t, valid for expires (1 s to 7 days):
// key, policy, x-amz-algorithm, x-amz-credential, x-amz-date,
// x-amz-signature and, with a session token, x-amz-security-token, plus the
// fields o asks for. Every field but the signature and the policy is
// covered by a condition of the policy, so that none can be changed.
func PresignPost(c Credentials, region string, t time.Time, expires time.Duration, o PostOptions) (map[string]string, error) {
	if expires < time.Second || expires > MaxPresignExpiry {
		return nil, errs.E(opPresignPost, errs.Invalid, CodeBadPresignArgs,
			"a POST policy must expire after 1 second to 7 days, not "+expires.String(),
			errs.Hint("choose an expiry from 1s to 168h"))
	}
	if o.Bucket == "" || (o.Key == "" && !o.KeyPrefix) || o.MinSize < 0 || (o.MaxSize > 0 && o.MinSize > o.MaxSize) {
		return nil, errs.E(opPresignPost, errs.Invalid, CodeBadPresignArgs, "a POST policy needs a bucket, a key or key prefix, and 0 <= min size <= max size")
	}
	t = t.UTC()
	cred := credential{accessKey: c.AccessKey, date: t.Format(dateFormat), region: region, service: "s3", terminator: scopeTerminator}
	fields := map[string]string{
		"x-amz-algorithm":  algorithm,
		"x-amz-credential": cred.String(),
		"x-amz-date":       t.Format(timeFormat),
	}
	conds := []any{map[string]string{"bucket": o.Bucket}}
	if o.KeyPrefix {
		fields["key"] = o.Key + "${filename}"
		conds = append(conds, []any{"starts-with", "$key", o.Key})
	} else {
		fields["key"] = o.Key
		conds = append(conds, map[string]string{"key": o.Key})
	}
	for _, name := range []string{"x-amz-algorithm", "x-amz-credential", "x-amz-date"} {
		conds = append(conds, map[string]string{name: fields[name]})
	}
	if c.SessionToken != "" {
		fields["x-amz-security-token"] = c.SessionToken
		conds = append(conds, map[string]string{"x-amz-security-token": c.SessionToken})
	}
	if o.MaxSize > 0 {
		conds = append(conds, []any{"content-length-range", o.MinSize, o.MaxSize})
	}
	switch {
	case o.ContentTypePrefix != "":
		fields["Content-Type"] = o.ContentTypePrefix
		conds = append(conds, []any{"starts-with", "$Content-Type", o.ContentTypePrefix})
	case o.ContentType != "":
		fields["Content-Type"] = o.ContentType
		conds = append(conds, map[string]string{"Content-Type": o.ContentType})
	}
	if o.SuccessActionStatus != "" {
		fields["success_action_status"] = o.SuccessActionStatus
		conds = append(conds, map[string]string{"success_action_status": o.SuccessActionStatus})
	}
	doc, err := json.Marshal(map[string]any{"expiration": t.Add(expires).Format(PostPolicyTimeFormat), "conditions": conds})
	if err != nil {
		return nil, errs.E(opPresignPost, errs.Internal, err)
	}
	policy := base64.StdEncoding.EncodeToString(doc)
	fields["policy"] = policy
	fields["x-amz-signature"] = PostPolicySignatureV4(c.SecretKey, cred.date, region, "s3", policy)
	return fields, nil
}
