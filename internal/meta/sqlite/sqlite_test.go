package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/metatest"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

func open(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Store {
		return open(t, filepath.Join(t.TempDir(), "meta.db"))
	})
}

func TestReopen(t *testing.T) {
	metatest.RunReopen(t, func(t *testing.T) (meta.Store, func() meta.Store) {
		path := filepath.Join(t.TempDir(), "meta.db")
		return open(t, path), func() meta.Store { return open(t, path) }
	})
}

func TestOpenCreatesDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "meta.db")
	s := open(t, path)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// TestPragmas checks the settings on both the writer and the read pool, by
// looking at them through the store's own connections: a second pool opened
// here would show only its own.
func TestPragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s := open(t, path)
	for _, db := range []*sql.DB{s.Writer(), s.Reader()} {
		for pragma, want := range map[string]string{
			"journal_mode": "wal",
			"busy_timeout": "10000",
			"foreign_keys": "1",
			"synchronous":  "2", // FULL: a commit is on disk when it returns
		} {
			var got string
			if err := db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
			}
		}
	}
	if got := s.Writer().Stats().MaxOpenConnections; got != 1 {
		t.Errorf("writer MaxOpenConnections = %d, want 1", got)
	}
	if _, err := s.Reader().ExecContext(t.Context(), "CREATE TABLE nope (x)"); err == nil {
		t.Error("the read pool accepted a write")
	}
}

func TestOpenNotWritable(t *testing.T) {
	// A directory cannot be created under a regular file, even by root.
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(file, "sub", "meta.db")
	_, err := sqlite.Open(t.Context(), path)
	if !errs.Is(err, errs.IO) {
		t.Fatalf("got %v (kind %q), want kind %q", err, errs.KindOf(err), errs.IO)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), filepath.Join(file, "sub")) {
		t.Errorf("message %q does not name the directory", err)
	}
}

func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("this is not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(t.Context(), path)
	if !errs.Is(err, errs.IO) {
		t.Fatalf("got %v (kind %q), want kind %q", err, errs.KindOf(err), errs.IO)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), path) {
		t.Errorf("message %q does not name the file", err)
	}
}

func TestOpenDirectoryAsFile(t *testing.T) {
	dir := t.TempDir()
	_, err := sqlite.Open(t.Context(), dir)
	if !errs.Is(err, errs.IO) {
		t.Fatalf("got %v (kind %q), want kind %q", err, errs.KindOf(err), errs.IO)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("message %q does not name the path", err)
	}
}

func TestOpenNoPath(t *testing.T) {
	for _, path := range []string{"", ":memory:"} {
		_, err := sqlite.Open(t.Context(), path)
		if !errs.Is(err, errs.Invalid) {
			t.Errorf("Open(%q): got %v, want kind %q", path, err, errs.Invalid)
		}
	}
}

func TestOpenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db")); err == nil {
		s.Close()
		t.Fatal("Open with a canceled context succeeded")
	}
}

func TestOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir with space?#%", "mé ta.db")
	s := open(t, path)
	if err := s.PutSetting(t.Context(), "k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at %s: %v", path, err)
	}
}

// TestTwoStores opens the same file twice, as two server processes would, and writes through both: the busy timeout must absorb the lock
// contention.
func TestTwoStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	a, b := open(t, path), open(t, path)
	ctx := t.Context()
	done := make(chan error, 2)
	for i, s := range []*sqlite.Store{a, b} {
		go func() {
			for j := range 50 {
				id := fmt.Sprintf("store%d-user%d", i, j)
				if err := s.CreateUser(ctx, &meta.User{ID: id, Name: id}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	_, n, err := a.ListUsers(ctx, meta.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n != 100 {
		t.Fatalf("got %d users, want 100", n)
	}
}

func TestOpenReadOnlyDirectory(t *testing.T) {
	// Nobody, root included, can create files directly in /proc.
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	_, err := sqlite.Open(t.Context(), "/proc/meta.db")
	if !errs.Is(err, errs.IO) {
		t.Fatalf("got %v (kind %q), want kind %q", err, errs.KindOf(err), errs.IO)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "/proc is not writable") {
		t.Errorf("message %q does not name the directory", err)
	}
}

func TestOpenMigrationFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec("CREATE TABLE users (something_else TEXT)")
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(t.Context(), path)
	if err == nil || !strings.Contains(err.Error(), "cannot migrate metadata database "+path) {
		t.Fatalf("got %v, want a migration error naming %s", err, path)
	}
	t.Log(err)
}

// TestCorruptJSON damages the JSON columns behind the store's back: reads
// fail with kind Internal and name the column. A listing decodes only the
// rows it returns, so rows rolled up into a common prefix do not fail it.
func TestCorruptJSON(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "meta.db"))
	ctx := t.Context()
	if err := s.CreateBucket(ctx, &meta.Bucket{Name: "b1"}); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{"k": "v"}
	for _, col := range []string{"metadata", "headers", "checksums", "blobs"} {
		// Two blobs: a list of one is stored in the blob_id column.
		o := &meta.Object{Bucket: "b1", Key: "c/" + col, Size: 2, Metadata: m, Headers: m, Checksums: m,
			Blobs: []meta.Blob{{ID: col, Size: 1}, {ID: col + "2", Size: 1}}}
		if _, err := s.PutObject(ctx, o); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Writer().ExecContext(ctx, `UPDATE objects SET `+col+` = '{broken' WHERE key = ?`, o.Key); err != nil {
			t.Fatal(err)
		}
		_, err := s.GetObject(ctx, "b1", o.Key)
		wantInternal(t, "GetObject "+col, err, "corrupt "+col+" column")
	}
	// One blob in blob_id and a list as well.
	one := &meta.Object{Bucket: "b1", Key: "c/blob_id", Size: 1, Blobs: []meta.Blob{{ID: "one", Size: 1}}}
	if _, err := s.PutObject(ctx, one); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Writer().ExecContext(ctx, `UPDATE objects SET blobs = '[]' WHERE key = ?`, one.Key); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetObject(ctx, "b1", one.Key)
	wantInternal(t, "GetObject blob_id and blobs", err, "corrupt blobs column")
	_, err = s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"})
	wantInternal(t, "ListObjects", err, "corrupt blobs column") // c/blob_id sorts first
	res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1", Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 0 || len(res.CommonPrefixes) != 1 {
		t.Fatalf("rolled-up listing: %+v", res)
	}
	_, err = s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1", Prefix: "c/", Delimiter: "/"})
	wantInternal(t, "grouped ListObjects", err, "corrupt blobs column")
	for _, col := range []string{"metadata", "headers"} {
		u := &meta.Upload{ID: "u-" + col, Bucket: "b1", Key: "k", Metadata: m, Headers: m}
		if err := s.CreateUpload(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Writer().ExecContext(ctx, `UPDATE uploads SET `+col+` = 'null]' WHERE id = ?`, u.ID); err != nil {
			t.Fatal(err)
		}
		_, err := s.GetUpload(ctx, u.ID)
		wantInternal(t, "GetUpload "+col, err, "corrupt "+col+" column")
	}
	_, _, err = s.ListUploads(ctx, meta.ListUploadsQuery{Bucket: "b1"})
	wantInternal(t, "ListUploads", err, "corrupt headers column") // u-headers sorts first
}

func wantInternal(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if !errs.Is(err, errs.Internal) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: got %v (kind %q), want kind %q saying %q", what, err, errs.KindOf(err), errs.Internal, msg)
	}
}

// TestFullDatabase: a write that finds the database full fails with kind
// NoSpace (the disk's SQLITE_FULL; here max_page_count stands in for the
// disk), stores nothing, and leaves the writer usable: deletes go on.
func TestFullDatabase(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "meta.db"))
	ctx := t.Context()
	if err := s.CreateBucket(ctx, &meta.Bucket{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := s.Writer().QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Writer().ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+8)); err != nil {
		t.Fatal(err)
	}
	big := map[string]string{"pad": strings.Repeat("x", 3000)}
	var err error
	n := 0
	for ; n < 100; n++ {
		o := &meta.Object{Bucket: "b", Key: fmt.Sprintf("k%03d", n), ETag: "e", Metadata: big,
			Blobs: []meta.Blob{{ID: fmt.Sprintf("blob%03d", n)}}}
		if _, err = s.PutObject(ctx, o); err != nil {
			break
		}
	}
	if !errs.Is(err, errs.NoSpace) || n == 0 {
		t.Fatalf("after %d objects: %v; want a NoSpace error", n, err)
	}
	if _, gerr := s.GetObject(ctx, "b", fmt.Sprintf("k%03d", n)); !errs.Is(gerr, errs.NotFound) {
		t.Fatalf("the object that did not fit: %v; want NotFound", gerr)
	}
	// Concurrent writes into the full database, committed in groups: each
	// fails as NoSpace (also one whose group another write's failure
	// ended), none as anything else.
	errc := make(chan error, 16)
	for i := range 16 {
		go func() {
			o := &meta.Object{Bucket: "b", Key: fmt.Sprintf("c%02d", i), ETag: "e", Metadata: big,
				Blobs: []meta.Blob{{ID: fmt.Sprintf("cblob%02d", i)}}}
			_, err := s.PutObject(ctx, o)
			errc <- err
		}()
	}
	for range 16 {
		if err := <-errc; err != nil && !errs.Is(err, errs.NoSpace) {
			t.Errorf("a concurrent write into the full database: %v (kind %v); want NoSpace", err, errs.KindOf(err))
		}
	}
	for i := range n {
		if _, err := s.DeleteObject(ctx, "b", fmt.Sprintf("k%03d", i)); err != nil {
			t.Fatalf("deleting from a full database: %v", err)
		}
	}
	for i := range 16 {
		if _, err := s.DeleteObject(ctx, "b", fmt.Sprintf("c%02d", i)); err != nil && !errs.Is(err, errs.NotFound) {
			t.Fatalf("deleting from a full database: %v", err)
		}
	}
	if _, err := s.PutObject(ctx, &meta.Object{Bucket: "b", Key: "after", ETag: "e", Blobs: []meta.Blob{{ID: "x"}}}); err != nil {
		t.Fatalf("a write after deletes made room: %v", err)
	}
}

// TestSchemaNewerThanTheBinary: a store migrated by a newer binary is
// refused, with the versions and a hint, rather than used or downgraded.
func TestSchemaNewerThanTheBinary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s := open(t, path)
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, 1)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlite.Open(t.Context(), path)
	if errs.CodeOf(err) != "ATL.META.0001" || !strings.Contains(errs.UserMessage(err), "version 9999, newer than this binary's") || errs.HintOf(err) == "" {
		t.Fatalf("opening a store of a newer schema: %v", err)
	}
}

// TestPinsOfAnUnpublishedVersionHoldNothing: pins written for a version
// whose publication was cut short (a crash between the pins' transactions
// and the last one) hold nothing; its publication makes them count.
func TestPinsOfAnUnpublishedVersionHoldNothing(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "meta.db")
	s := open(t, path)
	if err := s.CreateDataset(ctx, &meta.DatasetRecord{ID: "d", Name: "d", OwnerID: "u"}); err != nil {
		t.Fatal(err)
	}
	v := &meta.DatasetVersionRecord{ID: "v", DatasetID: "d", Name: "v1", Status: "creating"}
	if err := s.CreateDatasetVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	// What a cut-short publication leaves: the pins, not the flag.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `INSERT INTO dataset_pins (version_id, bucket, object_key, object_version_id) VALUES ('v', 'b', 'k', 'x')`); err != nil {
		t.Fatal(err)
	}
	if held, err := s.DatasetPinned(ctx, "u", "b", "k", "x"); err != nil || held {
		t.Fatalf("an unpublished version's pin: %v, %v", held, err)
	}
	v.Status = "published"
	if err := s.PublishDatasetVersion(ctx, v, []meta.ObjectPin{{Bucket: "b", Key: "k", VersionID: "x"}}); err != nil {
		t.Fatal(err)
	}
	if held, err := s.DatasetPinned(ctx, "u", "b", "k", "x"); err != nil || !held {
		t.Fatalf("after the publication: %v, %v", held, err)
	}
}
