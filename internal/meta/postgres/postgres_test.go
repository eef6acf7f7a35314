package postgres_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for the admin connection

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/metatest"
	"github.com/atelier-dev/atelier/internal/meta/postgres"
)

// server is a PostgreSQL server the tests may create databases on.
type server struct {
	admin *url.URL // the admin DSN
	db    *sql.DB  // connected with it
}

// newServer connects to the server named by ATELIER_TEST_POSTGRES_DSN. It
// skips the test when the variable is unset, except in CI, where that is a
// failure.
func newServer(t *testing.T) *server {
	t.Helper()
	dsn := os.Getenv("ATELIER_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL is required in CI: .ci/run must start it (scripts/pg-tmp.sh) and set ATELIER_TEST_POSTGRES_DSN")
		}
		t.Skip("ATELIER_TEST_POSTGRES_DSN is unset; start a server with scripts/pg-tmp.sh")
	}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("ATELIER_TEST_POSTGRES_DSN must be a postgres:// URL")
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.PingContext(t.Context()); err != nil {
		t.Fatalf("cannot reach the PostgreSQL of ATELIER_TEST_POSTGRES_DSN: %v", err)
	}
	return &server{admin: u, db: db}
}

// createDB creates an empty database that t's cleanup drops, and returns
// its DSN.
func (srv *server) createDB(t *testing.T) string {
	t.Helper()
	name := "atelier_test_" + randomHex()
	if _, err := srv.db.ExecContext(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := srv.db.ExecContext(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u := *srv.admin
	u.Path = "/" + name
	return u.String()
}

func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// open opens a store whose Close t's cleanup calls; registered after
// createDB's cleanup, it runs before the drop.
func open(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	srv := newServer(t)
	metatest.Run(t, func(t *testing.T) meta.Store {
		return open(t, srv.createDB(t))
	})
}

func TestReopen(t *testing.T) {
	srv := newServer(t)
	metatest.RunReopen(t, func(t *testing.T) (meta.Store, func() meta.Store) {
		dsn := srv.createDB(t)
		return open(t, dsn), func() meta.Store { return open(t, dsn) }
	})
}

// TestConcurrentOpen starts several stores on one new database at once, as
// servers starting together would: the migration lock must serialise them.
func TestConcurrentOpen(t *testing.T) {
	srv := newServer(t)
	dsn := srv.createDB(t)
	const n = 5
	stores := make([]*postgres.Store, n)
	errc := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errc[i] = postgres.Open(t.Context(), dsn) })
	}
	wg.Wait()
	for i := range n {
		if errc[i] != nil {
			t.Fatal(errc[i])
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if err := stores[0].CreateUser(t.Context(), &meta.User{ID: "u1", Name: "ada"}); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[n-1].GetUser(t.Context(), "u1"); err != nil {
		t.Fatal(err)
	}
}

const password = "s3cr3t-Pa55w0rd"

// freePort returns a TCP port on 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// wantOpenError opens dsn and checks the error's kind, that its message
// contains want and never the password, and that it came within limit.
func wantOpenError(t *testing.T, dsn string, kind errs.Kind, want string, limit time.Duration) error {
	t.Helper()
	start := time.Now()
	s, err := postgres.Open(t.Context(), dsn)
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	t.Logf("after %v: %v (hint: %s)", took.Round(time.Millisecond), err, errs.HintOf(err))
	if !errs.Is(err, kind) {
		t.Errorf("got kind %q, want %q", errs.KindOf(err), kind)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("message %q does not contain %q", err, want)
	}
	for _, text := range []string{err.Error(), errs.UserMessage(err), string(errs.HintOf(err))} {
		if strings.Contains(text, password) {
			t.Errorf("the password leaked: %q", text)
		}
	}
	if took > limit {
		t.Errorf("took %v, want under %v", took, limit)
	}
	return err
}

func TestOpenUnreachable(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dsn := fmt.Sprintf("postgres://atelier:%s@%s/atelier", password, addr)
	err := wantOpenError(t, dsn, errs.Unavailable, "cannot reach PostgreSQL at "+addr+": connection refused", 5*time.Second)
	if hint := errs.HintOf(err); !strings.Contains(string(hint), "PostgreSQL is running") || !strings.Contains(string(hint), "--meta") {
		t.Errorf("hint %q does not say what to check", hint)
	}
}

func TestOpenNoSocket(t *testing.T) {
	dir := t.TempDir()
	dsn := fmt.Sprintf("host=%s port=5432 user=atelier password=%s dbname=atelier", dir, password)
	wantOpenError(t, dsn, errs.Unavailable, "cannot reach PostgreSQL at "+dir+"/.s.PGSQL.5432: no server socket there", 5*time.Second)
}

// TestOpenConnectTimeout points the store at a server that accepts TCP
// connections and never answers: the DSN's connect_timeout must bound Open.
func TestOpenConnectTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // hold it open, say nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	addr := l.Addr().String()
	dsn := fmt.Sprintf("postgres://atelier:%s@%s/atelier?sslmode=disable&connect_timeout=1", password, addr)
	wantOpenError(t, dsn, errs.Unavailable, "cannot reach PostgreSQL at "+addr+": no answer within 1s", 4*time.Second)
}

func TestOpenBadDSN(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://atelier:" + password + "@127.0.0.1:notaport/atelier", "invalid PostgreSQL DSN: invalid port"},
		{"postgres://atelier:" + password + "@127.0.0.1/atelier?sslmode=bogus", "invalid PostgreSQL DSN: failed to configure TLS"},
		{"host=127.0.0.1 password=" + password + " connect_timeout=soon", "invalid PostgreSQL DSN: invalid connect_timeout"},
		{"postgres://atelier:" + password + " x@127.0.0.1/atelier", "invalid PostgreSQL DSN: failed to parse as URL"},
		{"postgres://atelier:" + password + "@[::1/atelier", "invalid PostgreSQL DSN"},
	} {
		t.Run("", func(t *testing.T) {
			wantOpenError(t, tc.dsn, errs.Invalid, tc.want, time.Second)
		})
	}
}

func TestOpenNoDatabase(t *testing.T) {
	srv := newServer(t)
	u := *srv.admin
	u.User = url.UserPassword(srv.admin.User.Username(), password)
	u.Path = "/atelier_no_such_database"
	wantOpenError(t, u.String(), errs.Invalid, `refused the connection: database "atelier_no_such_database" does not exist`, 5*time.Second)
}

func TestOpenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, err := postgres.Open(ctx, fmt.Sprintf("postgres://atelier:%s@%s/atelier", password, addr))
	if !errs.Is(err, errs.Unavailable) || strings.Contains(err.Error(), password) {
		t.Fatalf("got %v", err)
	}
}

// TestOpenMigrationFails logs in as a role that may not create tables.
func TestOpenMigrationFails(t *testing.T) {
	srv := newServer(t)
	dsn := srv.createDB(t) // registered first, so dropped after the role
	role := "atelier_test_ro_" + randomHex()
	if _, err := srv.db.ExecContext(t.Context(), "CREATE ROLE "+role+" LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := srv.db.ExecContext(context.Background(), "DROP ROLE "+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	err = wantOpenError(t, u.String(), errs.Other, "cannot migrate the metadata database at "+u.Host, 5*time.Second)
	if !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("message %q does not say why", err)
	}
	if !strings.Contains(string(errs.HintOf(err)), "create tables") {
		t.Errorf("hint %q does not say what to check", errs.HintOf(err))
	}
}

// TestInsertRace makes PutObject and PutPart lose the race to insert a row:
// another transaction inserts it after their SELECT … FOR UPDATE found
// nothing, so their INSERT waits for it. Once it commits, they must find,
// replace and return its row.
func TestInsertRace(t *testing.T) {
	srv := newServer(t)
	dsn := srv.createDB(t)
	s := open(t, dsn)
	ctx := t.Context()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if err := s.CreateBucket(ctx, &meta.Bucket{Name: "b1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUpload(ctx, &meta.Upload{ID: "up1", Bucket: "b1", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, insert string
		put          func() (string, error) // returns what the replaced row holds
	}{
		{"object", `INSERT INTO objects (bucket, key, size, etag) VALUES ('b1', 'k', 0, 'raw')`,
			func() (string, error) {
				old, err := s.PutObject(ctx, &meta.Object{Bucket: "b1", Key: "k", ETag: "new"})
				if old == nil {
					return "", err
				}
				return old.ETag, err
			}},
		{"part", `INSERT INTO upload_parts (upload_id, number, blob_id, size) VALUES ('up1', 1, 'raw', 0)`,
			func() (string, error) {
				old, err := s.PutPart(ctx, &meta.UploadPart{UploadID: "up1", Number: 1, Blob: meta.Blob{ID: "new"}})
				if old == nil {
					return "", err
				}
				return old.Blob.ID, err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := raw.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(ctx, tc.insert); err != nil {
				t.Fatal(err)
			}
			type result struct {
				replaced string
				err      error
			}
			done := make(chan result, 1)
			go func() {
				v, err := tc.put()
				done <- result{v, err}
			}()
			// Wait until the store's INSERT waits for tx.
			for waiting := 0; waiting == 0; {
				select {
				case r := <-done:
					t.Fatalf("the put did not wait: %+v", r)
				case <-time.After(10 * time.Millisecond):
				}
				err := raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil || r.replaced != "raw" {
				t.Fatalf("got replaced %q, error %v; want the row of the other transaction", r.replaced, r.err)
			}
		})
	}
	o, err := s.GetObject(ctx, "b1", "k")
	if err != nil || o.ETag != "new" {
		t.Fatalf("stored object: %+v, %v", o, err)
	}
	parts, _, err := s.ListParts(ctx, "up1", 0, 0)
	if err != nil || len(parts) != 1 || parts[0].Blob.ID != "new" {
		t.Fatalf("stored parts: %+v, %v", parts, err)
	}
}
