package runner

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/obsclient"
)

// Staging a job's inputs through the runner protocol: the server lists an
// input in one call and sends its small objects in a few tar streams, which
// costs far less than a signed S3 request per object. S3 stays the path for
// large objects and the fallback for everything the server does not deliver
// (an older server, a listing too long for one answer, a broken stream, an
// object changed since it was listed).

// BulkMaxSize is the size from which an object is downloaded over S3 (in
// parallel ranges) rather than sent in a tar stream.
const BulkMaxSize = 8 << 20

// BulkStreams is the most tar streams a staging opens at once.
const BulkStreams = 4

// bulkFileCost is what one file costs a stream besides its bytes (a tar
// header, an index lookup, a file created in the cache), in bytes, for
// balancing the streams.
const bulkFileCost = 16 << 10

// inputSource is the server's side of staging a job's inputs (the runner
// protocol's inputs calls).
type inputSource interface {
	// listInput lists the objects of the job's input name.
	listInput(ctx context.Context, name string) (*api.RunnerObjectList, error)
	// inputObjects opens a tar stream of the input's objects keys.
	inputObjects(ctx context.Context, name string, keys []string) (io.ReadCloser, error)
}

func (s *server) listInput(ctx context.Context, name string) (*api.RunnerObjectList, error) {
	var out api.RunnerObjectList
	if err := s.call(ctx, "GET", "inputs/"+url.PathEscape(name), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *server) inputObjects(ctx context.Context, name string, keys []string) (io.ReadCloser, error) {
	return s.open(ctx, "POST", "inputs/"+url.PathEscape(name)+"/objects", api.RunnerObjectsRequest{Keys: keys})
}

// listInput lists the input c: from the listing the job came with, else
// through the server when it can, else (an older server, a listing too
// long for one answer, any failure) over S3, whose errors are the ones
// users see.
func (s *stager) listInput(ctx context.Context, c Channel) (listing, error) {
	if c.Dataset != nil {
		return s.listDataset(ctx, c)
	}
	if items, ok := s.given[c.Name]; ok {
		// Listed by the server while the runner started.
		return s.listedByServer(ctx, c, items)
	}
	if s.inputs == nil {
		return s.list(ctx, c.Remote)
	}
	rl, err := s.inputs.listInput(ctx, c.Name)
	switch {
	case err == nil && !rl.Truncated:
		return s.listedByServer(ctx, c, rl.Items)
	case ctx.Err() != nil:
		return listing{}, ctx.Err()
	case err == nil:
		s.note("input %s holds more objects than the server lists at once: listing it over S3", c.Name)
	case isStatus(err, http.StatusNotFound, http.StatusMethodNotAllowed):
		s.note("the server does not list input %s (%v): listing it over S3", c.Name, err)
	default:
		s.note("cannot list input %s through the server (%v): listing it over S3", c.Name, err)
	}
	return s.list(ctx, c.Remote)
}

// listedByServer is the listing of input c from the server's items, as
// list makes it from S3: the objects under the location as a directory,
// else the one object it names. The files may come in tar streams.
func (s *stager) listedByServer(ctx context.Context, c Channel, items []api.RunnerObject) (listing, error) {
	loc := c.Remote
	dir := loc.AsDir()
	var under []obsclient.Object
	var named *obsclient.Object
	for _, it := range items {
		o := obsclient.Object{Key: it.Key, Size: it.Size, ETag: it.ETag, LastModified: time.UnixMilli(it.LastModified).UTC()}
		switch {
		case strings.HasPrefix(o.Key, dir.Key):
			under = append(under, o)
		case o.Key == loc.Key:
			named = &o
		}
	}
	out := s.listed(dir, under)
	if len(out.Files) == 0 && !loc.DirSyntax() {
		var err error
		if out, err = s.single(ctx, loc, named); err != nil {
			return listing{}, err
		}
	}
	for i := range out.Files {
		out.Files[i].Input = c.Name
	}
	return out, nil
}

// isStatus reports whether err is a runner call answered with one of the
// statuses.
func isStatus(err error, statuses ...int) bool {
	var ce *callError
	return errors.As(err, &ce) && slices.Contains(statuses, ce.Status)
}

// note records what the staging did in the runner's own log.
func (s *stager) note(format string, args ...any) {
	if s.log != nil {
		s.log.Info(fmt.Sprintf(format, args...))
	}
}

// bulkBatch is the files one tar stream brings: of one input, keys sorted.
type bulkBatch struct {
	Input string
	Files []remoteFile
	cost  int64
}

// planBulk splits files into at most streams batches of one input each,
// balanced by bytes and file count: each input gets streams in proportion
// to its cost (at least one, and one per bulkMinBatch at most), and its
// files, sorted by key, are cut into runs of about equal cost. A batch is
// thus a range of keys, which the server reads with a few scans of its
// index.
func planBulk(files []remoteFile, streams int) []bulkBatch {
	if len(files) == 0 {
		return nil
	}
	streams = max(streams, 1)
	byInput := map[string][]remoteFile{}
	var names []string
	var total int64
	cost := func(f remoteFile) int64 { return f.Obj.Size + bulkFileCost }
	for _, f := range files {
		if _, ok := byInput[f.Input]; !ok {
			names = append(names, f.Input)
		}
		byInput[f.Input] = append(byInput[f.Input], f)
		total += cost(f)
	}
	slices.Sort(names)
	var out []bulkBatch
	for _, name := range names {
		fs := byInput[name]
		slices.SortFunc(fs, func(a, b remoteFile) int { return strings.Compare(a.Obj.Key, b.Obj.Key) })
		var c int64
		for _, f := range fs {
			c += cost(f)
		}
		n := int64(max(1, min(len(fs), int(int64(streams)*c/max(total, 1)), int(c/bulkMinBatch))))
		b := bulkBatch{Input: name}
		var acc, cut int64
		for i, f := range fs {
			b.Files = append(b.Files, f)
			b.cost += cost(f)
			acc += cost(f)
			// Cut where the running cost passes the next n-th of c.
			if i < len(fs)-1 && acc*n >= c*(cut+1) {
				out = append(out, b)
				b = bulkBatch{Input: name}
				cut++
			}
		}
		out = append(out, b)
	}
	return out
}

// bulkMinBatch is the least cost worth a stream of its own.
const bulkMinBatch = 2 << 20

// fetchBulk brings files into the content cache in tar streams from the
// server, and returns those it did not deliver.
func (s *stager) fetchBulk(ctx context.Context, files []remoteFile) (left []remoteFile) {
	streams := s.streams
	if streams <= 0 {
		streams = BulkStreams
	}
	batches := planBulk(files, streams)
	var mu sync.Mutex
	var wg sync.WaitGroup
	dirs := &dirSet{m: map[string]bool{}}
	for _, b := range batches {
		wg.Go(func() {
			got, err := s.stream(ctx, b, dirs)
			if err != nil && ctx.Err() == nil {
				s.note("input %s: the server's stream delivered %d of %d objects (%v): downloading the rest over S3",
					b.Input, len(got), len(b.Files), err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, f := range b.Files {
				if !got[f.Obj.Key] {
					left = append(left, f)
				}
			}
		})
	}
	wg.Wait()
	return left
}

// stream reads one batch's tar stream into the cache and returns the keys
// it stored. An entry that is not one of the batch's files as listed (its
// size or ETag differ: the object changed) is skipped; a key without an
// entry was deleted or changed, and S3 settles it.
func (s *stager) stream(ctx context.Context, b bulkBatch, dirs *dirSet) (map[string]bool, error) {
	got := map[string]bool{}
	want := make(map[string]remoteFile, len(b.Files))
	keys := make([]string, len(b.Files))
	for i, f := range b.Files {
		want[f.Obj.Key] = f
		keys[i] = f.Obj.Key
	}
	body, err := s.inputs.inputObjects(ctx, b.Input, keys)
	if err != nil {
		return got, err
	}
	defer body.Close()
	tr := tar.NewReader(body)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if len(got) < len(want) {
				return got, fmt.Errorf("%d objects were not in it (deleted or changed since they were listed)", len(want)-len(got))
			}
			return got, nil
		}
		if err != nil {
			return got, err
		}
		f, ok := want[h.Name]
		if !ok || got[h.Name] || h.Typeflag != tar.TypeReg || h.Size != f.Obj.Size ||
			(f.Obj.ETag != "" && h.PAXRecords[api.RunnerETagRecord] != f.Obj.ETag) {
			continue // not as listed: S3 settles it
		}
		if err := s.storeEntry(tr, f, dirs); err != nil {
			return got, err
		}
		got[h.Name] = true
	}
}

// storeEntry writes the current entry of tr, f's bytes, into the content
// cache: a temporary file in the cache dir, renamed into place once whole.
func (s *stager) storeEntry(tr *tar.Reader, f remoteFile, dirs *dirSet) error {
	dst := s.cachePath(f)
	dir := filepath.Dir(dst)
	if err := dirs.make(dir); err != nil {
		return err
	}
	tmp := dst + ".bulk-" + strconv.FormatUint(rand.Uint64(), 36)
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, tr)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != f.Obj.Size {
		err = fmt.Errorf("%s: %d bytes in the stream, %d listed", f.Obj.Key, n, f.Obj.Size)
	}
	if err == nil && !f.Obj.LastModified.IsZero() {
		err = os.Chtimes(tmp, f.Obj.LastModified, f.Obj.LastModified)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// dirSet makes directories once.
type dirSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (d *dirSet) make(dir string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m[dir] {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d.m[dir] = true
	return nil
}
