package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/internal/sqlcore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DefaultConnectTimeout bounds each connection attempt when the DSN sets no
// connect_timeout.
const DefaultConnectTimeout = 5 * time.Second

// MaxConns caps the connections one Store opens.
const MaxConns = 16

const (
	hintReach   = errs.Hint("Check that PostgreSQL is running and accepts TCP connections at that address, and that the --meta DSN names the right host and port.")
	hintLogin   = errs.Hint("Check the user, password and database name in the --meta DSN; the database must exist.")
	hintMigrate = errs.Hint("Atelier creates its tables when it starts: the --meta user must be allowed to create tables in the database's public schema (for example, own the database).")
	hintDSN     = errs.Hint("Give --meta a PostgreSQL URL such as postgres://atelier:PASSWORD@db.example:5432/atelier?sslmode=disable.")
)

var _ meta.Store = (*Store)(nil)

// Store is a meta.Store in a PostgreSQL database.
type Store struct {
	*sqlcore.Store
	db *sql.DB
}

// Open connects to the PostgreSQL database named by dsn (a postgres:// URL or
// a key=value string) and migrates it to the current schema. It fails with
// kind Invalid when dsn cannot be parsed or the server rejects the login, and
// with kind Unavailable, naming the address and carrying a hint, when the
// server cannot be reached within the connect timeout.
func Open(ctx context.Context, dsn string) (*Store, error) {
	const op errs.Op = "postgres.Open"
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errs.E(op, errs.Invalid, hintDSN, "invalid PostgreSQL DSN"+parseDetail(err))
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(MaxConns)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, connectError(op, cfg, err)
	}
	// Servers starting together wait for each other's migrations, polling
	// the lock every second for up to five minutes.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		db.Close()
		return nil, errs.E(op, errs.Internal, err)
	}
	err = sqlcore.Migrate(ctx, db, goose.DialectPostgres, migrations, "migrations", goose.WithSessionLocker(locker))
	if errs.CodeOf(err) != "" { // a store's own error (a schema too new): its code and hint stand
		db.Close()
		return nil, errs.E(op, err)
	}
	if err != nil {
		db.Close()
		return nil, errs.E(op, kind(err), hintMigrate,
			fmt.Sprintf("cannot migrate the metadata database at %s", address(cfg)),
			redact(err, cfg.Password))
	}
	return &Store{Store: sqlcore.New(dialect, db, db), db: db}, nil
}

// parseDetail explains a DSN parse error without repeating the DSN, which
// may hold a password: pgx quotes the DSN (redacted, on a best-effort basis)
// before its reason, so only the reason is kept, and not even that when it
// still seems to quote a DSN.
func parseDetail(err error) string {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = strings.ReplaceAll(msg, ue.Error(), ue.Err.Error())
	}
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		msg = msg[i+len("`: "):]
	}
	if strings.Contains(msg, "`") || strings.Contains(msg, "://") || strings.Contains(msg, "password=") {
		return ""
	}
	return ": " + msg
}

// connectError describes a failed first connection. Its messages name the
// address, never the DSN.
func connectError(op errs.Op, cfg *pgx.ConnConfig, err error) error {
	addr := address(cfg)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		msg := fmt.Sprintf("PostgreSQL at %s refused the connection: %s", addr, pgErr.Message)
		switch pgErr.Code {
		case "28000", "28P01", "3D000", "42501": // bad login, no such database, no CONNECT privilege
			return errs.E(op, errs.Invalid, hintLogin, msg)
		}
		return errs.E(op, errs.Unavailable, hintReach, msg)
	}
	return errs.E(op, errs.Unavailable, hintReach,
		fmt.Sprintf("cannot reach PostgreSQL at %s: %s", addr, reason(cfg, err)))
}

// reason says in a few words why a connection could not be made.
func reason(cfg *pgx.ConnConfig, err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case pgconn.Timeout(err), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %s", cfg.ConnectTimeout)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve host %q", dnsErr.Name)
	case errors.Is(err, syscall.ENETUNREACH):
		return "network is unreachable"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to host"
	case errors.Is(err, syscall.ENOENT):
		return "no server socket there"
	}
	return redact(err, cfg.Password).Error()
}

// address is where cfg connects: host:port, or the Unix socket path.
func address(cfg *pgx.ConnConfig) string {
	port := strconv.Itoa(int(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") {
		return cfg.Host + "/.s.PGSQL." + port
	}
	return net.JoinHostPort(cfg.Host, port)
}

// redact returns err as plain text with every occurrence of password masked.
// The result does not wrap err, so the original text cannot be reached.
func redact(err error, password string) error {
	msg := err.Error()
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "xxxxx")
	}
	return errors.New(msg)
}

var dialect = sqlcore.Dialect{
	Numbered:     true,
	IsUnique:     func(err error) bool { return sqlState(err) == "23505" },
	IsForeignKey: func(err error) bool { return sqlState(err) == "23503" },
	Kind:         kind,
	ForUpdate:    " FOR UPDATE",
}

// sqlState is the SQLSTATE of a server error, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// kind classifies a PostgreSQL or connection error.
func kind(err error) errs.Kind {
	if state := sqlState(err); state != "" {
		switch {
		case state == "53100": // disk_full: the statement failed, nothing was written
			return errs.NoSpace
		case strings.HasPrefix(state, "08"), // connection exception
			strings.HasPrefix(state, "53"),     // insufficient resources
			strings.HasPrefix(state, "57P"),    // server shutting down or starting
			state == "40001", state == "40P01": // serialization failure, deadlock: retry
			return errs.Unavailable
		case strings.HasPrefix(state, "58"): // system error, e.g. I/O
			return errs.IO
		}
		return errs.Other
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, pgconn.ErrConnClosed),
		errors.As(err, &connErr), errors.As(err, &netErr), pgconn.Timeout(err):
		return errs.Unavailable
	}
	return errs.Other
}
