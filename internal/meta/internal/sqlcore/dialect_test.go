package sqlcore

import (
	"testing"
)

func TestRebind(t *testing.T) {
	pg := Dialect{Numbered: true}
	for in, want := range map[string]string{
		`SELECT 1`:                                      `SELECT 1`,
		`SELECT a FROM t WHERE b = ? AND c = ?`:         `SELECT a FROM t WHERE b = $1 AND c = $2`,
		`SELECT '?', "?" FROM t WHERE x = ?`:            `SELECT '?', "?" FROM t WHERE x = $1`,
		`SELECT 'it''s ?' WHERE a = ? LIMIT ? OFFSET ?`: `SELECT 'it''s ?' WHERE a = $1 LIMIT $2 OFFSET $3`,
	} {
		if got := pg.Rebind(in); got != want {
			t.Errorf("Rebind(%q) = %q, want %q", in, got, want)
		}
		if got := (Dialect{}).Rebind(in); got != in {
			t.Errorf("unnumbered Rebind(%q) = %q", in, got)
		}
	}
}
