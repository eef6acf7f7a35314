package obs

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Limits of tags, as S3 has them.
const (
	MaxObjectTags  = 10  // tags on one object
	MaxBucketTags  = 50  // tags on one bucket
	MaxTagKeyLen   = 128 // Unicode characters in a tag key
	MaxTagValueLen = 256 // Unicode characters in a tag value
)

// Tag is one key-value pair of a tag set.
type Tag struct {
	Key   string
	Value string
}

// Tagging directives of CopyObject (x-amz-tagging-directive).
const (
	TaggingCopy    = "COPY"
	TaggingReplace = "REPLACE"
)

// ValidateTags checks a tag set of at most max tags (MaxObjectTags or
// MaxBucketTags) as S3 does: too many is BadRequest; an empty or too long
// key, a too long value, a character outside letters, digits, spaces and
// + - = . _ : / @, a repeated key or a key that starts with "aws:" is
// InvalidTag. A pure function.
func ValidateTags(tags []Tag, max int) error {
	const op errs.Op = "obs.ValidateTags"
	what := "an object"
	if max == MaxBucketTags {
		what = "a bucket"
	}
	if len(tags) > max {
		return fail(op, CodeTooManyTags, fmt.Sprintf("%d tags; %s has at most %d", len(tags), what, max),
			"remove tags, or keep such data in object metadata (x-amz-meta-*)")
	}
	seen := make(map[string]bool, len(tags))
	for _, t := range tags {
		switch {
		case t.Key == "" || !utf8.ValidString(t.Key) || utf8.RuneCountInString(t.Key) > MaxTagKeyLen:
			return fail(op, CodeInvalidTag,
				fmt.Sprintf("the tag key %q is not valid: a key is 1 to %d Unicode characters", t.Key, MaxTagKeyLen), tagCharsHint)
		case !utf8.ValidString(t.Value) || utf8.RuneCountInString(t.Value) > MaxTagValueLen:
			return fail(op, CodeInvalidTag,
				fmt.Sprintf("the value of tag %q is not valid: a value is at most %d Unicode characters", t.Key, MaxTagValueLen), tagCharsHint)
		case strings.HasPrefix(strings.ToLower(t.Key), "aws:"):
			return fail(op, CodeInvalidTag, fmt.Sprintf("the tag key %q starts with aws:, which is reserved for system tags", t.Key),
				"choose a key without the aws: prefix")
		case seen[t.Key]:
			return fail(op, CodeInvalidTag, fmt.Sprintf("the tag key %q is given more than once", t.Key),
				"give each key once; keys are case-sensitive")
		}
		if r, ok := badTagRune(t.Key); ok {
			return fail(op, CodeInvalidTag, fmt.Sprintf("the tag key %q contains %q, which tags may not contain", t.Key, r), tagCharsHint)
		}
		if r, ok := badTagRune(t.Value); ok {
			return fail(op, CodeInvalidTag, fmt.Sprintf("the value of tag %q contains %q, which tags may not contain", t.Key, r), tagCharsHint)
		}
		seen[t.Key] = true
	}
	return nil
}

const tagCharsHint = "tag keys (1-128 characters) and values (0-256) may contain letters, digits, spaces and + - = . _ : / @"

// badTagRune returns the first rune of s that a tag may not contain.
func badTagRune(s string) (rune, bool) {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsSpace(r) || unicode.IsMark(r) || strings.ContainsRune("+-=._:/@", r) {
			continue
		}
		return r, true
	}
	return 0, false
}

// tagMap is a validated tag set as the index stores it; nil when empty.
func tagMap(tags []Tag) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[t.Key] = t.Value
	}
	return m
}

// TagList is the tag set of an object, sorted by key.
func TagList(m map[string]string) []Tag {
	out := make([]Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, Tag{Key: k, Value: m[k]})
	}
	return out
}

// Condition keys of tags (lower case, as the policy evaluator looks them up).
const (
	condExistingObjectTag = "s3:existingobjecttag/"
	condRequestObjectTag  = "s3:requestobjecttag/"
	condRequestTagKeys    = "s3:requestobjecttagkeys"
)

// tagContext adds to ctx (made when nil) the condition keys of an
// existing object's tags (s3:ExistingObjectTag/<key>) and, when request is
// not nil, of the tags the request sets (s3:RequestObjectTag/<key> and
// s3:RequestObjectTagKeys).
func tagContext(ctx map[string][]string, existing *meta.Object, request []Tag) map[string][]string {
	if ctx == nil {
		ctx = map[string][]string{}
	}
	if existing != nil {
		for k, v := range existing.Tags {
			key := condExistingObjectTag + strings.ToLower(k)
			ctx[key] = append(ctx[key], v)
		}
	}
	if request != nil {
		keys := []string{}
		for _, t := range request {
			key := condRequestObjectTag + strings.ToLower(t.Key)
			ctx[key] = append(ctx[key], t.Value)
			keys = append(keys, t.Key)
		}
		ctx[condRequestTagKeys] = keys
	}
	return ctx
}

// readObject reads the index entry of an object for a request that is
// authorized with its tags: nil when there is none.
func (s *Service) readObject(ctx context.Context, op errs.Op, bucket, key string) (*meta.Object, error) {
	o, err := s.store.GetObject(ctx, bucket, key)
	if errs.Is(err, errs.NotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr(op, fmt.Sprintf("reading object %q", key), err)
	}
	return o, nil
}

// checkVersion authorizes action on an object, the version version names
// ("" for the latest), with its tags in the condition context, then
// returns NoSuchKey (NoSuchVersion) if there is none, so that a caller
// without access learns nothing of it; MethodNotAllowed when the version
// is a delete marker (NoSuchKey when the latest is one).
func (s *Service) checkVersion(ctx context.Context, op errs.Op, c *Caller, b *meta.Bucket, action, key, version string, request []Tag) (*meta.Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	o, err := s.findVersion(ctx, op, b, key, version)
	if err != nil {
		return nil, err
	}
	var marker *meta.Object
	if o != nil && o.DeleteMarker {
		marker, o = o, nil
	}
	if err := s.check(op, c, b, action, key, tagContext(nil, o, request)); err != nil {
		return nil, err
	}
	switch {
	case marker != nil:
		return nil, markerError(op, b.Name, key, version, marker)
	case o == nil && version != "":
		return nil, noSuchVersion(op, b.Name, key, version)
	case o == nil:
		return nil, noSuchKey(op, b.Name, key)
	}
	return o, nil
}

// shownVersion is the version id a response about o shows: "" for an
// object of a never-versioned bucket.
func shownVersion(o *meta.Object) string {
	if o == nil || !o.Versioned {
		return ""
	}
	return VersionID(o)
}

// GetObjectTagging returns the object's tags, sorted by key (none: empty).
func (s *Service) GetObjectTagging(ctx context.Context, c *Caller, bucket, key string) ([]Tag, error) {
	tags, _, err := s.GetObjectVersionTagging(ctx, c, bucket, key, "")
	return tags, err
}

// GetObjectVersionTagging returns the tags of a version (version as S3
// shows it; "" for the latest, with obs:GetObjectTagging; else
// obs:GetObjectVersionTagging) and the id of the version read ("" in a
// never-versioned bucket).
func (s *Service) GetObjectVersionTagging(ctx context.Context, c *Caller, bucket, key, version string) ([]Tag, string, error) {
	const op errs.Op = "obs.GetObjectTagging"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, "", err
	}
	action := ActionGetObjectTagging
	if version != "" {
		action = ActionGetObjectVersionTagging
	}
	o, err := s.checkVersion(ctx, op, c, b, action, key, version, nil)
	if err != nil {
		return nil, "", err
	}
	return TagList(o.Tags), shownVersion(o), nil
}

// PutObjectTagging replaces the object's tags (at most MaxObjectTags).
// The object's ETag and LastModified do not change.
func (s *Service) PutObjectTagging(ctx context.Context, c *Caller, bucket, key string, tags []Tag) error {
	_, err := s.PutObjectVersionTagging(ctx, c, bucket, key, "", tags)
	return err
}

// PutObjectVersionTagging is PutObjectTagging of a version ("" for the
// latest; else obs:PutObjectVersionTagging); it returns the version's id
// ("" in a never-versioned bucket).
func (s *Service) PutObjectVersionTagging(ctx context.Context, c *Caller, bucket, key, version string, tags []Tag) (string, error) {
	const op errs.Op = "obs.PutObjectTagging"
	if err := ValidateTags(tags, MaxObjectTags); err != nil {
		return "", err
	}
	if tags == nil {
		tags = []Tag{}
	}
	action := ActionPutObjectTagging
	if version != "" {
		action = ActionPutObjectVersionTagging
	}
	return s.setObjectTags(ctx, op, c, bucket, key, version, action, tags)
}

// DeleteObjectTagging removes the object's tags.
func (s *Service) DeleteObjectTagging(ctx context.Context, c *Caller, bucket, key string) error {
	_, err := s.DeleteObjectVersionTagging(ctx, c, bucket, key, "")
	return err
}

// DeleteObjectVersionTagging is DeleteObjectTagging of a version ("" for
// the latest; else obs:DeleteObjectVersionTagging).
func (s *Service) DeleteObjectVersionTagging(ctx context.Context, c *Caller, bucket, key, version string) (string, error) {
	action := ActionDeleteObjectTagging
	if version != "" {
		action = ActionDeleteObjectVersionTagging
	}
	return s.setObjectTags(ctx, "obs.DeleteObjectTagging", c, bucket, key, version, action, nil)
}

func (s *Service) setObjectTags(ctx context.Context, op errs.Op, c *Caller, bucket, key, version, action string, tags []Tag) (string, error) {
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return "", err
	}
	o, err := s.checkVersion(ctx, op, c, b, action, key, version, tags)
	if err != nil {
		return "", err
	}
	if version == "" {
		_, err = s.store.SetObjectTags(ctx, bucket, key, tagMap(tags))
	} else {
		_, err = s.store.SetObjectVersionTags(ctx, bucket, key, o.VersionID, tagMap(tags))
	}
	switch {
	case errs.Is(err, errs.NotFound) && version != "":
		return "", noSuchVersion(op, bucket, key, version)
	case errs.Is(err, errs.NotFound):
		return "", noSuchKey(op, bucket, key)
	case err != nil:
		return "", storeErr(op, fmt.Sprintf("storing the tags of object %q", key), err)
	}
	return shownVersion(o), nil
}

// GetBucketTagging returns the bucket's tags in the order they were put;
// NoSuchTagSet when it has none.
func (s *Service) GetBucketTagging(ctx context.Context, c *Caller, name string) ([]Tag, error) {
	const op errs.Op = "obs.GetBucketTagging"
	b, err := s.bucket(ctx, op, name)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionGetBucketTagging, "", nil); err != nil {
		return nil, err
	}
	var tags []Tag
	if b.Tags != "" {
		if err := json.Unmarshal([]byte(b.Tags), &tags); err != nil {
			return nil, fail(op, CodeInconsistent, fmt.Sprintf("the stored tag set of bucket %q does not decode", name), "", err)
		}
	}
	if len(tags) == 0 {
		return nil, fail(op, CodeNoSuchTagSet, fmt.Sprintf("bucket %q has no tags", name), "PutBucketTagging sets them")
	}
	return tags, nil
}

// PutBucketTagging replaces the bucket's tags (at most MaxBucketTags); an
// empty set removes them.
func (s *Service) PutBucketTagging(ctx context.Context, c *Caller, name string, tags []Tag) error {
	const op errs.Op = "obs.PutBucketTagging"
	if err := ValidateTags(tags, MaxBucketTags); err != nil {
		return err
	}
	b, err := s.bucket(ctx, op, name)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketTagging, "", nil); err != nil {
		return err
	}
	doc := ""
	if len(tags) > 0 {
		raw, err := json.Marshal(tags)
		if err != nil {
			return errs.E(op, errs.Internal, err)
		}
		doc = string(raw)
	}
	return s.setConfig(ctx, op, name, meta.BucketTags, doc)
}

// DeleteBucketTagging removes the bucket's tags (S3 authorizes it as
// PutBucketTagging); removing none is not an error.
func (s *Service) DeleteBucketTagging(ctx context.Context, c *Caller, name string) error {
	const op errs.Op = "obs.DeleteBucketTagging"
	b, err := s.bucket(ctx, op, name)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketTagging, "", nil); err != nil {
		return err
	}
	return s.setConfig(ctx, op, name, meta.BucketTags, "")
}

// ParseTagging parses the x-amz-tagging header of PutObject,
// CreateMultipartUpload and CopyObject: URL-encoded query parameters,
// "k1=v1&k2=v2" ("k" alone is a key with an empty value), UTF-8, no key
// twice. The tags come in the header's order; they are not validated
// (see ValidateTags). A header that is not of that form is InvalidArgument.
// A pure function.
func ParseTagging(h string) ([]Tag, error) {
	const op errs.Op = "obs.ParseTagging"
	bad := func(why string) error {
		return fail(op, CodeBadTagging, fmt.Sprintf("the x-amz-tagging header %q is not valid: %s", h, why),
			"the header is URL-encoded query parameters, UTF-8, each key once: key1=value1&key2=value2")
	}
	if h == "" {
		return nil, nil
	}
	var tags []Tag
	seen := map[string]bool{}
	for _, pair := range strings.Split(h, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := queryUnescape(k)
		if err != nil {
			return nil, bad("a key is not URL-encoded correctly")
		}
		value, err := queryUnescape(v)
		if err != nil {
			return nil, bad("a value is not URL-encoded correctly")
		}
		if !utf8.ValidString(key) || !utf8.ValidString(value) {
			return nil, bad("it is not UTF-8")
		}
		if seen[key] {
			return nil, bad(fmt.Sprintf("the key %q is given twice", key))
		}
		seen[key] = true
		tags = append(tags, Tag{Key: key, Value: value})
	}
	return tags, nil
}

// EncodeTagging is the x-amz-tagging form of tags, the inverse of
// ParseTagging.
func EncodeTagging(tags []Tag) string {
	parts := make([]string, len(tags))
	for i, t := range tags {
		parts[i] = url.QueryEscape(t.Key) + "=" + url.QueryEscape(t.Value)
	}
	return strings.Join(parts, "&")
}

func queryUnescape(s string) (string, error) { return url.QueryUnescape(s) }
