package sqlcore

import (
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Dialect is what sqlcore needs to know about a database and its driver.
type Dialect struct {
	// Numbered selects $1, $2, … placeholders (PostgreSQL) instead of '?'.
	Numbered bool
	// IsUnique reports whether err is a unique or primary-key violation.
	IsUnique func(err error) bool
	// IsForeignKey reports whether err is a foreign-key violation.
	IsForeignKey func(err error) bool
	// Kind classifies any other driver error: Unavailable for a busy or
	// unreachable database, IO for a failed disk, Other when unknown.
	Kind func(err error) errs.Kind
	// ForUpdate is the row-locking clause appended to a SELECT in a write
	// transaction: " FOR UPDATE" in PostgreSQL, where concurrent
	// transactions interleave. SQLite leaves it empty: its write
	// transactions run one at a time.
	ForUpdate string
	// GroupCommit runs concurrent write transactions together, each in a
	// savepoint of one database transaction, so that they share one
	// commit (see groupCommit). SQLite, whose single writer syncs its log
	// at every commit, sets it; PostgreSQL, whose transactions run in
	// parallel on several connections, does not.
	GroupCommit bool
}

// Rebind rewrites the '?' placeholders of query for d. Question marks inside
// quoted strings and identifiers are left alone.
func (d Dialect) Rebind(query string) string {
	if !d.Numbered || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	var quote byte // the open quote character, or 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
