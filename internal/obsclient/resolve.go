package obsclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsurl"
)

// nearMissScan bounds how many keys of one level nearMiss reads.
const nearMissScan = 10000

// source lists what a copy or sync reads at loc: a local file or directory
// (walked only when recursive), an object, or a prefix.
func (c *Client) source(ctx context.Context, loc Location, recursive, all bool) (Source, error) {
	if !loc.Remote() {
		return c.localSource(loc, recursive, all)
	}
	if loc.DirSyntax() {
		var entries []Entry
		var err error
		if recursive {
			entries, err = c.listEntries(ctx, loc.Bucket, loc.Key)
		} else if has, herr := c.hasObjects(ctx, loc.Bucket, loc.Key); herr != nil || has {
			// Not copied without -r: PlanCopy says so.
			return Source{Loc: loc, Dir: true}, herr
		}
		if err != nil {
			return Source{}, err
		}
		if len(entries) == 0 && loc.Key != "" {
			return Source{}, errs.E("obsclient.source", errs.NotFound, c.nearMiss(ctx, loc.Bucket, loc.Key),
				fmt.Sprintf("there are no objects under %s", loc))
		}
		return Source{Loc: loc, Dir: true, Entries: entries}, nil
	}
	obj, err := c.s3.Stat(ctx, loc.Bucket, loc.Key)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return Source{}, err
	}
	found := err == nil
	if recursive || !found {
		dir := loc.AsDir()
		children, err := c.listEntries(ctx, dir.Bucket, dir.Key)
		if err != nil {
			return Source{}, err
		}
		if len(children) > 0 {
			return Source{Loc: dir, Dir: true, Entries: children}, nil
		}
	}
	if !found {
		return Source{}, c.missing(ctx, loc, "cp")
	}
	return Source{Loc: loc, Entries: []Entry{{
		Rel: path.Base(loc.Key), Path: loc.Key, Size: obj.Size, ModTime: obj.LastModified, ETag: obj.ETag,
	}}}, nil
}

// localSource is source for a local path.
func (c *Client) localSource(loc Location, recursive, all bool) (Source, error) {
	const op errs.Op = "obsclient.source"
	fi, err := os.Stat(loc.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return Source{}, errs.E(op, errs.NotFound, localNearMiss(loc.Path),
			fmt.Sprintf("local source %s does not exist", loc.Path))
	}
	if err != nil {
		return Source{}, errs.E(op, errs.IO, fmt.Sprintf("cannot read %s: %s", loc.Path, errText(err)))
	}
	if fi.IsDir() {
		if !recursive {
			return Source{Loc: loc, Dir: true}, nil
		}
		entries, pruned, err := c.walk(loc.Path, all)
		if err != nil {
			return Source{}, err
		}
		return Source{Loc: loc, Dir: true, Entries: entries, Pruned: pruned}, nil
	}
	if !fi.Mode().IsRegular() {
		return Source{}, errs.E(op, errs.Invalid, fmt.Sprintf("%s is not a regular file", loc.Path))
	}
	return Source{Loc: loc, Entries: []Entry{{
		Rel: filepath.Base(loc.Path), Path: loc.Path, Size: fi.Size(), ModTime: fi.ModTime(),
	}}}, nil
}

// walk lists the regular files under root (following symbolic links to
// files, not to directories), in lexical order; unless all, it does not
// enter the skipped directories and returns their names.
func (c *Client) walk(root string, all bool) ([]Entry, []string, error) {
	const op errs.Op = "obsclient.walk"
	var (
		out    []Entry
		pruned []string
	)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return errs.E(op, errs.IO, fmt.Sprintf("cannot read %s: %s", p, errText(err)))
		}
		if d.IsDir() {
			if p != root && !all && slices.Contains(skippedDirs(), d.Name()) {
				if !slices.Contains(pruned, d.Name()) {
					pruned = append(pruned, d.Name())
				}
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return errs.E(op, errs.IO, fmt.Sprintf("cannot read %s: %s", p, errText(err)))
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Stat(p)
			switch {
			case err != nil:
				c.rep.Warn(fmt.Sprintf("skipping %s: broken symbolic link", p))
				return nil
			case target.IsDir():
				c.rep.Warn(fmt.Sprintf("skipping %s: symbolic links to directories are not followed", p))
				return nil
			}
			fi = target
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return errs.E(op, errs.Internal, fmt.Sprintf("%s is not under %s: %v", p, root, err))
		}
		out = append(out, Entry{Rel: filepath.ToSlash(rel), Path: p, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, pruned, nil
}

// dest examines where a copy writes; single tells whether one file is
// copied, the only case where it matters whether loc is an existing
// directory.
func (c *Client) dest(ctx context.Context, loc Location, single bool) (Dest, error) {
	if !single || loc.DirSyntax() {
		return Dest{Loc: loc}, nil
	}
	if !loc.Remote() {
		fi, err := os.Stat(loc.Path)
		return Dest{Loc: loc, Dir: err == nil && fi.IsDir()}, nil
	}
	dir, err := c.hasObjects(ctx, loc.Bucket, loc.AsDir().Key)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return Dest{}, err
	}
	return Dest{Loc: loc, Dir: dir}, nil
}

// existing lists what a sync finds at its destination dst (a directory);
// a destination that does not exist yet holds nothing.
func (c *Client) existing(ctx context.Context, dst Location) ([]Entry, error) {
	if dst.Remote() {
		return c.listEntries(ctx, dst.Bucket, dst.AsDir().Key)
	}
	fi, err := os.Stat(dst.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.E("obsclient.existing", errs.IO, fmt.Sprintf("cannot read %s: %s", dst.Path, errText(err)))
	}
	if !fi.IsDir() {
		return nil, errs.E("obsclient.existing", errs.Invalid, fmt.Sprintf("%s is not a directory", dst.Path))
	}
	entries, _, err := c.walk(dst.Path, true)
	return entries, err
}

// listEntries lists every object under prefix, with Rel relative to it.
// The object named exactly prefix (a "directory marker") is left out.
func (c *Client) listEntries(ctx context.Context, bucket, prefix string) ([]Entry, error) {
	var out []Entry
	for o, err := range c.s3.List(ctx, bucket, ListOptions{Prefix: prefix, Recursive: true}) {
		if err != nil {
			return nil, err
		}
		rel := strings.TrimPrefix(o.Key, prefix)
		if rel == "" || o.Prefix {
			continue
		}
		out = append(out, Entry{Rel: rel, Path: o.Key, Size: o.Size, ModTime: o.LastModified, ETag: o.ETag})
	}
	return out, nil
}

// hasObjects reports whether any object's key starts with prefix.
func (c *Client) hasObjects(ctx context.Context, bucket, prefix string) (bool, error) {
	for _, err := range c.s3.List(ctx, bucket, ListOptions{Prefix: prefix, Recursive: true}) {
		return err == nil, err
	}
	return false, nil
}

// missing explains why the object at loc does not exist, for the command
// verb: it is a directory, its bucket is missing, or it does not exist (with
// a hint when a key differing only in case exists).
func (c *Client) missing(ctx context.Context, loc Location, verb string) error {
	const op errs.Op = "obsclient.missing"
	dir := loc.AsDir()
	if has, err := c.hasObjects(ctx, dir.Bucket, dir.Key); err == nil && has {
		switch verb {
		case "cp":
			return errs.E(op, errs.Invalid, fmt.Sprintf("%s is a directory; use -r to copy its contents", loc))
		case "rm":
			return errs.E(op, errs.Invalid, fmt.Sprintf("%s is a directory; use -r to delete its contents", loc))
		}
		return errs.E(op, errs.Invalid, errs.Hint(fmt.Sprintf("list it with `atelier obs ls %s`", dir)),
			fmt.Sprintf("%s is a directory, not an object", loc))
	}
	if ok, err := c.s3.BucketExists(ctx, loc.Bucket); err == nil && !ok {
		return S3Error("NoSuchBucket", "", loc.Bucket, "")
	}
	return errs.E(op, errs.NotFound, errs.Code("NoSuchKey"), c.nearMiss(ctx, loc.Bucket, loc.Key),
		fmt.Sprintf("%s does not exist", loc))
}

// nearMiss looks for a key that differs from key only in case, level by
// level ("Dataset/" for "dataset/"), and returns a hint naming it, or "".
func (c *Client) nearMiss(ctx context.Context, bucket, key string) errs.Hint {
	segs := strings.SplitAfter(key, "/")
	if segs[len(segs)-1] == "" {
		segs = segs[:len(segs)-1]
	}
	cur := ""
	for i, seg := range segs {
		want := cur + seg
		exact, fold, n := false, "", 0
		for o, err := range c.s3.List(ctx, bucket, ListOptions{Prefix: cur}) {
			if err != nil || n >= nearMissScan {
				break
			}
			n++
			if o.Key == want {
				exact = true
				break
			}
			if fold == "" && strings.EqualFold(strings.TrimSuffix(o.Key, "/"), strings.TrimSuffix(want, "/")) {
				fold = o.Key
			}
		}
		switch {
		case exact:
			cur = want
		case fold != "":
			return errs.Hint(fmt.Sprintf("keys are case-sensitive: did you mean %s?", obsurl.Format(bucket, fold+strings.Join(segs[i+1:], ""))))
		default:
			return ""
		}
	}
	return ""
}

// localNearMiss names a file next to p whose name differs only in case.
func localNearMiss(p string) errs.Hint {
	p = filepath.Clean(p)
	dir, base := filepath.Split(p)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if e.Name() != base && strings.EqualFold(e.Name(), base) {
			return errs.Hint(fmt.Sprintf("names are case-sensitive: did you mean %s?", filepath.Join(filepath.Dir(p), e.Name())))
		}
	}
	return ""
}
