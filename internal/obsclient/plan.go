package obsclient

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/keypath"
)

// Entry is one file or object of a listing.
type Entry struct {
	// Rel is the path below the listed root, slash-separated; for a
	// single file or object it is the base name.
	Rel     string
	Path    string // the local file's path, or the object's key
	Size    int64
	ModTime time.Time // local mtime, or the object's last-modified time
	ETag    string    // objects only, without quotes
}

// Source is what a copy or sync reads: one file or object (Dir false, one
// entry), or a directory or prefix whose contents are Entries.
type Source struct {
	Loc     Location
	Dir     bool
	Entries []Entry
	// Pruned names the skipped directories (".git", "__pycache__") that
	// a local walk did not enter.
	Pruned []string
}

// Dest is where a copy or sync writes.
type Dest struct {
	Loc Location
	// Dir is set when Loc is an existing local directory or an OBS prefix
	// holding objects: a single file is copied into it.
	Dir bool
}

// Op is the kind of a transfer.
type Op uint8

// Kinds of transfer.
const (
	Upload     Op = iota + 1 // local file to object
	Download                 // object to local file
	ServerCopy               // object to object, on the server
)

func (o Op) String() string {
	switch o {
	case Upload:
		return "upload"
	case Download:
		return "download"
	case ServerCopy:
		return "copy"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Transfer copies one file or object.
type Transfer struct {
	Op      Op
	Src     Location
	Dst     Location
	Size    int64
	ModTime time.Time // of the source
	ETag    string    // of a source object
	// VersionID is the source object's version to read ("" for the
	// current one).
	VersionID string
}

// Plan is what a copy or sync will do.
type Plan struct {
	Transfers []Transfer
	Deletes   []Location // sync --delete: extras at the destination
	Unchanged int        // sync: files already equal at the destination
	Skipped   int        // entries left out by the .git/__pycache__ rule
	Warnings  []string
}

// CopyOptions are the options of a copy (and a move).
type CopyOptions struct {
	Recursive bool // copy the contents of a directory or prefix
	All       bool // include .git/ and __pycache__/
	Force     bool // replace existing local files
	Move      bool // delete each source once it is copied
}

// SyncOptions are the options of a sync.
type SyncOptions struct {
	Delete bool // delete destination entries the source lacks
	All    bool // include .git/ and __pycache__/
	// PartSize is the part size tried first when a multipart ETag is
	// compared with a local file; Client.Sync sets the client's.
	PartSize int64
	// ETags computes a local file's ETags for the given part sizes
	// (0: single-part MD5); Client.Sync sets FileETags.
	ETags func(path string, partSizes []int64) ([]string, error)
}

// skippedDirs are the directory names left out unless All is set.
func skippedDirs() []string { return []string{".git", "__pycache__"} }

// SkippedDir is the name of the directory element of rel (slash-separated)
// that the default rules skip (".git" or "__pycache__"), or "". The last
// element is a file name and never matches.
func SkippedDir(rel string) string {
	elems := strings.Split(rel, "/")
	for _, e := range elems[:len(elems)-1] {
		if slices.Contains(skippedDirs(), e) {
			return e
		}
	}
	return ""
}

// opFor is the kind of transfer from src to dst.
func opFor(src, dst Location) (Op, error) {
	switch {
	case src.Remote() && dst.Remote():
		return ServerCopy, nil
	case dst.Remote():
		return Upload, nil
	case src.Remote():
		return Download, nil
	}
	return 0, errs.E("obsclient.plan", errs.Invalid, errs.Hint("write the OBS side as obs://BUCKET/KEY"),
		fmt.Sprintf("%s and %s are both local paths; one of them must be in OBS", src, dst))
}

// PlanCopy plans copying src to dst. A single file goes to dst, or under
// its base name into dst when dst is written with a trailing slash or is an
// existing directory; the contents of a directory (only with Recursive) go
// under dst taken as a directory.
func PlanCopy(src Source, dst Dest, o CopyOptions) (Plan, error) {
	const op errs.Op = "obsclient.PlanCopy"
	kind, err := opFor(src.Loc, dst.Loc)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	if !src.Dir {
		if len(src.Entries) != 1 {
			return Plan{}, errs.E(op, errs.Internal, fmt.Sprintf("a single source has %d entries", len(src.Entries)))
		}
		e := src.Entries[0]
		target := dst.Loc
		if dst.Dir || dst.Loc.DirSyntax() {
			target = dst.Loc.Join(e.Rel)
		}
		p.add(kind, src.Loc, target, e)
		return p, p.checkSame()
	}
	if !o.Recursive {
		verb := "copy"
		if o.Move {
			verb = "move"
		}
		return Plan{}, errs.E(op, errs.Invalid, fmt.Sprintf("%s is a directory; use -r to %s its contents", src.Loc, verb))
	}
	src.Entries = p.filter(kind, src, o.All)
	base := dst.Loc.AsDir()
	for _, e := range src.Entries {
		p.add(kind, src.Loc.Join(e.Rel), base.Join(e.Rel), e)
	}
	return p, p.checkSame()
}

// PlanSync plans making dst (a directory or prefix holding existing)
// equal to the directory or prefix src: entries missing at dst or
// different there are copied (see the package comment for how content is
// compared); with Delete, the entries of existing that src lacks are
// deleted, except those the skip rules protect.
func PlanSync(src Source, dst Dest, existing []Entry, o SyncOptions) (Plan, error) {
	const op errs.Op = "obsclient.PlanSync"
	kind, err := opFor(src.Loc, dst.Loc)
	if err != nil {
		return Plan{}, err
	}
	if !src.Dir {
		return Plan{}, errs.E(op, errs.Invalid, errs.Hint("use `atelier obs cp` to copy a single file"),
			fmt.Sprintf("%s is a single file; sync works on directories", src.Loc))
	}
	var p Plan
	src.Entries = p.filter(kind, src, o.All)
	have := make(map[string]Entry, len(existing))
	for _, e := range existing {
		have[e.Rel] = e
	}
	base := dst.Loc.AsDir()
	seen := make(map[string]bool, len(src.Entries))
	for _, e := range src.Entries {
		seen[e.Rel] = true
		if d, ok := have[e.Rel]; ok {
			same, err := o.same(kind, e, d)
			if err != nil {
				return Plan{}, err
			}
			if same {
				p.Unchanged++
				continue
			}
		}
		p.add(kind, src.Loc.Join(e.Rel), base.Join(e.Rel), e)
	}
	if o.Delete {
		for _, d := range existing {
			if seen[d.Rel] || (!o.All && SkippedDir(d.Rel) != "") {
				continue
			}
			p.Deletes = append(p.Deletes, base.Join(d.Rel))
		}
	}
	return p, p.checkSame()
}

// add appends a transfer of e from src to dst.
func (p *Plan) add(kind Op, src, dst Location, e Entry) {
	p.Transfers = append(p.Transfers, Transfer{Op: kind, Src: src, Dst: dst, Size: e.Size, ModTime: e.ModTime, ETag: e.ETag})
}

// warnf appends a warning.
func (p *Plan) warnf(format string, args ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...))
}

// filter drops the entries of a directory source that the skip rules leave
// out and, for a download, those that cannot become local files; it counts
// and warns about what it drops.
func (p *Plan) filter(kind Op, src Source, all bool) []Entry {
	skipped := append([]string(nil), src.Pruned...)
	var files map[string]bool
	if kind == Download {
		files = make(map[string]bool, len(src.Entries))
		for _, e := range src.Entries {
			files[e.Rel] = true
		}
	}
	out := make([]Entry, 0, len(src.Entries))
	for _, e := range src.Entries {
		if !all {
			if d := SkippedDir(e.Rel); d != "" {
				p.Skipped++
				if !slices.Contains(skipped, d) {
					skipped = append(skipped, d)
				}
				continue
			}
		}
		if kind == Download {
			if strings.HasSuffix(e.Rel, "/") {
				if e.Size > 0 {
					p.warnf("skipping %s: a key ending in / cannot be a local file", src.Loc.Join(e.Rel))
				}
				continue
			}
			if why := keypath.Unsafe(e.Rel); why != "" {
				p.warnf("skipping %s: %s", src.Loc.Join(e.Rel), why)
				continue
			}
			if dir := keypath.FileAncestor(e.Rel, files); dir != "" {
				p.warnf("skipping %s: %s is also an object, and a local file cannot be a directory", src.Loc.Join(e.Rel), src.Loc.Join(dir))
				continue
			}
		}
		out = append(out, e)
	}
	if len(skipped) > 0 {
		slices.Sort(skipped)
		p.warnf("not copying %s/ (use --all to include them)", strings.Join(skipped, "/, "))
	}
	return out
}

// checkSame rejects a plan that copies an object onto itself.
func (p *Plan) checkSame() error {
	for _, t := range p.Transfers {
		if t.Op == ServerCopy && t.Src == t.Dst {
			return errs.E("obsclient.plan", errs.Invalid, fmt.Sprintf("source and destination are the same object: %s", t.Src))
		}
	}
	return nil
}

// same reports whether the destination entry d already holds the content
// of the source entry s.
func (o SyncOptions) same(kind Op, s, d Entry) (bool, error) {
	if s.Size != d.Size {
		return false, nil
	}
	switch kind {
	case ServerCopy:
		if s.ETag != "" && strings.EqualFold(s.ETag, d.ETag) {
			return true, nil
		}
		if isMD5(s.ETag) && isMD5(d.ETag) {
			return false, nil
		}
		return !d.ModTime.Before(s.ModTime), nil
	case Upload:
		return o.matchLocal(s, d, !d.ModTime.Before(s.ModTime))
	default:
		return o.matchLocal(d, s, !d.ModTime.Before(s.ModTime))
	}
}

// matchLocal compares a local file with an object of the same size by
// ETag; newer (the destination is at least as new as the source) decides
// when the ETag cannot.
func (o SyncOptions) matchLocal(local, object Entry, newer bool) (bool, error) {
	etag := strings.ToLower(object.ETag)
	var sizes []int64
	if isMD5(etag) {
		sizes = []int64{0}
	} else if n, ok := multipartParts(etag); ok {
		sizes = candidatePartSizes(local.Size, n, o.PartSize)
	}
	if len(sizes) == 0 || o.ETags == nil {
		return newer, nil
	}
	sums, err := o.ETags(local.Path, sizes)
	if err != nil {
		return false, err
	}
	return slices.Contains(sums, etag), nil
}
