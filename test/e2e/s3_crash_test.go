package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

const crashPartSize = 5 << 20

// multipartETag is the ETag S3 gives an object uploaded in parts of size.
func multipartETag(b []byte, size int) string {
	var sums []byte
	n := 0
	for off := 0; off < len(b); off += size {
		s := md5.Sum(b[off:min(off+size, len(b))])
		sums = append(sums, s[:]...)
		n++
	}
	s := md5.Sum(sums)
	return fmt.Sprintf("%s-%d", hex.EncodeToString(s[:]), n)
}

// TestCrashDuringWrites kills the server with SIGKILL while hundreds of PUTs
// and multipart uploads are in flight, restarts it, and checks that every
// listed object is complete and matches its ETag, that no temporary file is
// left, and that blobs nothing references are collected.
func TestCrashDuringWrites(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServer(t, dataDir)
	ctx := context.Background()
	c := sdkClient(s)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("crash")}); err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 12<<20)
	rand.New(rand.NewSource(1)).Read(src)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]bool{} // objects whose PUT or Complete returned success
	for w := 0; w < 12; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("single/%d/%d", w, i)
				off, size := r.Intn(len(src)/2), 1+r.Intn(2<<20)
				_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("crash"), Key: aws.String(key), Body: bytes.NewReader(src[off : off+size])})
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked[key] = true
				mu.Unlock()
			}
		}()
	}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("multi/%d/%d", w, i)
				cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("crash"), Key: aws.String(key)})
				if err != nil {
					return
				}
				var parts []s3types.CompletedPart
				for p := int32(1); p <= 2; p++ {
					body := src[int(p-1)*crashPartSize : int(p-1)*crashPartSize+crashPartSize]
					if p == 2 {
						body = body[:1<<20+w]
					}
					up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("crash"), Key: aws.String(key), UploadId: cu.UploadId,
						PartNumber: aws.Int32(p), Body: bytes.NewReader(body)})
					if err != nil {
						return
					}
					parts = append(parts, s3types.CompletedPart{PartNumber: aws.Int32(p), ETag: up.ETag})
				}
				if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("crash"), Key: aws.String(key),
					UploadId: cu.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts}}); err != nil {
					return
				}
				mu.Lock()
				acked[key] = true
				mu.Unlock()
			}
		}()
	}
	time.Sleep(3 * time.Second)
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.done
	close(stop)
	wg.Wait()
	mu.Lock()
	nAcked := len(acked)
	mu.Unlock()
	if nAcked < 20 {
		t.Fatalf("only %d writes finished before the kill; the test proves little", nAcked)
	}

	os.Remove(filepath.Join(dataDir, "admin.yaml"))
	s2 := startServer(t, dataDir)
	c2 := sdkClient(s2)
	var listed []s3types.Object
	p := s3.NewListObjectsV2Paginator(c2, &s3.ListObjectsV2Input{Bucket: aws.String("crash")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, page.Contents...)
	}
	seen := map[string]bool{}
	for _, o := range listed {
		seen[*o.Key] = true
		got, err := c2.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("crash"), Key: o.Key})
		if err != nil {
			t.Fatalf("listed object %s cannot be read: %v", *o.Key, err)
		}
		b, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil {
			t.Fatalf("reading %s: %v", *o.Key, err)
		}
		etag := strings.Trim(*o.ETag, `"`)
		want := hex.EncodeToString(md5sum(b))
		if strings.HasPrefix(*o.Key, "multi/") {
			want = multipartETag(b, crashPartSize)
		}
		if etag != want || int64(len(b)) != *o.Size {
			t.Errorf("%s: ETag %s size %d, bytes give %s size %d", *o.Key, etag, *o.Size, want, len(b))
		}
	}
	for key := range acked {
		if !seen[key] {
			t.Errorf("%s was acknowledged before the crash but is gone", key)
		}
	}
	// No temporary file survives the restart.
	tmp, _ := os.ReadDir(filepath.Join(dataDir, "objects", "tmp"))
	if len(tmp) != 0 {
		t.Errorf("%d temporary files left after restart", len(tmp))
	}
	// Orphaned blobs (bytes written, index not updated) are collected: in
	// the end the store holds exactly the blobs of listed objects and of
	// the uploads still open.
	want := 0
	for _, o := range listed {
		if strings.HasPrefix(*o.Key, "multi/") {
			want += 2
		} else {
			want++
		}
	}
	ups, err := c2.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("crash")})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups.Uploads {
		lp, err := c2.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("crash"), Key: u.Key, UploadId: u.UploadId})
		if err != nil {
			t.Fatal(err)
		}
		want += len(lp.Parts)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := countFiles(t, filepath.Join(dataDir, "objects", "data"))
		if n == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d blob files on disk, %d referenced: orphans were not collected", n, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d writes acknowledged before SIGKILL; %d objects listed after restart, all intact", nAcked, len(listed))
}

func md5sum(b []byte) []byte {
	s := md5.Sum(b)
	return s[:]
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}
