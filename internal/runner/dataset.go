package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/atelier-dev/atelier/internal/dataset/manifest"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/keypath"
	"github.com/atelier-dev/atelier/internal/obsclient"
)

// listDataset lists a dataset input through the server: exactly the
// version's objects with the ETags it recorded, and the version ids it
// pinned (downloaded as those versions). Unlike a plain input there
// is no S3 fallback: the server checks that nothing changed since the
// version was made, and its refusal (naming the objects) is the staging's
// failure, before user code starts.
func (s *stager) listDataset(ctx context.Context, c Channel) (listing, error) {
	const op errs.Op = "runner.listDataset"
	what := fmt.Sprintf("input %s (dataset %s@%s)", c.Name, c.Dataset.Name, c.Dataset.Version)
	if s.inputs == nil {
		return listing{}, errs.E(op, errs.Unavailable, CodeList, what+": a dataset input is listed by the server, and this runner has none")
	}
	rl, err := s.inputs.listInput(ctx, c.Name)
	if err != nil {
		if ctx.Err() != nil {
			return listing{}, ctx.Err()
		}
		var ce *callError
		if errors.As(err, &ce) && ce.Status != 0 && ce.Body.ErrorMsg != "" {
			// The server's refusal (objects that changed, a version no
			// longer readable) is the message, with its code and hint.
			return listing{}, errs.E(op, CodeList, errs.Hint(ce.Body.Hint),
				fmt.Sprintf("%s: %s (%s)", what, ce.Body.ErrorMsg, ce.Body.ErrorCode))
		}
		return listing{}, errs.E(op, CodeList, because(what, err), err)
	}
	if rl.Truncated || rl.ManifestName == "" {
		return listing{}, errs.E(op, errs.Internal, CodeList, what+": the server did not answer the whole version")
	}
	dir := c.Remote.AsDir()
	var objs []obsclient.Object
	for _, it := range rl.Items {
		if !strings.HasPrefix(it.Key, dir.Key) {
			return listing{}, errs.E(op, errs.Internal, CodeList, fmt.Sprintf("%s: the server listed %q, outside %s", what, it.Key, dir))
		}
		objs = append(objs, obsclient.Object{Key: it.Key, Size: it.Size, ETag: it.ETag, VersionID: it.VersionID})
	}
	out := s.listed(dir, objs)
	if len(out.Files) != len(objs) {
		return listing{}, errs.E(op, errs.Invalid, CodeList,
			fmt.Sprintf("%s: %d of the version's objects cannot be staged (see the warnings above)", what, len(objs)-len(out.Files)))
	}
	for i := range out.Files {
		out.Files[i].Input = c.Name
	}
	out.Manifest, out.ManifestName = rl.Manifest, rl.ManifestName
	return out, nil
}

// writeManifests writes a dataset input's manifests into its dir: NAME with
// each source and annotation-loc pointing at the staged file as user code
// sees it, and NAME minus ".manifest" plus ".obs.manifest", the version's
// manifest as published.
func writeManifests(c Channel, l listing) error {
	const op errs.Op = "runner.writeManifests"
	name := path.Base(l.ManifestName)
	if keypath.Unsafe(name) != "" || !strings.HasSuffix(name, ".manifest") {
		return errs.E(op, errs.Invalid, CodeList, fmt.Sprintf("input %s: %q cannot name a manifest file", c.Name, l.ManifestName))
	}
	dir := c.Remote.AsDir()
	staged := make(map[string]string, len(l.Files))
	for _, f := range l.Files {
		staged[f.Obj.Key] = path.Join(c.View, f.Rel)
	}
	var local bytes.Buffer
	err := manifest.Decode(strings.NewReader(l.Manifest), func(n int, line *manifest.Line) error {
		manifest.Relocate(line, func(r manifest.Ref) (string, bool) {
			if r.Bucket != dir.Bucket {
				return "", false
			}
			p, ok := staged[r.Key]
			return p, ok
		})
		b, err := line.MarshalJSON()
		if err != nil {
			return err
		}
		local.Write(b)
		local.WriteByte('\n')
		return nil
	})
	if err != nil {
		return errs.E(op, errs.Internal, CodeList, fmt.Sprintf("input %s: the version's manifest does not parse", c.Name), err)
	}
	for file, data := range map[string][]byte{
		name: local.Bytes(),
		strings.TrimSuffix(name, ".manifest") + ".obs.manifest": []byte(l.Manifest),
	} {
		p := filepath.Join(c.Dir, file)
		if err := writeNew(p, data); err != nil {
			return errs.E(op, errs.IO, CodeList, fmt.Sprintf("input %s: cannot write %s", c.Name, file), err)
		}
	}
	return nil
}

// writeNew writes data to p, replacing a file or link that is there
// without following it.
func writeNew(p string, data []byte) error {
	tmp := p + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o444)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, p)
}
