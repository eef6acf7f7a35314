package obs

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Bulk reads for platform components that move many objects at once (a
// job's inputs): one listing call and one tar stream instead of a request
// per object.

// DefaultListAllLimit is the most objects ListAll returns when the caller
// names no limit.
const DefaultListAllLimit = 100_000

// PAXETag is the PAX record of a WriteObjects entry that holds the object's
// ETag (hex MD5, or "<md5>-<parts>" for a multipart object; no quotes).
const PAXETag = "ATELIER.etag"

// ObjectInfo is an object in a ListAll answer.
type ObjectInfo struct {
	Key          string
	ETag         string // no quotes
	Size         int64
	LastModified time.Time
	// VersionID is the object's version id when its bucket made one (an
	// Enabled bucket's writes); "" for the null version.
	VersionID string
}

// ListAll lists every object whose key starts with prefix, in key order,
// up to limit objects (limit <= 0: DefaultListAllLimit); truncated is set
// when there are more. Directory markers ("dir/") are listed like any
// object. It needs obs:ListBucket with s3:prefix = prefix.
func (s *Service) ListAll(ctx context.Context, c *Caller, bucket, prefix string, limit int) (objects []ObjectInfo, truncated bool, err error) {
	const op errs.Op = "obs.ListAll"
	if limit <= 0 {
		limit = DefaultListAllLimit
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, false, err
	}
	if err := s.check(op, c, b, ActionListBucket, "", map[string][]string{"s3:prefix": {prefix}}); err != nil {
		return nil, false, err
	}
	q := meta.ListObjectsQuery{Bucket: bucket, Prefix: prefix, MaxKeys: DefaultMaxKeys}
	for {
		q.MaxKeys = min(DefaultMaxKeys, limit-len(objects)+1) // one past the limit tells it is truncated
		page, err := s.store.ListObjects(ctx, q)
		if errs.Is(err, errs.NotFound) {
			return nil, false, noSuchBucket(op, bucket)
		}
		if err != nil {
			return nil, false, storeErr(op, fmt.Sprintf("listing bucket %q", bucket), err)
		}
		for _, o := range page.Objects {
			if len(objects) == limit {
				return objects, true, nil
			}
			objects = append(objects, ObjectInfo{Key: o.Key, ETag: o.ETag, Size: o.Size, LastModified: o.LastModified, VersionID: o.VersionID})
		}
		if !page.Truncated {
			return objects, false, nil
		}
		q.StartAfter = page.NextStartAfter
	}
}

// WriteObjects writes the named objects of bucket to w as a tar stream:
// one regular-file entry per object, named by its key verbatim, with the
// object's size and modification time and its ETag in the PAX record
// PAXETag. Entries come in key order, each key once. A key whose object
// does not exist when its page of the index is read has no entry: the
// reader notices and handles the gap. An object is sent as that read found
// it, bytes and ETag, even if it is overwritten or deleted before its
// entry is written.
//
// Every key is validated and authorized (obs:GetObject) before the first
// byte is written, so a refusal is an error, not a broken stream: as a GET
// is, with the object the index holds (its tags in the condition context,
// its ACL), or as a GET of a missing key when there is none. Reading the
// objects goes straight to the index and the blob store; keys that lie
// close together in the bucket are looked up by range scans of the index
// rather than one lookup each (twice: to authorize, then to write, when
// each object is authorized again as it is then).
func (s *Service) WriteObjects(ctx context.Context, c *Caller, bucket string, keys []string, w io.Writer) error {
	const op errs.Op = "obs.WriteObjects"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, k := range keys {
		if err := ValidateKey(k); err != nil {
			return err
		}
	}
	authz := func(key string, o *meta.Object) error {
		return s.checkWithObject(op, c, b, ActionGetObject, key, o, tagContext(nil, o, nil))
	}
	found := make(map[string]bool, len(keys))
	err = s.lookupKeys(ctx, op, bucket, keys, func(o *meta.Object) error {
		found[o.Key] = true
		return authz(o.Key, o)
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !found[k] {
			if err := authz(k, nil); err != nil {
				return err
			}
		}
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	tw := tar.NewWriter(bw)
	err = s.lookupKeys(ctx, op, bucket, keys, func(o *meta.Object) error {
		if err := authz(o.Key, o); err != nil { // re-tagged since: the stream breaks
			return err
		}
		return s.writeEntry(ctx, op, tw, bucket, o)
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return errs.E(op, errs.IO, "writing the archive", err)
	}
	if err := bw.Flush(); err != nil {
		return errs.E(op, errs.IO, "writing the archive", err)
	}
	return nil
}

// writeEntry writes one object, whose blobs the caller has pinned.
func (s *Service) writeEntry(ctx context.Context, op errs.Op, tw *tar.Writer, bucket string, o *meta.Object) error {
	body, err := openRange(ctx, s.blobs, bucket+"/"+o.Key, o.Blobs, 0, o.Size)
	if err != nil {
		return err
	}
	defer body.Close()
	h := &tar.Header{Typeflag: tar.TypeReg, Name: o.Key, Mode: 0o644, Size: o.Size, ModTime: o.LastModified,
		PAXRecords: map[string]string{PAXETag: o.ETag}, Format: tar.FormatPAX}
	if err := writeHeader(op, tw, h); err != nil {
		return err
	}
	if _, err := io.Copy(tw, body); err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("archiving object %q", o.Key), err)
	}
	return nil
}

// lookupKeys calls fn with the index entry of each of the sorted, distinct
// keys that exists, in order. It reads pages of the index from just before
// the next key wanted, so a dense set of keys (most of a prefix) costs a
// query per page, and a sparse one a query per key at worst. The blobs of a
// page's objects are pinned when the page is read, and each object's are
// let go once fn returns for it: fn reads an object as the page found it.
func (s *Service) lookupKeys(ctx context.Context, op errs.Op, bucket string, keys []string, fn func(*meta.Object) error) error {
	if len(keys) == 0 {
		return nil
	}
	prefix := sharedPrefix(keys)
	start := before(keys[0])
	for i := 0; i < len(keys); {
		q := meta.ListObjectsQuery{Bucket: bucket, Prefix: prefix, StartAfter: start,
			MaxKeys: min(DefaultMaxKeys, len(keys)-i+8), Access: true}
		t := s.pins.begin()
		page, err := s.store.ListObjects(ctx, q)
		if err != nil {
			s.abandon(ctx, t)
			if errs.Is(err, errs.NotFound) {
				return noSuchBucket(op, bucket)
			}
			return storeErr(op, fmt.Sprintf("listing bucket %q", bucket), err)
		}
		var found []*meta.Object
		for _, o := range page.Objects {
			for i < len(keys) && keys[i] < o.Key {
				i++ // not there: deleted
			}
			if i == len(keys) {
				break
			}
			if keys[i] == o.Key {
				found = append(found, o)
				i++
			}
		}
		if err := s.eachPinned(ctx, t, found, fn); err != nil {
			return err
		}
		if i == len(keys) || !page.Truncated {
			return nil // the keys left sort after every object under the prefix
		}
		// Every key up to the page's last entry is settled: go on from there,
		// or skip ahead to just before the next key.
		start = page.NextStartAfter
		if i < len(keys) {
			start = max(start, before(keys[i]))
		}
	}
	return nil
}

// eachPinned pins the blobs of objs (found by lookup t), then calls fn
// with each object in turn, letting go of its blobs when fn returns.
func (s *Service) eachPinned(ctx context.Context, t ticket, objs []*meta.Object, fn func(*meta.Object) error) error {
	ids := make([][]string, len(objs))
	var all []string
	for k, o := range objs {
		ids[k] = blobIDs(o.Blobs)
		all = append(all, ids[k]...)
	}
	s.deleteNow(ctx, s.pins.pin(t, all))
	for k, o := range objs {
		err := fn(o)
		s.deleteNow(ctx, s.pins.unpin(ids[k]))
		if err != nil {
			for _, rest := range ids[k+1:] {
				s.deleteNow(ctx, s.pins.unpin(rest))
			}
			return err
		}
	}
	return nil
}

// before is a string that sorts just before key: key without its last
// rune (valid UTF-8, as StartAfter must be). The index entries between it
// and key are read and skipped.
func before(key string) string {
	_, n := utf8.DecodeLastRuneInString(key)
	return key[:len(key)-n]
}

// sharedPrefix is the longest prefix, ending on a rune boundary, that all
// the sorted keys share.
func sharedPrefix(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	first, last := keys[0], keys[len(keys)-1]
	n := 0
	for n < len(first) && n < len(last) && first[n] == last[n] {
		n++
	}
	for n > 0 && n < len(first) && !utf8.RuneStart(first[n]) {
		n--
	}
	return strings.Clone(first[:n])
}
