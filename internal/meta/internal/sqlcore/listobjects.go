package sqlcore

import (
	"context"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// MaxKeys is the most objects and common prefixes ListObjects returns in a
// page, and its default.
const MaxKeys = 1000

// ListObjects returns a page of the objects whose keys start with
// q.Prefix, in byte order; NotFound if the bucket does not exist, Invalid if
// the prefix, delimiter or StartAfter is not NUL-free UTF-8.
//
// With a delimiter, a key that holds it after the prefix is rolled up into
// its common prefix: the prefix and the key's text up to and including the
// first delimiter after it. The page lists objects and common prefixes
// merged in byte order (a common prefix sorts before every key under it and
// after every key before it), and skips those <= StartAfter. A StartAfter
// under a common prefix thus skips the whole prefix, which lets a caller
// pass NextStartAfter, the last entry of a truncated page, to get the next
// page without duplicates or gaps. MaxKeys <= 0 means MaxKeys; larger values
// are capped at it. Objects and CommonPrefixes are never nil.
//
// The page is read by range scans of the primary key, [Prefix,
// successor(Prefix)) past StartAfter, in one read-only transaction, so that
// it is one snapshot. Without a delimiter one scan reads it. With one, when
// the scan meets a common prefix it reads on past a few of the keys under
// it, which costs less than a query, but then stops and seeks to the
// prefix's successor instead of reading them all; batches shrink after such
// a seek and grow again while there is none. Only the objects returned are
// decoded.
func (s *Store) ListObjects(ctx context.Context, q meta.ListObjectsQuery) (*meta.ListObjectsResult, error) {
	const op errs.Op = "meta.ListObjects"
	if err := validText(op, "prefix", q.Prefix, "delimiter", q.Delimiter, "start-after", q.StartAfter); err != nil {
		return nil, err
	}
	maxKeys := q.MaxKeys
	if maxKeys <= 0 || maxKeys > MaxKeys {
		maxKeys = MaxKeys
	}
	res := &meta.ListObjectsResult{Objects: []*meta.Object{}, CommonPrefixes: []string{}}
	kr := prefixRange(q.Prefix).after(q.StartAfter, false)
	err := s.readTx(ctx, func(tx *snapshot) error {
		if err := s.bucketExists(ctx, tx, op, q.Bucket); err != nil {
			return err
		}
		if q.Delimiter == "" {
			return s.listFlat(ctx, tx, q.Bucket, kr, maxKeys, q.Access, res)
		}
		return s.listGrouped(ctx, tx, q, kr, maxKeys, res)
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return res, nil
}

// listFlat lists the objects in kr, without grouping.
func (s *Store) listFlat(ctx context.Context, tx *snapshot, bucket string, kr keyRange, maxKeys int, withAccess bool, res *meta.ListObjectsResult) error {
	if kr.empty() {
		return nil
	}
	cond, args := kr.where(`key`)
	objects, err := listIn(ctx, s, tx, func(sc scanner) (*meta.Object, error) {
		var r objectRow
		if err := r.scanListed(sc, withAccess); err != nil {
			return nil, err
		}
		return r.object()
	},
		`SELECT `+listCols(withAccess)+` FROM objects WHERE bucket = ? AND `+cond+` ORDER BY key `+limitArg,
		append(append([]any{bucket}, args...), maxKeys+1)...) // one past the page tells it is truncated
	if err != nil {
		return err
	}
	if len(objects) > maxKeys {
		objects = objects[:maxKeys]
		res.Truncated, res.NextStartAfter = true, objects[maxKeys-1].Key
	}
	res.Objects = objects
	return nil
}

// listGrouped lists the objects and common prefixes in kr.
func (s *Store) listGrouped(ctx context.Context, tx *snapshot, q meta.ListObjectsQuery, kr keyRange, maxKeys int, res *meta.ListObjectsResult) error {
	g := grouper{s: s, tx: tx, q: q, max: maxKeys, batch: maxKeys + 1, kr: kr, res: res}
	if cp, ok := g.commonPrefix(q.StartAfter); ok {
		// StartAfter is under a common prefix, which is <= StartAfter: the
		// keys under it are skipped.
		if !g.skip(cp) {
			return nil
		}
	}
	for !g.done && !g.kr.empty() {
		if err := g.next(ctx); err != nil {
			return err
		}
	}
	return nil
}

// skipRun is how many keys under a common prefix a grouped listing reads
// past before it seeks past them instead.
const skipRun = 8

// grouper reads the entries of a grouped listing into res.
type grouper struct {
	s     *Store
	tx    *snapshot
	q     meta.ListObjectsQuery
	max   int
	batch int      // rows the next query reads, at most
	kr    keyRange // the keys not yet read
	res   *meta.ListObjectsResult
	n     int    // entries in res
	last  string // the last entry
	done  bool   // res is complete
}

// commonPrefix returns the common prefix key rolls up into, if any.
func (g *grouper) commonPrefix(key string) (string, bool) {
	if !strings.HasPrefix(key, g.q.Prefix) {
		return "", false
	}
	i := strings.Index(key[len(g.q.Prefix):], g.q.Delimiter)
	if i < 0 {
		return "", false
	}
	return key[:len(g.q.Prefix)+i+len(g.q.Delimiter)], true
}

// skip moves the scan past the keys under cp, and reports whether any key
// can follow them.
func (g *grouper) skip(cp string) bool {
	next, ok := successor(cp)
	if !ok {
		return false
	}
	g.kr = g.kr.after(next, true)
	return true
}

// full reports whether the page is full; if it is, the entry at hand
// makes it truncated, and the listing is done.
func (g *grouper) full() bool {
	if g.n < g.max {
		g.n++
		return false
	}
	g.res.Truncated, g.res.NextStartAfter = true, g.last
	g.done = true
	return true
}

// next reads one batch of rows from the start of g.kr and adds their
// entries. It sets done when the page is full or the keys ran out.
func (g *grouper) next(ctx context.Context) error {
	limit := min(g.batch, g.max+1-g.n) // one entry past the page tells it is truncated
	cond, args := g.kr.where(`key`)
	rows, err := g.s.query(ctx, g.tx,
		`SELECT `+listCols(g.q.Access)+` FROM objects WHERE bucket = ? AND `+cond+` ORDER BY key `+limitArg,
		append(append([]any{g.q.Bucket}, args...), limit)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	read, run := 0, 0
	cp := "" // the common prefix of the last entry, or ""
	var r objectRow
	for rows.Next() {
		read++
		if err := r.scanListed(rows, g.q.Access); err != nil {
			return err
		}
		key := r.o.Key
		if cp != "" && strings.HasPrefix(key, cp) {
			if run++; run == skipRun {
				break
			}
			continue
		}
		if p, ok := g.commonPrefix(key); ok {
			if g.full() {
				return nil
			}
			cp, run = p, 0
			g.res.CommonPrefixes = append(g.res.CommonPrefixes, cp)
			g.last = cp
			continue
		}
		if g.full() {
			return nil
		}
		cp = ""
		o, err := r.object()
		if err != nil {
			return err
		}
		g.res.Objects = append(g.res.Objects, o)
		g.last = key
		g.kr = g.kr.after(key, false)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	switch {
	case read < limit && run < skipRun: // no more keys
		g.done = true
	case cp != "":
		// Under a common prefix: seek past it, with a small batch after a
		// run of rolled-up keys, which suggests more like it.
		if !g.skip(cp) {
			g.done = true
		}
		if run == skipRun {
			g.batch = 2 * skipRun
		} else {
			g.batch = min(2*g.batch, g.max+1)
		}
	default:
		g.batch = min(2*g.batch, g.max+1)
	}
	return nil
}

// listCols are the columns of a listing, with the tags and ACL or without.
func listCols(withAccess bool) string {
	if withAccess {
		return listAccessColumns
	}
	return listColumns
}
