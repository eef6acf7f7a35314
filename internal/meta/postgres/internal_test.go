package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/atelier-dev/atelier/internal/errs"
)

func TestParseDetail(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("cannot parse `postgres://u:xxxxx@h/db`: invalid port"), ": invalid port"},
		{fmt.Errorf("cannot parse `x`: failed to parse as URL (%w)", &url.Error{Op: "parse", URL: "postgres://u:pw@h:x/db", Err: errors.New("invalid port")}),
			": failed to parse as URL (invalid port)"},
		{errors.New("cannot parse `x`: bad (postgres://u:pw@h/db)"), ""},
		{errors.New("cannot parse `x`: bad near password=pw"), ""},
		{errors.New("cannot parse `x`: bad near `pw`"), ""},
	} {
		if got := parseDetail(tc.err); got != tc.want {
			t.Errorf("parseDetail(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	err := errors.New("login as u with hunter2 failed; hunter2!")
	if got := redact(err, "hunter2").Error(); got != "login as u with xxxxx failed; xxxxx!" {
		t.Errorf("got %q", got)
	}
	if got := redact(err, "").Error(); got != err.Error() {
		t.Errorf("got %q", got)
	}
	if errors.Unwrap(redact(err, "x")) != nil {
		t.Error("redact wraps the original error")
	}
}

func TestAddress(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u@db.example:6543/x":                "db.example:6543",
		"postgres://u@[::1]/x":                          "[::1]:5432",
		"host=/run/postgresql dbname=x":                 "/run/postgresql/.s.PGSQL.5432",
		"postgres://u@127.0.0.1:5999/x?sslmode=disable": "127.0.0.1:5999",
	} {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := address(cfg); got != want {
			t.Errorf("address(%q) = %q, want %q", dsn, got, want)
		}
	}
}

func TestConnectErrorKinds(t *testing.T) {
	cfg, err := pgx.ParseConfig("postgres://u:pw@127.0.0.1:5999/x?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err  error
		kind errs.Kind
		msg  string
	}{
		{&pgconn.PgError{Code: "28P01", Message: "password authentication failed"}, errs.Invalid,
			"PostgreSQL at 127.0.0.1:5999 refused the connection: password authentication failed"},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, errs.Unavailable,
			"PostgreSQL at 127.0.0.1:5999 refused the connection: the database system is starting up"},
		{errors.New("odd failure for pw"), errs.Unavailable, "cannot reach PostgreSQL at 127.0.0.1:5999: odd failure for xxxxx"},
	} {
		err := connectError("op", cfg, tc.err)
		if !errs.Is(err, tc.kind) || errs.UserMessage(err) != tc.msg {
			t.Errorf("connectError(%v) = %q (kind %q), want %q (kind %q)", tc.err, errs.UserMessage(err), errs.KindOf(err), tc.msg, tc.kind)
		}
	}
}

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want errs.Kind
	}{
		{&pgconn.PgError{Code: "08006"}, errs.Unavailable},
		{&pgconn.PgError{Code: "53300"}, errs.Unavailable},
		{&pgconn.PgError{Code: "53100"}, errs.NoSpace}, // disk_full
		{&pgconn.PgError{Code: "57P01"}, errs.Unavailable},
		{&pgconn.PgError{Code: "40001"}, errs.Unavailable},
		{&pgconn.PgError{Code: "58030"}, errs.IO},
		{&pgconn.PgError{Code: "42601"}, errs.Other},
		{fmt.Errorf("x: %w", driver.ErrBadConn), errs.Unavailable},
		{pgconn.ErrConnClosed, errs.Unavailable},
		{errors.New("what"), errs.Other},
	} {
		if got := kind(tc.err); got != tc.want {
			t.Errorf("kind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestReason(t *testing.T) {
	cfg, err := pgx.ParseConfig("postgres://u:pw@127.0.0.1:5999/x?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), "connection refused"},
		{fmt.Errorf("x: %w", context.Canceled), "canceled"},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), "no answer within 2s"},
		{&net.DNSError{Err: "no such host", Name: "db.invalid"}, `cannot resolve host "db.invalid"`},
		{fmt.Errorf("dial: %w", syscall.ENETUNREACH), "network is unreachable"},
		{fmt.Errorf("dial: %w", syscall.EHOSTUNREACH), "no route to host"},
		{fmt.Errorf("dial: %w", syscall.ENOENT), "no server socket there"},
		{errors.New("strange, pw"), "strange, xxxxx"},
	} {
		if got := reason(cfg, tc.err); got != tc.want {
			t.Errorf("reason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
