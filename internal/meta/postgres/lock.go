package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/atelier-dev/atelier/internal/errs"
)

// The advisory lock one server holds on a database for as long as it runs
// (two int4 keys: "ATLR", 1).
const (
	serverLockKey1 = 0x41544c52
	serverLockKey2 = 1
)

// LockServer makes this Store's server the only one on the database: it
// takes a session advisory lock on a connection of its own, kept until
// release, and names the connection holder (application_name, at most 63
// bytes) so that a second server can say who holds it. A second server
// gets a Conflict error naming the holder and its client address.
func (s *Store) LockServer(ctx context.Context, holder string) (release func(), err error) {
	const op errs.Op = "postgres.LockServer"
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, errs.E(op, errs.Unavailable, "cannot open a connection for the server lock", err)
	}
	if len(holder) > 63 {
		holder = holder[:63]
	}
	var ok bool
	if _, err = conn.ExecContext(ctx, "SELECT set_config('application_name', $1, false)", holder); err == nil {
		err = conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1, $2)", serverLockKey1, serverLockKey2).Scan(&ok)
	}
	if err != nil {
		conn.Close()
		return nil, errs.E(op, errs.Unavailable, "cannot take the server lock", err)
	}
	if !ok {
		var who, addr sql.NullString
		conn.QueryRowContext(ctx, `SELECT a.application_name, host(a.client_addr) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2`,
			serverLockKey1, serverLockKey2).Scan(&who, &addr)
		conn.Close()
		desc := "another atelier server"
		if who.String != "" {
			desc = fmt.Sprintf("%q", who.String)
		}
		if addr.String != "" {
			desc += " connected from " + addr.String
		}
		return nil, errs.E(op, errs.Conflict, "the metadata database is in use by "+desc)
	}
	return func() {
		conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1, $2)", serverLockKey1, serverLockKey2)
		conn.Close()
	}, nil
}
