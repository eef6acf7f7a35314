// Command loadgen is a small S3 load generator for bench/obs: it drives any
// S3 endpoint (Atelier's OBS, MinIO, ...) with the same client library and
// settings, so that two servers can be compared side by side.
//
// It uses minio-go v7's Core (one request per operation, no client-side
// multipart, no retries), path-style addressing, region us-east-1 and one
// keep-alive transport with an idle connection kept for every worker.
// PUT bodies are sent with UNSIGNED-PAYLOAD by default (-payload streaming
// selects aws-chunked signing instead), so that the client spends as little
// CPU as possible on the shared cores: the servers, not the client, are
// measured.
//
// Modes:
//
//	mb        make the bucket (an existing one is fine)
//	put       PUT -count objects of -size bytes (or until -duration), -concurrency at a time
//	get       GET objects 0..-objects-1 of a previous put, round robin, -count or -duration
//	populate  like put, for filling a prefix before list (same output)
//	list      ListObjectsV2 the whole -prefix in pages of -page keys, -count times
//
// Keys are PREFIX + "%08d" of the object number. Every object's content is
// unique (its first 16 bytes hold its number), the rest comes from one fixed
// pseudo-random buffer: no per-operation random generation on the client.
//
// The result is one line of JSON on stdout; errors go to stderr, and the exit
// status is 1 if any operation failed.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

type result struct {
	Label       string  `json:"label,omitempty"`
	Mode        string  `json:"mode"`
	Endpoint    string  `json:"endpoint"`
	Size        int64   `json:"size,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	Ops         int64   `json:"ops"`
	Errors      int64   `json:"errors"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	MiBPerSec   float64 `json:"mib_per_s"`
	OpsPerSec   float64 `json:"ops_per_s"`
	P50ms       float64 `json:"p50_ms"`
	P90ms       float64 `json:"p90_ms"`
	P99ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	// list mode
	Keys      int64     `json:"keys,omitempty"`
	Pages     int64     `json:"pages,omitempty"`
	RunsSec   []float64 `json:"runs_s,omitempty"`
	MedianSec float64   `json:"median_s,omitempty"`
	BestSec   float64   `json:"best_s,omitempty"`
}

func main() {
	var (
		endpoint    = flag.String("endpoint", "", "S3 endpoint, http://HOST:PORT")
		accessKey   = flag.String("access-key", "", "access key id")
		secretKey   = flag.String("secret-key", "", "secret access key")
		region      = flag.String("region", "us-east-1", "signing region")
		bucket      = flag.String("bucket", "bench", "bucket")
		mode        = flag.String("mode", "", "mb, put, get, populate or list")
		sizeFlag    = flag.String("size", "4KiB", "object size (B, KiB, MiB, GiB)")
		concurrency = flag.Int("concurrency", 8, "operations in flight")
		count       = flag.Int64("count", 0, "operations (put/get/populate) or listings (list); 0: until -duration")
		duration    = flag.Duration("duration", 0, "stop starting operations after this long (0: no limit)")
		prefix      = flag.String("prefix", "obj/", "key prefix")
		objects     = flag.Int64("objects", 0, "get: number of objects the put wrote under -prefix")
		page        = flag.Int("page", 1000, "list: keys per page")
		expect      = flag.Int64("expect", 0, "list: keys expected under -prefix (0: do not check)")
		payload     = flag.String("payload", "unsigned", "PUT payload signing: unsigned or streaming")
		label       = flag.String("label", "", "copied into the JSON result")
		versioned   = flag.Bool("versioning", false, "mb: turn versioning on for the bucket")
	)
	flag.Parse()
	size, err := parseSize(*sizeFlag)
	if err != nil {
		fatal(err)
	}
	if *endpoint == "" || *mode == "" {
		fatal(errors.New("-endpoint and -mode are required"))
	}
	if *count == 0 && *duration == 0 && *mode != "mb" && *mode != "list" {
		fatal(errors.New("give -count or -duration"))
	}
	if *concurrency < 1 {
		*concurrency = 1
	}
	core, err := newCore(*endpoint, *accessKey, *secretKey, *region, *concurrency)
	if err != nil {
		fatal(err)
	}
	ctx := context.Background()
	res := result{Label: *label, Mode: *mode, Endpoint: *endpoint}
	switch *mode {
	case "mb":
		err := core.MakeBucket(ctx, *bucket, minio.MakeBucketOptions{Region: *region})
		var er minio.ErrorResponse
		if errors.As(err, &er) && (er.Code == "BucketAlreadyOwnedByYou" || er.Code == "BucketAlreadyExists") {
			err = nil
		}
		if err != nil {
			fatal(fmt.Errorf("make bucket %s: %w", *bucket, err))
		}
		if *versioned {
			if err := core.EnableVersioning(ctx, *bucket); err != nil {
				fatal(fmt.Errorf("turn versioning on for %s: %w", *bucket, err))
			}
			v, err := core.GetBucketVersioning(ctx, *bucket)
			if err != nil || !v.Enabled() {
				fatal(fmt.Errorf("versioning of %s is not on (%+v, %v)", *bucket, v, err))
			}
		}
		return
	case "put", "populate":
		data := newData(size)
		opts := minio.PutObjectOptions{DisableContentSha256: *payload != "streaming", ContentType: "application/octet-stream"}
		res = run(res, *concurrency, *count, *duration, func(i int64, _ []byte) (int64, error) {
			body := io.NewSectionReader(uniqueReader{n: uint64(i), data: data}, 0, size)
			_, err := core.PutObject(ctx, *bucket, key(*prefix, i), body, size, "", "", opts)
			if err != nil {
				return 0, err
			}
			return size, nil
		})
		res.Size = size
	case "get":
		if *objects <= 0 {
			fatal(errors.New("get: give -objects (how many the put wrote)"))
		}
		res = run(res, *concurrency, *count, *duration, func(i int64, buf []byte) (int64, error) {
			r, _, _, err := core.GetObject(ctx, *bucket, key(*prefix, i%*objects), minio.GetObjectOptions{})
			if err != nil {
				return 0, err
			}
			defer r.Close()
			var n int64
			for {
				m, err := r.Read(buf)
				n += int64(m)
				if err == io.EOF {
					break
				}
				if err != nil {
					return n, err
				}
			}
			if size > 0 && n != size {
				return n, fmt.Errorf("GET %s: %d bytes, want %d", key(*prefix, i%*objects), n, size)
			}
			return n, nil
		})
		res.Size = size
	case "list":
		runs := max(*count, 1)
		for range runs {
			keys, pages, secs, err := list(core, *bucket, *prefix, *page)
			if err != nil {
				fatal(err)
			}
			if *expect > 0 && keys != *expect {
				fatal(fmt.Errorf("listed %d keys under %q, want %d", keys, *prefix, *expect))
			}
			res.Keys, res.Pages = keys, pages
			res.RunsSec = append(res.RunsSec, round(secs))
		}
		sorted := slices.Clone(res.RunsSec)
		slices.Sort(sorted)
		res.BestSec = sorted[0]
		res.MedianSec = sorted[len(sorted)/2]
		res.Seconds = res.MedianSec
		res.Ops = res.Pages
		res.OpsPerSec = round(float64(res.Keys) / res.MedianSec) // keys per second
	default:
		fatal(fmt.Errorf("unknown -mode %q", *mode))
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if res.Errors > 0 {
		os.Exit(1)
	}
}

// run runs op for i = 0, 1, 2, ... on n workers until count operations have
// been started or duration has passed; operations in flight at the deadline
// are finished (so objects 0..ops-1 all exist after a put).
func run(res result, n int, count int64, duration time.Duration, op func(i int64, buf []byte) (int64, error)) result {
	var (
		next     atomic.Int64
		bytes    atomic.Int64
		failed   atomic.Int64
		mu       sync.Mutex
		lat      []time.Duration
		wg       sync.WaitGroup
		firstErr sync.Once
	)
	start := time.Now()
	var deadline time.Time
	if duration > 0 {
		deadline = start.Add(duration)
	}
	for range n {
		wg.Go(func() {
			buf := make([]byte, 256<<10)
			mine := make([]time.Duration, 0, 1024)
			for {
				if !deadline.IsZero() && time.Now().After(deadline) {
					break
				}
				i := next.Add(1) - 1
				if count > 0 && i >= count {
					break
				}
				t := time.Now()
				b, err := op(i, buf)
				mine = append(mine, time.Since(t))
				bytes.Add(b)
				if err != nil {
					failed.Add(1)
					firstErr.Do(func() { fmt.Fprintln(os.Stderr, "loadgen:", err) })
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	slices.Sort(lat)
	res.Concurrency = n
	res.Ops = int64(len(lat))
	res.Errors = failed.Load()
	res.Bytes = bytes.Load()
	res.Seconds = round(secs)
	res.MiBPerSec = round(float64(res.Bytes) / (1 << 20) / secs)
	res.OpsPerSec = round(float64(res.Ops) / secs)
	res.P50ms = pct(lat, 0.50)
	res.P90ms = pct(lat, 0.90)
	res.P99ms = pct(lat, 0.99)
	if len(lat) > 0 {
		res.MaxMs = ms(lat[len(lat)-1])
	}
	return res
}

// list lists everything under prefix once, page by page.
func list(core *minio.Core, bucket, prefix string, page int) (keys, pages int64, secs float64, err error) {
	start := time.Now()
	token := ""
	for {
		r, err := core.ListObjectsV2(bucket, prefix, "", token, "", page)
		if err != nil {
			return keys, pages, 0, fmt.Errorf("list %s/%s page %d: %w", bucket, prefix, pages+1, err)
		}
		pages++
		keys += int64(len(r.Contents))
		if !r.IsTruncated {
			break
		}
		if r.NextContinuationToken == "" {
			return keys, pages, 0, errors.New("truncated listing without a continuation token")
		}
		token = r.NextContinuationToken
	}
	return keys, pages, time.Since(start).Seconds(), nil
}

func newCore(endpoint, ak, sk, region string, conns int) (*minio.Core, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("bad -endpoint %q", endpoint)
	}
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          conns + 16,
		MaxIdleConnsPerHost:   conns + 16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		DisableCompression:    true,
		WriteBufferSize:       256 << 10,
		ReadBufferSize:        256 << 10,
	}
	return minio.NewCore(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(ak, sk, ""),
		Secure:       u.Scheme == "https",
		Transport:    tr,
		Region:       region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   1,
	})
}

// newData is the fixed pseudo-random content every object is cut from.
func newData(size int64) []byte {
	b := make([]byte, max(size, 16))
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b
}

// uniqueReader reads data with its first 16 bytes replaced by n, so that
// every object differs.
type uniqueReader struct {
	n    uint64
	data []byte
}

func (u uniqueReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(u.data)) {
		return 0, io.EOF
	}
	n := copy(p, u.data[off:])
	if off < 16 {
		var h [16]byte
		binary.BigEndian.PutUint64(h[:8], u.n)
		binary.BigEndian.PutUint64(h[8:], ^u.n)
		copy(p, h[off:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func key(prefix string, i int64) string { return prefix + fmt.Sprintf("%08d", i) }

func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

func pct(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	i := int(float64(len(lat))*p+0.5) - 1
	return ms(lat[min(max(i, 0), len(lat)-1)])
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

func round(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 3, 64), 64)
	return v
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}
