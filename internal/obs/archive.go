package obs

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// WriteArchive writes the objects under prefix to w as a tar stream, each
// named by its key relative to the prefix, streaming one object at a time.
//
// A prefix that is empty or ends in "/" is a directory. A prefix without
// the trailing "/" means the directory prefix+"/" when objects are under
// it, and otherwise the single object named prefix (archived under its base
// name); when both exist the call fails and says which to write. Listing
// needs obs:ListBucket, and each object obs:GetObject. Keys that cannot be
// file paths ("a/../b", "a//b") fail the call rather than let an
// extraction escape its directory.
func (s *Service) WriteArchive(ctx context.Context, c *Caller, bucket, prefix string, w io.Writer) error {
	const op errs.Op = "obs.WriteArchive"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	dir := prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		dir = prefix + "/"
		first, err := s.store.ListObjects(ctx, meta.ListObjectsQuery{Bucket: bucket, Prefix: dir, MaxKeys: 1})
		if err != nil {
			return storeErr(op, fmt.Sprintf("listing bucket %q", bucket), err)
		}
		_, gerr := s.store.GetObject(ctx, bucket, prefix)
		isObject := gerr == nil
		if gerr != nil && !errs.Is(gerr, errs.NotFound) {
			return storeErr(op, fmt.Sprintf("reading object %q", prefix), gerr)
		}
		switch {
		case isObject && len(first.Objects) > 0:
			if err := s.check(op, c, b, ActionListBucket, "", map[string][]string{"s3:prefix": {dir}}); err != nil {
				return err
			}
			return fail(op, CodeKeyNotArchivable,
				fmt.Sprintf("obs://%s/%s is both an object and a directory", bucket, prefix),
				fmt.Sprintf("write obs://%s/%s/ for the directory; the object alone cannot be archived by this name", bucket, prefix))
		case isObject:
			tw := tar.NewWriter(w)
			if err := s.archiveObject(ctx, op, tw, c, b, prefix, path.Base(prefix)); err != nil {
				return err
			}
			return closeArchive(op, tw)
		}
	}
	if err := s.check(op, c, b, ActionListBucket, "", map[string][]string{"s3:prefix": {dir}}); err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	q := meta.ListObjectsQuery{Bucket: bucket, Prefix: dir, MaxKeys: DefaultMaxKeys}
	for {
		page, err := s.store.ListObjects(ctx, q)
		if errs.Is(err, errs.NotFound) {
			return noSuchBucket(op, bucket)
		}
		if err != nil {
			return storeErr(op, fmt.Sprintf("listing bucket %q", bucket), err)
		}
		for _, o := range page.Objects {
			rel := o.Key[len(dir):]
			if rel == "" {
				continue // the directory's own marker
			}
			if err := s.archiveObject(ctx, op, tw, c, b, o.Key, rel); err != nil {
				return err
			}
		}
		if !page.Truncated {
			return closeArchive(op, tw)
		}
		q.StartAfter = page.NextStartAfter
	}
}

func closeArchive(op errs.Op, tw *tar.Writer) error {
	if err := tw.Close(); err != nil {
		return errs.E(op, errs.IO, "writing the archive", err)
	}
	return nil
}

// archiveObject writes one object as the entry name: a directory for a
// "dir/" marker, else a file. An object deleted since it was listed is
// left out.
func (s *Service) archiveObject(ctx context.Context, op errs.Op, tw *tar.Writer, c *Caller, b *meta.Bucket, key, name string) error {
	if err := checkArchivePath(op, b.Name, key, name); err != nil {
		return err
	}
	t := s.pins.begin()
	o, err := s.store.GetObject(ctx, b.Name, key)
	switch {
	case errs.Is(err, errs.NotFound):
		o, err = nil, nil // deleted since it was listed: left out
	case err != nil:
		err = storeErr(op, fmt.Sprintf("reading object %q", key), err)
	}
	if err == nil {
		// Authorized as a GET of it is: with the object (its tags, its
		// ACL), or as a missing key.
		err = s.checkWithObject(op, c, b, ActionGetObject, key, o, tagContext(nil, o, nil))
	}
	if err != nil || o == nil || strings.HasSuffix(name, "/") {
		s.abandon(ctx, t) // no blob of it is read
	}
	if err != nil || o == nil {
		return err
	}
	if strings.HasSuffix(name, "/") {
		if o.Size != 0 {
			return fail(op, CodeKeyNotArchivable,
				fmt.Sprintf("object %q ends in '/' but holds %d bytes: it cannot be a file in an archive", key, o.Size),
				"rename the object without the trailing '/'")
		}
		return writeHeader(op, tw, &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: o.LastModified})
	}
	body, err := s.openPinned(ctx, t, b.Name+"/"+key, o.Blobs, 0, o.Size)
	if err != nil {
		return err
	}
	defer body.Close()
	if err := writeHeader(op, tw, &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: o.Size, ModTime: o.LastModified}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, body); err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("archiving object %q", key), err)
	}
	return nil
}

func writeHeader(op errs.Op, tw *tar.Writer, h *tar.Header) error {
	if err := tw.WriteHeader(h); err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("writing the archive entry %q", h.Name), err)
	}
	return nil
}

// checkArchivePath refuses entry names that an extraction could resolve
// outside its directory or that are not plain relative paths.
func checkArchivePath(op errs.Op, bucket, key, name string) error {
	trimmed := strings.TrimSuffix(name, "/")
	bad := name == "" || strings.HasPrefix(name, "/") || trimmed == ""
	for _, seg := range strings.Split(trimmed, "/") {
		if seg == "" || seg == "." || seg == ".." {
			bad = true
		}
	}
	if bad {
		return fail(op, CodeKeyNotArchivable,
			fmt.Sprintf("object %q in bucket %q cannot be a file path in an archive (as %q)", key, bucket, name),
			"archive paths may not be absolute or contain empty, '.' or '..' segments; rename the object")
	}
	return nil
}
