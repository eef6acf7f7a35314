package obsclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsurl"
)

// Region is the region Atelier's OBS signs with (one region per server).
const Region = "us-east-1"

// MinioOptions tune the minio-go adapter.
type MinioOptions struct {
	// Conns is the number of requests expected in flight at once (jobs
	// × parts): the transport keeps that many idle connections to the
	// endpoint so they are reused rather than reopened.
	Conns int
	// AppName and AppVersion go into the User-Agent.
	AppName, AppVersion string
	// SessionToken goes with the key pair of temporary credentials (a
	// job's); empty for a user's own access key.
	SessionToken string
}

// minioS3 is S3 over minio-go.
type minioS3 struct {
	core     *minio.Core
	endpoint string
}

// NewMinio returns an S3 for the S3 endpoint and key pair of cfg, with
// path-style addressing, region us-east-1, and one keep-alive transport
// shared by every request.
func NewMinio(cfg *config.ClientConfig, opt MinioOptions) (S3, error) {
	const op errs.Op = "obsclient.NewMinio"
	hint := errs.Hint("set s3_endpoint with `atelier configure --s3-endpoint http://HOST:9000` or ATELIER_S3_ENDPOINT")
	if cfg.S3Endpoint == "" {
		return nil, errs.E(op, errs.Invalid, hint, "no S3 endpoint is configured")
	}
	u, err := url.Parse(cfg.S3Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errs.E(op, errs.Invalid, hint, fmt.Sprintf("s3_endpoint %q is not an http(s) URL", cfg.S3Endpoint))
	}
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return nil, errs.E(op, errs.Invalid, hint, fmt.Sprintf("s3_endpoint %q must not have a path", cfg.S3Endpoint))
	}
	core, err := minio.NewCore(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, opt.SessionToken),
		Secure:       u.Scheme == "https",
		Transport:    newTransport(max(opt.Conns, 1)),
		Region:       Region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   5,
	})
	if err != nil {
		return nil, errs.E(op, errs.Invalid, hint, fmt.Sprintf("cannot use s3_endpoint %q: %v", cfg.S3Endpoint, err))
	}
	if opt.AppName != "" {
		core.SetAppInfo(opt.AppName, opt.AppVersion)
	}
	return &minioS3{core: core, endpoint: u.Scheme + "://" + u.Host}, nil
}

// newTransport is the one transport of an adapter: keep-alive, conns idle
// connections per host, no compression (bodies are mostly binary).
func newTransport(conns int) *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          conns + 8,
		MaxIdleConnsPerHost:   conns + 8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		WriteBufferSize:       256 << 10,
		ReadBufferSize:        256 << 10,
	}
}

// fail translates a minio-go error about bucket/key.
func (m *minioS3) fail(err error, bucket, key string) error {
	if err == nil {
		return nil
	}
	if isCanceled(err) {
		return err
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code != "" {
		return S3Error(resp.Code, resp.Message, bucket, key)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return errs.E("obsclient.S3", errs.Unavailable,
			errs.Hint("is the server running? check s3_endpoint of the client config (`atelier configure`) or ATELIER_S3_ENDPOINT"),
			fmt.Sprintf("cannot reach the S3 endpoint %s: %v", m.endpoint, ue.Err))
	}
	return errs.E("obsclient.S3", errs.IO, fmt.Sprintf("request for %s failed: %v", obsurl.Format(bucket, key), err))
}

func (m *minioS3) MakeBucket(ctx context.Context, bucket string) error {
	return m.fail(m.core.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: Region}), bucket, "")
}

func (m *minioS3) RemoveBucket(ctx context.Context, bucket string) error {
	return m.fail(m.core.RemoveBucket(ctx, bucket), bucket, "")
}

func (m *minioS3) BucketExists(ctx context.Context, bucket string) (bool, error) {
	ok, err := m.core.BucketExists(ctx, bucket)
	return ok, m.fail(err, bucket, "")
}

func (m *minioS3) ListBuckets(ctx context.Context) ([]Bucket, error) {
	bs, err := m.core.ListBuckets(ctx)
	if err != nil {
		return nil, m.fail(err, "", "")
	}
	out := make([]Bucket, len(bs))
	for i, b := range bs {
		out[i] = Bucket{Name: b.Name, Created: b.CreationDate}
	}
	return out, nil
}

func (m *minioS3) List(ctx context.Context, bucket string, opts ListOptions) iter.Seq2[Object, error] {
	return func(yield func(Object, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for oi := range m.core.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: opts.Prefix, Recursive: opts.Recursive}) {
			if oi.Err != nil {
				yield(Object{}, m.fail(oi.Err, bucket, opts.Prefix))
				return
			}
			o := objectOf(oi)
			if !opts.Recursive && strings.HasSuffix(oi.Key, "/") && oi.ETag == "" && oi.LastModified.IsZero() {
				o = Object{Key: oi.Key, Prefix: true}
			}
			if !yield(o, nil) {
				return
			}
		}
	}
}

func objectOf(oi minio.ObjectInfo) Object {
	return Object{Key: oi.Key, Size: oi.Size, ETag: strings.Trim(oi.ETag, `"`), LastModified: oi.LastModified, ContentType: oi.ContentType}
}

func (m *minioS3) Stat(ctx context.Context, bucket, key string) (Object, error) {
	oi, err := m.core.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, m.fail(err, bucket, key)
	}
	return objectOf(oi), nil
}

func (m *minioS3) Get(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, Object, error) {
	return m.GetMatch(ctx, bucket, key, offset, length, "")
}

// GetMatch is Get with If-Match etag ("" for none).
func (m *minioS3) GetMatch(ctx context.Context, bucket, key string, offset, length int64, etag string) (io.ReadCloser, Object, error) {
	return m.GetVersionMatch(ctx, bucket, key, "", offset, length, etag)
}

// GetVersionMatch is GetMatch of version versionID ("" for the current
// object).
func (m *minioS3) GetVersionMatch(ctx context.Context, bucket, key, versionID string, offset, length int64, etag string) (io.ReadCloser, Object, error) {
	opts := minio.GetObjectOptions{VersionID: versionID}
	if etag != "" {
		if err := opts.SetMatchETag(strings.Trim(etag, `"`)); err != nil {
			return nil, Object{}, errs.E("obsclient.S3", errs.Invalid, fmt.Sprintf("bad ETag for %s: %v", obsurl.Format(bucket, key), err))
		}
	}
	switch {
	case length >= 0:
		if err := opts.SetRange(offset, offset+length-1); err != nil {
			return nil, Object{}, errs.E("obsclient.S3", errs.Invalid, fmt.Sprintf("bad range of %s: %v", obsurl.Format(bucket, key), err))
		}
	case offset > 0:
		if err := opts.SetRange(offset, 0); err != nil {
			return nil, Object{}, errs.E("obsclient.S3", errs.Invalid, fmt.Sprintf("bad range of %s: %v", obsurl.Format(bucket, key), err))
		}
	}
	body, oi, _, err := m.core.GetObject(ctx, bucket, key, opts)
	if err != nil {
		return nil, Object{}, m.fail(err, bucket, key)
	}
	return body, objectOf(oi), nil
}

func (m *minioS3) Put(ctx context.Context, bucket, key string, body io.Reader, size int64, opts PutOptions) (string, error) {
	info, err := m.core.PutObject(ctx, bucket, key, body, size, "", "", minio.PutObjectOptions{
		ContentType: opts.ContentType, DisableContentSha256: true,
	})
	return strings.Trim(info.ETag, `"`), m.fail(err, bucket, key)
}

func (m *minioS3) CreateMultipart(ctx context.Context, bucket, key string, opts PutOptions) (string, error) {
	id, err := m.core.NewMultipartUpload(ctx, bucket, key, minio.PutObjectOptions{ContentType: opts.ContentType})
	return id, m.fail(err, bucket, key)
}

func (m *minioS3) UploadPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (Part, error) {
	p, err := m.core.PutObjectPart(ctx, bucket, key, uploadID, number, body, size, minio.PutObjectPartOptions{DisableContentSha256: true})
	if err != nil {
		return Part{}, m.fail(err, bucket, key)
	}
	return Part{Number: p.PartNumber, ETag: strings.Trim(p.ETag, `"`), Size: size}, nil
}

func (m *minioS3) CompleteMultipart(ctx context.Context, bucket, key, uploadID string, parts []Part) (string, error) {
	cps := make([]minio.CompletePart, len(parts))
	for i, p := range parts {
		cps[i] = minio.CompletePart{PartNumber: p.Number, ETag: p.ETag}
	}
	info, err := m.core.CompleteMultipartUpload(ctx, bucket, key, uploadID, cps, minio.PutObjectOptions{})
	return strings.Trim(info.ETag, `"`), m.fail(err, bucket, key)
}

func (m *minioS3) AbortMultipart(ctx context.Context, bucket, key, uploadID string) error {
	return m.fail(m.core.AbortMultipartUpload(ctx, bucket, key, uploadID), bucket, key)
}

func (m *minioS3) ListParts(ctx context.Context, bucket, key, uploadID string) ([]Part, error) {
	var out []Part
	marker := 0
	for {
		res, err := m.core.ListObjectParts(ctx, bucket, key, uploadID, marker, 1000)
		if err != nil {
			return nil, m.fail(err, bucket, key)
		}
		for _, p := range res.ObjectParts {
			out = append(out, Part{Number: p.PartNumber, ETag: strings.Trim(p.ETag, `"`), Size: p.Size})
		}
		if !res.IsTruncated || res.NextPartNumberMarker <= marker {
			return out, nil
		}
		marker = res.NextPartNumberMarker
	}
}

func (m *minioS3) ListUploads(ctx context.Context, bucket, prefix string) ([]MultipartUpload, error) {
	var out []MultipartUpload
	keyMarker, idMarker := "", ""
	for {
		res, err := m.core.ListMultipartUploads(ctx, bucket, prefix, keyMarker, idMarker, "", 1000)
		if err != nil {
			return nil, m.fail(err, bucket, prefix)
		}
		for _, u := range res.Uploads {
			out = append(out, MultipartUpload{Key: u.Key, UploadID: u.UploadID, Initiated: u.Initiated})
		}
		if !res.IsTruncated || (res.NextKeyMarker == keyMarker && res.NextUploadIDMarker == idMarker) {
			return out, nil
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
}

func (m *minioS3) Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string) (string, error) {
	info, err := m.core.ComposeObject(ctx,
		minio.CopyDestOptions{Bucket: dstBucket, Object: dstKey},
		minio.CopySrcOptions{Bucket: srcBucket, Object: srcKey})
	if err != nil {
		var resp minio.ErrorResponse
		if errors.As(err, &resp) && (resp.Code == "NoSuchKey" || resp.BucketName == srcBucket && resp.Code == "NoSuchBucket") {
			return "", m.fail(err, srcBucket, srcKey)
		}
		return "", m.fail(err, dstBucket, dstKey)
	}
	return strings.Trim(info.ETag, `"`), nil
}

func (m *minioS3) Remove(ctx context.Context, bucket, key string) error {
	return m.fail(m.core.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{}), bucket, key)
}

func (m *minioS3) RemoveMany(ctx context.Context, bucket string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan minio.ObjectInfo)
	go func() {
		defer close(in)
		for _, k := range keys {
			select {
			case in <- minio.ObjectInfo{Key: k}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var first error
	for e := range m.core.RemoveObjects(ctx, bucket, in, minio.RemoveObjectsOptions{}) {
		if first == nil && e.Err != nil {
			first = m.fail(e.Err, bucket, e.ObjectName)
		}
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func (m *minioS3) PresignGet(ctx context.Context, bucket, key string, expires time.Duration) (string, error) {
	u, err := m.core.PresignedGetObject(ctx, bucket, key, expires, nil)
	if err != nil {
		return "", m.fail(err, bucket, key)
	}
	return u.String(), nil
}
