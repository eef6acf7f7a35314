// Package obsmem is an in-memory implementation of obsclient.S3 for tests:
// buckets, objects with S3's ETags (the MD5 of a single-part upload, the
// multipart form "<md5 of part md5s>-N" otherwise), multipart uploads with
// S3's minimum part size, and a log of calls. Fault lets a test fail chosen
// calls.
package obsmem

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient"
)

// Call is one call made to a Store.
type Call struct {
	Op     string // the S3 method name, e.g. "UploadPart"
	Bucket string
	Key    string
	Part   int // UploadPart only
}

// Store is an in-memory S3. Its zero value is not usable; call New.
type Store struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	uploads map[string]*upload
	nextID  int
	calls   []Call
	fault   func(Call) error
	now     func() time.Time
	// minPartSize is the least size of every part but the last, checked
	// by CompleteMultipart as S3 does (EntityTooSmall).
	minPartSize int64
}

type bucket struct {
	created time.Time
	objects map[string]*object
}

type object struct {
	data        []byte
	etag        string
	modified    time.Time
	contentType string
}

type upload struct {
	bucket, key, contentType string
	parts                    map[int]*part
	initiated                time.Time
}

type part struct {
	data []byte
	etag string
	sum  []byte
}

var _ obsclient.S3 = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{
		buckets:     map[string]*bucket{},
		uploads:     map[string]*upload{},
		now:         time.Now,
		minPartSize: obsclient.MinPartSize,
	}
}

// SetFault makes every later call ask f before it does anything: f sees
// the call (already logged by Calls) and fails it by returning an error;
// nil removes the fault.
func (s *Store) SetFault(f func(Call) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// SetClock sets the time stamps of later writes.
func (s *Store) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// SetMinPartSize sets the least size of every part but the last.
func (s *Store) SetMinPartSize(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.minPartSize = n
}

// Calls returns the calls made so far, successful or not, in order.
func (s *Store) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Count is the number of calls made to op.
func (s *Store) Count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Op == op {
			n++
		}
	}
	return n
}

// Object returns the content of an object.
func (s *Store) Object(bucketName, key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[bucketName]
	if b == nil || b.objects[key] == nil {
		return nil, false
	}
	return slices.Clone(b.objects[key].data), true
}

// Keys lists the keys of a bucket, sorted.
func (s *Store) Keys(bucketName string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[bucketName]
	if b == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(b.objects))
}

// Uploads is the number of incomplete multipart uploads.
func (s *Store) Uploads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.uploads)
}

// PutObject stores an object directly (without a call), for fixtures.
func (s *Store) PutObject(bucketName, key string, data []byte, modified time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[bucketName]
	if b == nil {
		b = &bucket{created: modified, objects: map[string]*object{}}
		s.buckets[bucketName] = b
	}
	sum := md5.Sum(data)
	b.objects[key] = &object{data: slices.Clone(data), etag: hex.EncodeToString(sum[:]), modified: modified}
}

// begin logs a call and consults the fault; it returns with s.mu held
// when err is nil.
func (s *Store) begin(ctx context.Context, c Call) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	f := s.fault
	s.calls = append(s.calls, c)
	if f != nil {
		s.mu.Unlock()
		if err := f(c); err != nil {
			return err
		}
		s.mu.Lock()
	}
	return nil
}

func (s *Store) bucketLocked(name string) (*bucket, error) {
	b := s.buckets[name]
	if b == nil {
		return nil, obsclient.S3Error("NoSuchBucket", "The specified bucket does not exist", name, "")
	}
	return b, nil
}

func (s *Store) objectLocked(bucketName, key string) (*object, error) {
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return nil, err
	}
	o := b.objects[key]
	if o == nil {
		return nil, obsclient.S3Error("NoSuchKey", "The specified key does not exist.", bucketName, key)
	}
	return o, nil
}

func (s *Store) info(key string, o *object) obsclient.Object {
	return obsclient.Object{Key: key, Size: int64(len(o.data)), ETag: o.etag, LastModified: o.modified, ContentType: o.contentType}
}

// MakeBucket implements obsclient.S3.
func (s *Store) MakeBucket(ctx context.Context, name string) error {
	if err := s.begin(ctx, Call{Op: "MakeBucket", Bucket: name}); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.buckets[name] != nil {
		return obsclient.S3Error("BucketAlreadyOwnedByYou", "", name, "")
	}
	s.buckets[name] = &bucket{created: s.now(), objects: map[string]*object{}}
	return nil
}

// RemoveBucket implements obsclient.S3.
func (s *Store) RemoveBucket(ctx context.Context, name string) error {
	if err := s.begin(ctx, Call{Op: "RemoveBucket", Bucket: name}); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(name)
	if err != nil {
		return err
	}
	if len(b.objects) > 0 {
		return obsclient.S3Error("BucketNotEmpty", "", name, "")
	}
	for _, u := range s.uploads {
		if u.bucket == name {
			return obsclient.S3Error("BucketNotEmpty", "The bucket has incomplete multipart uploads", name, "")
		}
	}
	delete(s.buckets, name)
	return nil
}

// BucketExists implements obsclient.S3.
func (s *Store) BucketExists(ctx context.Context, name string) (bool, error) {
	if err := s.begin(ctx, Call{Op: "BucketExists", Bucket: name}); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	return s.buckets[name] != nil, nil
}

// ListBuckets implements obsclient.S3.
func (s *Store) ListBuckets(ctx context.Context) ([]obsclient.Bucket, error) {
	if err := s.begin(ctx, Call{Op: "ListBuckets"}); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []obsclient.Bucket
	for _, name := range slices.Sorted(maps.Keys(s.buckets)) {
		out = append(out, obsclient.Bucket{Name: name, Created: s.buckets[name].created})
	}
	return out, nil
}

// List implements obsclient.S3: the matching keys (and, without
// Recursive, common prefixes at "/") in key order.
func (s *Store) List(ctx context.Context, bucketName string, opts obsclient.ListOptions) iter.Seq2[obsclient.Object, error] {
	return func(yield func(obsclient.Object, error) bool) {
		if err := s.begin(ctx, Call{Op: "List", Bucket: bucketName, Key: opts.Prefix}); err != nil {
			yield(obsclient.Object{}, err)
			return
		}
		b, err := s.bucketLocked(bucketName)
		if err != nil {
			s.mu.Unlock()
			yield(obsclient.Object{}, err)
			return
		}
		var out []obsclient.Object
		seen := map[string]bool{}
		for _, k := range slices.Sorted(maps.Keys(b.objects)) {
			if !strings.HasPrefix(k, opts.Prefix) {
				continue
			}
			if !opts.Recursive {
				if i := strings.Index(k[len(opts.Prefix):], "/"); i >= 0 {
					p := k[:len(opts.Prefix)+i+1]
					if !seen[p] {
						seen[p] = true
						out = append(out, obsclient.Object{Key: p, Prefix: true})
					}
					continue
				}
			}
			out = append(out, s.info(k, b.objects[k]))
		}
		s.mu.Unlock()
		for _, o := range out {
			if !yield(o, nil) {
				return
			}
		}
	}
}

// Stat implements obsclient.S3.
func (s *Store) Stat(ctx context.Context, bucketName, key string) (obsclient.Object, error) {
	if err := s.begin(ctx, Call{Op: "Stat", Bucket: bucketName, Key: key}); err != nil {
		return obsclient.Object{}, err
	}
	defer s.mu.Unlock()
	o, err := s.objectLocked(bucketName, key)
	if err != nil {
		return obsclient.Object{}, err
	}
	return s.info(key, o), nil
}

// Get implements obsclient.S3.
func (s *Store) Get(ctx context.Context, bucketName, key string, offset, length int64) (io.ReadCloser, obsclient.Object, error) {
	return s.GetMatch(ctx, bucketName, key, offset, length, "")
}

// GetMatch implements obsclient.MatchGetter.
func (s *Store) GetMatch(ctx context.Context, bucketName, key string, offset, length int64, etag string) (io.ReadCloser, obsclient.Object, error) {
	if err := s.begin(ctx, Call{Op: "Get", Bucket: bucketName, Key: key}); err != nil {
		return nil, obsclient.Object{}, err
	}
	defer s.mu.Unlock()
	o, err := s.objectLocked(bucketName, key)
	if err != nil {
		return nil, obsclient.Object{}, err
	}
	if etag != "" && strings.Trim(etag, `"`) != strings.Trim(o.etag, `"`) {
		return nil, obsclient.Object{}, obsclient.S3Error("PreconditionFailed", "", bucketName, key)
	}
	size := int64(len(o.data))
	end := size
	if length >= 0 {
		end = min(offset+length, size)
	}
	if offset < 0 || offset > size || (offset == size && size > 0) {
		return nil, obsclient.Object{}, obsclient.S3Error("InvalidRange", "", bucketName, key)
	}
	return io.NopCloser(bytes.NewReader(o.data[offset:end])), s.info(key, o), nil
}

// Put implements obsclient.S3.
func (s *Store) Put(ctx context.Context, bucketName, key string, body io.Reader, size int64, opts obsclient.PutOptions) (string, error) {
	data, err := readBody(body, size)
	if err != nil {
		return "", err
	}
	if err := s.begin(ctx, Call{Op: "Put", Bucket: bucketName, Key: key}); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return "", err
	}
	sum := md5.Sum(data)
	o := &object{data: data, etag: hex.EncodeToString(sum[:]), modified: s.now(), contentType: opts.ContentType}
	b.objects[key] = o
	return o.etag, nil
}

// readBody reads exactly size bytes.
func readBody(body io.Reader, size int64) ([]byte, error) {
	data := make([]byte, size)
	n, err := io.ReadFull(body, data)
	if err == io.ErrUnexpectedEOF || err == io.EOF && size > 0 {
		return nil, obsclient.S3Error("IncompleteBody", fmt.Sprintf("read %d bytes, want %d", n, size), "", "")
	}
	if err != nil {
		return nil, err
	}
	if m, _ := body.Read(make([]byte, 1)); m > 0 {
		return nil, obsclient.S3Error("IncompleteBody", fmt.Sprintf("more than %d bytes", size), "", "")
	}
	return data, nil
}

// CreateMultipart implements obsclient.S3.
func (s *Store) CreateMultipart(ctx context.Context, bucketName, key string, opts obsclient.PutOptions) (string, error) {
	if err := s.begin(ctx, Call{Op: "CreateMultipart", Bucket: bucketName, Key: key}); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	if _, err := s.bucketLocked(bucketName); err != nil {
		return "", err
	}
	s.nextID++
	id := fmt.Sprintf("upload-%d", s.nextID)
	s.uploads[id] = &upload{bucket: bucketName, key: key, contentType: opts.ContentType, parts: map[int]*part{}, initiated: s.now()}
	return id, nil
}

func (s *Store) uploadLocked(bucketName, key, id string) (*upload, error) {
	u := s.uploads[id]
	if u == nil || u.bucket != bucketName || u.key != key {
		return nil, obsclient.S3Error("NoSuchUpload", "", bucketName, key)
	}
	return u, nil
}

// UploadPart implements obsclient.S3.
func (s *Store) UploadPart(ctx context.Context, bucketName, key, uploadID string, number int, body io.Reader, size int64) (obsclient.Part, error) {
	data, err := readBody(body, size)
	if err != nil {
		return obsclient.Part{}, err
	}
	if err := s.begin(ctx, Call{Op: "UploadPart", Bucket: bucketName, Key: key, Part: number}); err != nil {
		return obsclient.Part{}, err
	}
	defer s.mu.Unlock()
	u, err := s.uploadLocked(bucketName, key, uploadID)
	if err != nil {
		return obsclient.Part{}, err
	}
	if number < 1 || number > obsclient.MaxParts {
		return obsclient.Part{}, obsclient.S3Error("InvalidArgument", "part number out of range", bucketName, key)
	}
	sum := md5.Sum(data)
	p := &part{data: data, etag: hex.EncodeToString(sum[:]), sum: sum[:]}
	u.parts[number] = p
	return obsclient.Part{Number: number, ETag: p.etag, Size: size}, nil
}

// CompleteMultipart implements obsclient.S3.
func (s *Store) CompleteMultipart(ctx context.Context, bucketName, key, uploadID string, parts []obsclient.Part) (string, error) {
	if err := s.begin(ctx, Call{Op: "CompleteMultipart", Bucket: bucketName, Key: key}); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	u, err := s.uploadLocked(bucketName, key, uploadID)
	if err != nil {
		return "", err
	}
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return "", err
	}
	if len(parts) == 0 {
		return "", obsclient.S3Error("InvalidRequest", "no parts", bucketName, key)
	}
	var total int
	for _, cp := range parts {
		if p := u.parts[cp.Number]; p != nil {
			total += len(p.data)
		}
	}
	data := make([]byte, 0, total)
	var sums [][]byte
	for i, cp := range parts {
		p := u.parts[cp.Number]
		if p == nil || !strings.EqualFold(p.etag, strings.Trim(cp.ETag, `"`)) {
			return "", obsclient.S3Error("InvalidPart", fmt.Sprintf("part %d", cp.Number), bucketName, key)
		}
		if i > 0 && cp.Number <= parts[i-1].Number {
			return "", obsclient.S3Error("InvalidPartOrder", "", bucketName, key)
		}
		if i < len(parts)-1 && int64(len(p.data)) < s.minPartSize {
			return "", obsclient.S3Error("EntityTooSmall", fmt.Sprintf("part %d has %d bytes", cp.Number, len(p.data)), bucketName, key)
		}
		data = append(data, p.data...)
		sums = append(sums, p.sum)
	}
	o := &object{data: data, etag: obsclient.MultipartETag(sums), modified: s.now(), contentType: u.contentType}
	b.objects[key] = o
	delete(s.uploads, uploadID)
	return o.etag, nil
}

// AbortMultipart implements obsclient.S3.
func (s *Store) AbortMultipart(ctx context.Context, bucketName, key, uploadID string) error {
	if err := s.begin(ctx, Call{Op: "AbortMultipart", Bucket: bucketName, Key: key}); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, err := s.uploadLocked(bucketName, key, uploadID); err != nil {
		return err
	}
	delete(s.uploads, uploadID)
	return nil
}

// ListParts implements obsclient.S3.
func (s *Store) ListParts(ctx context.Context, bucketName, key, uploadID string) ([]obsclient.Part, error) {
	if err := s.begin(ctx, Call{Op: "ListParts", Bucket: bucketName, Key: key}); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	u, err := s.uploadLocked(bucketName, key, uploadID)
	if err != nil {
		return nil, err
	}
	var out []obsclient.Part
	for _, n := range slices.Sorted(maps.Keys(u.parts)) {
		out = append(out, obsclient.Part{Number: n, ETag: u.parts[n].etag, Size: int64(len(u.parts[n].data))})
	}
	return out, nil
}

// ListUploads implements obsclient.S3.
func (s *Store) ListUploads(ctx context.Context, bucketName, prefix string) ([]obsclient.MultipartUpload, error) {
	if err := s.begin(ctx, Call{Op: "ListUploads", Bucket: bucketName, Key: prefix}); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if _, err := s.bucketLocked(bucketName); err != nil {
		return nil, err
	}
	var out []obsclient.MultipartUpload
	for id, u := range s.uploads {
		if u.bucket == bucketName && strings.HasPrefix(u.key, prefix) {
			out = append(out, obsclient.MultipartUpload{Key: u.key, UploadID: id, Initiated: u.initiated})
		}
	}
	slices.SortFunc(out, func(a, b obsclient.MultipartUpload) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.UploadID, b.UploadID))
	})
	return out, nil
}

// Copy implements obsclient.S3.
func (s *Store) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string) (string, error) {
	if err := s.begin(ctx, Call{Op: "Copy", Bucket: dstBucket, Key: dstKey}); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	o, err := s.objectLocked(srcBucket, srcKey)
	if err != nil {
		return "", err
	}
	b, err := s.bucketLocked(dstBucket)
	if err != nil {
		return "", err
	}
	c := *o
	c.data = slices.Clone(o.data)
	c.modified = s.now()
	b.objects[dstKey] = &c
	return c.etag, nil
}

// Remove implements obsclient.S3; removing a missing key succeeds, as in S3.
func (s *Store) Remove(ctx context.Context, bucketName, key string) error {
	if err := s.begin(ctx, Call{Op: "Remove", Bucket: bucketName, Key: key}); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return err
	}
	delete(b.objects, key)
	return nil
}

// RemoveMany implements obsclient.S3.
func (s *Store) RemoveMany(ctx context.Context, bucketName string, keys []string) error {
	if err := s.begin(ctx, Call{Op: "RemoveMany", Bucket: bucketName}); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return err
	}
	for _, k := range keys {
		delete(b.objects, k)
	}
	return nil
}

// PresignGet implements obsclient.S3 with a fake URL that names the object
// and the expiry.
func (s *Store) PresignGet(ctx context.Context, bucketName, key string, expires time.Duration) (string, error) {
	if err := s.begin(ctx, Call{Op: "PresignGet", Bucket: bucketName, Key: key}); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	if expires <= 0 {
		return "", errs.E("obsmem.PresignGet", errs.Invalid, "expiry must be positive")
	}
	return fmt.Sprintf("http://obsmem.invalid/%s/%s?X-Amz-Expires=%d", bucketName, key, int(expires/time.Second)), nil
}
