package metatest

import (
	"context"
	"database/sql"
	"encoding/json"
	"io/fs"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/atelier-dev/atelier/internal/meta"
)

// GooseMigrator is the Migrator of db, whose schema goose moves up or down
// over migrations (the "migrations" directory of an embedded tree) in
// dialect; open opens the store over db.
func GooseMigrator(t *testing.T, db *sql.DB, dialect goose.Dialect, migrations fs.FS, open func(t *testing.T) (meta.Store, func())) Migrator {
	t.Helper()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(dialect, db, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return Migrator{DB: db, Open: open, To: func(ctx context.Context, v int64) error {
		cur, err := p.GetDBVersion(ctx)
		if err != nil {
			return err
		}
		if v >= cur {
			_, err = p.UpTo(ctx, v)
		} else {
			_, err = p.DownTo(ctx, v)
		}
		return err
	}}
}

// Migrator is what the migration tests (RunBlobIDMigration,
// RunServiceModelsMigration) need from an implementation: its
// database, a way to move its schema to a goose version (up or down), and a
// way to open the store over that database.
type Migrator struct {
	DB *sql.DB // the store's database, the schema at any version
	// To migrates DB's schema up or down to version.
	To func(ctx context.Context, version int64) error
	// Open opens the store over DB (migrating it to the newest version);
	// the returned function closes it.
	Open func(t *testing.T) (meta.Store, func())
}

// oldObject is an objects row as version 5 of the schema stored it.
type oldObject struct {
	key   string
	size  int64
	blobs string // the JSON array encodeBlobs wrote
	want  []meta.Blob
	moved bool // migration 6 moves its one blob into blob_id
}

var oldObjects = []oldObject{
	{key: "a/single", size: 5, blobs: `[{"id":"blob-single","size":5}]`,
		want: []meta.Blob{{ID: "blob-single", Size: 5}}, moved: true},
	{key: "b/one-part", size: 5, blobs: `[{"id":"blob-part","size":5,"etag":"e1"}]`,
		want: []meta.Blob{{ID: "blob-part", Size: 5, ETag: "e1"}}},
	{key: "c/two-parts", size: 8, blobs: `[{"id":"p1","size":5,"etag":"e1"},{"id":"p2","size":3,"etag":"e2"}]`,
		want: []meta.Blob{{ID: "p1", Size: 5, ETag: "e1"}, {ID: "p2", Size: 3, ETag: "e2"}}},
	{key: "d/empty", size: 0, blobs: `[]`},
	{key: "e/empty-etag", size: 4, blobs: `[{"id":"blob-e","size":4,"etag":""}]`,
		want: []meta.Blob{{ID: "blob-e", Size: 4}}},
	{key: "f/empty-blob", size: 0, blobs: `[{"id":"blob-z","size":0}]`,
		want: []meta.Blob{{ID: "blob-z", Size: 0}}, moved: true},
	{key: "g/twice", size: 6, blobs: `[{"id":"t","size":3},{"id":"t","size":3}]`,
		want: []meta.Blob{{ID: "t", Size: 3}, {ID: "t", Size: 3}}},
}

// RunBlobIDMigration checks migration 6 (objects.blob_id): objects stored
// by version 5 read back the same after it, whether their one blob moved
// into blob_id or their list stayed JSON; new writes use blob_id; and the
// down migration leaves version 5's JSON, which reads back the same again.
func RunBlobIDMigration(t *testing.T, m Migrator) {
	ctx := t.Context()
	if err := m.To(ctx, 5); err != nil {
		t.Fatalf("migrating to version 5: %v", err)
	}
	exec := func(q string) {
		t.Helper()
		if _, err := m.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO buckets (name, owner_id) VALUES ('old', 'u1')`)
	for _, o := range oldObjects {
		// Literal SQL, so that it needs no placeholders of either dialect;
		// the values hold no quotes.
		exec(`INSERT INTO objects (bucket, key, size, etag, blobs, last_modified) VALUES ('old', '` +
			o.key + `', ` + itoa(o.size) + `, 'etag-` + o.key + `', '` + o.blobs + `', 1700000000000)`)
		seen := map[string]bool{}
		for _, b := range o.want {
			if !seen[b.ID] {
				seen[b.ID] = true
				exec(`INSERT INTO object_blobs (bucket, key, blob_id) VALUES ('old', '` + o.key + `', '` + b.ID + `')`)
			}
		}
	}
	if err := m.To(ctx, 6); err != nil {
		t.Fatalf("migrating to version 6: %v", err)
	}
	raw := func() map[string][2]string {
		t.Helper()
		rows, err := m.DB.QueryContext(ctx, `SELECT key, blob_id, blobs FROM objects WHERE bucket = 'old'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][2]string{}
		for rows.Next() {
			var k, id, blobs string
			if err := rows.Scan(&k, &id, &blobs); err != nil {
				t.Fatal(err)
			}
			out[k] = [2]string{id, blobs}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	after := raw()
	for _, o := range oldObjects {
		got := after[o.key]
		switch {
		case o.moved && (got[0] != o.want[0].ID || got[1] != ""):
			t.Errorf("%s after the migration: blob_id %q, blobs %q; want %q and ''", o.key, got[0], got[1], o.want[0].ID)
		case !o.moved && (got[0] != "" || got[1] != o.blobs):
			t.Errorf("%s after the migration: blob_id %q, blobs %q; want '' and %s unchanged", o.key, got[0], got[1], o.blobs)
		}
	}
	readBack := func(when string) {
		t.Helper()
		s, closeStore := m.Open(t)
		defer closeStore()
		for _, o := range oldObjects {
			got, err := s.GetObject(ctx, "old", o.key)
			if err != nil {
				t.Fatalf("%s: GetObject %s: %v", when, o.key, err)
			}
			if !reflect.DeepEqual(got.Blobs, o.want) || got.Size != o.size || got.ETag != "etag-"+o.key {
				t.Errorf("%s: %s reads back as size %d, ETag %q, blobs %+v; want %d, %q, %+v",
					when, o.key, got.Size, got.ETag, got.Blobs, o.size, "etag-"+o.key, o.want)
			}
		}
		res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "old"})
		if err != nil {
			t.Fatalf("%s: ListObjects: %v", when, err)
		}
		if len(res.Objects) != len(oldObjects) {
			t.Fatalf("%s: ListObjects gave %d objects, want %d", when, len(res.Objects), len(oldObjects))
		}
		for i, o := range oldObjects {
			if got := res.Objects[i]; got.Key != o.key || !reflect.DeepEqual(got.Blobs, o.want) {
				t.Errorf("%s: listed %s with blobs %+v; want %s with %+v", when, got.Key, got.Blobs, o.key, o.want)
			}
		}
		inUse, err := s.BlobsInUse(ctx, []string{"blob-single", "p2", "blob-z", "nothing"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]bool{"blob-single": true, "p2": true, "blob-z": true}; !reflect.DeepEqual(inUse, want) {
			t.Errorf("%s: BlobsInUse: %v, want %v", when, inUse, want)
		}
	}
	readBack("after the migration")

	// A new single-blob object uses blob_id; overwriting it with a
	// multipart object goes back to the list.
	s, closeStore := m.Open(t)
	o := &meta.Object{Bucket: "old", Key: "h/new", Size: 3, Blobs: []meta.Blob{{ID: "blob-new", Size: 3}}}
	if _, err := s.PutObject(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got := raw()["h/new"]; got != [2]string{"blob-new", ""} {
		t.Errorf("a new single-blob object is stored as blob_id %q, blobs %q; want blob-new and ''", got[0], got[1])
	}
	o.Blobs = []meta.Blob{{ID: "np1", Size: 2, ETag: "x"}, {ID: "np2", Size: 1, ETag: "y"}}
	if _, err := s.PutObject(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got := raw()["h/new"]; got[0] != "" || got[1] == "" {
		t.Errorf("a multipart object is stored as blob_id %q, blobs %q; want '' and a JSON list", got[0], got[1])
	}
	if _, err := s.DeleteObject(ctx, "old", "h/new"); err != nil {
		t.Fatal(err)
	}
	closeStore()

	// Down: version 5's JSON lists again, which mean the same blobs.
	if err := m.To(ctx, 5); err != nil {
		t.Fatalf("migrating down to version 5: %v", err)
	}
	rows, err := m.DB.QueryContext(ctx, `SELECT key, blobs FROM objects WHERE bucket = 'old'`)
	if err != nil {
		t.Fatal(err)
	}
	down := map[string]string{}
	for rows.Next() {
		var k, blobs string
		if err := rows.Scan(&k, &blobs); err != nil {
			t.Fatal(err)
		}
		down[k] = blobs
	}
	rows.Close()
	for _, o := range oldObjects {
		if !sameJSON(down[o.key], o.blobs) {
			t.Errorf("%s after the down migration: blobs %s, want %s", o.key, down[o.key], o.blobs)
		}
	}
	if err := m.To(ctx, 6); err != nil {
		t.Fatalf("migrating up again: %v", err)
	}
	readBack("after down and up again")
}

// RunServiceModelsMigration checks migration 7: the model versions of the
// services that exist before it are filled in from the config of their
// spec (a service without a spec serves none).
func RunServiceModelsMigration(t *testing.T, m Migrator) {
	ctx := t.Context()
	if err := m.To(ctx, 6); err != nil {
		t.Fatalf("migrating to version 6: %v", err)
	}
	for _, row := range [][2]string{
		{"svc-a", `{"service_name":"a","config":[{"model_id":"m1"},{"model_id":"m2"}]}`},
		{"svc-b", `{"service_name":"b","config":[{"model_id":"m2"}]}`},
		{"svc-c", ``},
	} {
		// Literal SQL, as in RunBlobIDMigration: the values hold no single
		// quotes.
		q := `INSERT INTO services (id, name, spec) VALUES ('` + row[0] + `', '` + row[0] + `', '` + row[1] + `')`
		if _, err := m.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, closeStore := m.Open(t)
	defer closeStore()
	for model, want := range map[string][]string{"m1": {"svc-a"}, "m2": {"svc-a", "svc-b"}, "m3": nil} {
		got, err := s.ServicesUsingModel(ctx, model)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ServicesUsingModel(%s) = %v %v, want %v", model, got, err, want)
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// RunVersioningMigration checks migration 14 (versions): a bucket and an
// object stored by version 13 read back as a never-versioned bucket and
// the null version, its ACL kept; versions written after it go away with
// the down migration, which leaves version 13's tables readable.
func RunVersioningMigration(t *testing.T, m Migrator) {
	ctx := t.Context()
	if err := m.To(ctx, 13); err != nil {
		t.Fatalf("migrating to version 13: %v", err)
	}
	for _, q := range []string{
		`INSERT INTO buckets (name, owner_id) VALUES ('old', 'u1')`,
		`INSERT INTO objects (bucket, key, size, etag, blob_id, blobs, last_modified, acl) VALUES ('old', 'k', 3, 'e', 'blob-k', '', 1700000000000, 'acl-k')`,
		`INSERT INTO object_blobs (bucket, key, blob_id) VALUES ('old', 'k', 'blob-k')`,
	} {
		if _, err := m.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, closeStore := m.Open(t)
	b, err := s.GetBucket(ctx, "old")
	if err != nil || b.Versioning != "" {
		t.Fatalf("old bucket: %+v %v", b, err)
	}
	o, err := s.GetObjectVersion(ctx, "old", "k", "")
	if err != nil || !o.IsLatest || o.VersionID != "" || o.Size != 3 || o.ACL != "acl-k" {
		t.Fatalf("old object as the null version: %+v %v", o, err)
	}
	if err := s.SetBucketConfig(ctx, "old", meta.BucketVersioning, meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutObject(ctx, &meta.Object{Bucket: "old", Key: "k", VersionID: "v1", Size: 0, Versioned: true}); err != nil {
		t.Fatal(err)
	}
	if o, err := s.GetObjectVersion(ctx, "old", "k", ""); err != nil || o.IsLatest || o.ACL != "acl-k" {
		t.Fatalf("the noncurrent null version keeps its ACL: %+v %v", o, err)
	}
	inUse, err := s.BlobsInUse(ctx, []string{"blob-k"})
	if err != nil || !inUse["blob-k"] {
		t.Fatalf("the null version's blob after v1: %v %v", inUse, err)
	}
	closeStore()
	if err := m.To(ctx, 13); err != nil {
		t.Fatalf("migrating down to version 13: %v", err)
	}
	var n int
	if err := m.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM objects WHERE bucket = 'old'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("objects after the down migration: %d %v", n, err)
	}
}

// RunObjectLockMigration checks migration 15 (object lock) up and down:
// buckets, objects, versions and uploads written before it have no object
// lock; after it, locks are kept; down drops them and keeps the rows.
func RunObjectLockMigration(t *testing.T, m Migrator) {
	ctx := t.Context()
	if err := m.To(ctx, 14); err != nil {
		t.Fatalf("migrating to version 14: %v", err)
	}
	for _, q := range []string{
		`INSERT INTO buckets (name, owner_id, versioning) VALUES ('old', 'u1', 'Enabled')`,
		`INSERT INTO objects (bucket, key, size, etag, blob_id, blobs, last_modified, version_id) VALUES ('old', 'k', 3, 'e', 'blob-k', '', 1700000000000, 'v2')`,
		`INSERT INTO object_blobs (bucket, key, blob_id) VALUES ('old', 'k', 'blob-k')`,
		`INSERT INTO object_versions (bucket, key, version_id, seq, size, blob_id, blobs, last_modified) VALUES ('old', 'k', 'v1', 1, 0, '', '[]', 1600000000000)`,
		`INSERT INTO uploads (id, bucket, key, owner_id, initiated) VALUES ('up1', 'old', 'k', 'u1', 1700000000000)`,
	} {
		if _, err := m.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, closeStore := m.Open(t)
	b, err := s.GetBucket(ctx, "old")
	if err != nil || b.ObjectLock != "" || b.Versioning != meta.VersioningEnabled {
		t.Fatalf("old bucket: %+v %v", b, err)
	}
	for _, id := range []string{"v1", "v2"} {
		o, err := s.GetObjectVersion(ctx, "old", "k", id)
		if err != nil || o.Lock != (meta.ObjectLock{}) {
			t.Fatalf("old version %s: %+v %v", id, o, err)
		}
	}
	u, err := s.GetUpload(ctx, "up1")
	if err != nil || u.Lock != (meta.ObjectLock{}) {
		t.Fatalf("old upload: %+v %v", u, err)
	}
	if err := s.SetBucketConfig(ctx, "old", meta.BucketObjectLock, `{"enabled":true}`); err != nil {
		t.Fatal(err)
	}
	until := time.UnixMilli(1900000000000).UTC()
	if _, err := s.SetObjectRetention(ctx, "old", "k", "v1", meta.ObjectLock{Mode: meta.LockCompliance, RetainUntil: until}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetObjectLegalHold(ctx, "old", "k", "v2", meta.LegalHoldOn); err != nil {
		t.Fatal(err)
	}
	if o, err := s.GetObjectVersion(ctx, "old", "k", "v1"); err != nil || o.Lock.Mode != meta.LockCompliance || !o.Lock.RetainUntil.Equal(until) {
		t.Fatalf("v1 after its retention was set: %+v %v", o, err)
	}
	closeStore()
	if err := m.To(ctx, 14); err != nil {
		t.Fatalf("migrating down to version 14: %v", err)
	}
	var n int
	if err := m.DB.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM objects) + (SELECT COUNT(*) FROM object_versions) + (SELECT COUNT(*) FROM uploads)`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("rows after the down migration: %d %v", n, err)
	}
	if _, err := m.DB.ExecContext(ctx, `SELECT lock_mode FROM objects`); err == nil {
		t.Fatal("objects.lock_mode is still there after the down migration")
	}
}
