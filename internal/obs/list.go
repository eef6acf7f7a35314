package obs

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// DefaultMaxKeys is the page size when a list request names none; it is
// also the largest page.
const DefaultMaxKeys = 1000

// ListOptions select a page of ListObjects (v1 or v2).
type ListOptions struct {
	Prefix    string
	Delimiter string
	// MaxKeys is the most objects and common prefixes in the page: 0 asks
	// for none (S3's max-keys=0), above DefaultMaxKeys is DefaultMaxKeys,
	// negative is invalid. Pass DefaultMaxKeys when the client sent none.
	MaxKeys int
	// V2 selects ListObjectsV2: StartAfter and ContinuationToken instead of
	// Marker; the result has NextContinuationToken.
	V2                bool
	Marker            string // v1: list keys after it
	StartAfter        string // v2: list keys after it (on the first page)
	ContinuationToken string // v2: NextContinuationToken of the previous page; wins over StartAfter
	FetchOwner        bool   // fill in each object's Owner (v1 always shows owners)
}

// Owner is the owner of an object in a listing.
type Owner struct {
	ID          string
	DisplayName string
}

// ListedObject is an object in a listing.
type ListedObject struct {
	*meta.Object
	Owner *Owner // with FetchOwner
}

// ListResult is a page of objects and common prefixes, in key order.
type ListResult struct {
	Objects               []ListedObject
	CommonPrefixes        []string
	IsTruncated           bool
	NextMarker            string // v1, when truncated: the Marker of the next page
	NextContinuationToken string // v2, when truncated: opaque
	KeyCount              int    // objects + common prefixes
}

// ListObjects lists a page of the bucket's objects: keys under Prefix,
// grouped into common prefixes at the first Delimiter after the prefix.
// It needs obs:ListBucket (with the condition keys s3:prefix, s3:delimiter
// and s3:max-keys).
func (s *Service) ListObjects(ctx context.Context, c *Caller, bucket string, o ListOptions) (*ListResult, error) {
	const op errs.Op = "obs.ListObjects"
	if o.MaxKeys < 0 {
		return nil, fail(op, CodeBadListArgument, fmt.Sprintf("max-keys is %d; it must be 0 to %d", o.MaxKeys, DefaultMaxKeys), "")
	}
	start := o.Marker
	if o.V2 {
		start = o.StartAfter
		if o.ContinuationToken != "" {
			t, err := decodeToken(o.ContinuationToken)
			if err != nil {
				return nil, fail(op, CodeBadContinuationToken, "the continuation token is not one this server issued",
					"pass NextContinuationToken of the previous page unchanged, or start again without a token")
			}
			start = t
		}
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	cond := map[string][]string{
		"s3:prefix":   {o.Prefix},
		"s3:max-keys": {strconv.Itoa(o.MaxKeys)},
	}
	if o.Delimiter != "" {
		cond["s3:delimiter"] = []string{o.Delimiter}
	}
	if err := s.check(op, c, b, ActionListBucket, "", cond); err != nil {
		return nil, err
	}
	res := &ListResult{}
	if o.MaxKeys == 0 {
		return res, nil
	}
	page, err := s.store.ListObjects(ctx, meta.ListObjectsQuery{
		Bucket: bucket, Prefix: o.Prefix, Delimiter: o.Delimiter, StartAfter: start,
		MaxKeys: min(o.MaxKeys, DefaultMaxKeys),
	})
	if errs.Is(err, errs.NotFound) {
		return nil, noSuchBucket(op, bucket)
	}
	if err != nil {
		return nil, storeErr(op, fmt.Sprintf("listing bucket %q", bucket), err)
	}
	names := map[string]string{}
	for _, obj := range page.Objects {
		e := ListedObject{Object: obj}
		if o.FetchOwner {
			e.Owner = &Owner{ID: obj.OwnerID, DisplayName: s.userName(ctx, names, obj.OwnerID)}
		}
		res.Objects = append(res.Objects, e)
	}
	res.CommonPrefixes = page.CommonPrefixes
	res.KeyCount = len(page.Objects) + len(page.CommonPrefixes)
	if page.Truncated {
		res.IsTruncated = true
		if o.V2 {
			res.NextContinuationToken = encodeToken(page.NextStartAfter)
		} else {
			res.NextMarker = page.NextStartAfter
		}
	}
	return res, nil
}

// userName is the display name of a user id, looked up once per listing.
func (s *Service) userName(ctx context.Context, cache map[string]string, id string) string {
	if n, ok := cache[id]; ok {
		return n
	}
	n := id
	if s.users != nil && id != "" {
		if got := s.users.UserName(ctx, id); got != "" {
			n = got
		}
	}
	cache[id] = n
	return n
}

// Continuation tokens are the base64 of the key to start after, with a
// version byte so the form can change.
const tokenVersion = '1'

func encodeToken(startAfter string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{tokenVersion}, startAfter...))
}

func decodeToken(t string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return "", err
	}
	if len(raw) < 2 || raw[0] != tokenVersion || !utf8.Valid(raw[1:]) {
		return "", fmt.Errorf("malformed token")
	}
	return string(raw[1:]), nil
}
