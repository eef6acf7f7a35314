package job

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/text"
)

// ParseCursor reads a log cursor "<attempt>.<seq>" ("" is the start).
func ParseCursor(s string) (meta.JobLogCursor, error) {
	if s == "" {
		return meta.JobLogCursor{}, nil
	}
	a, q, ok := strings.Cut(s, ".")
	attempt, err1 := strconv.Atoi(a)
	seq, err2 := strconv.ParseInt(q, 10, 64)
	if !ok || err1 != nil || err2 != nil || attempt < 0 || seq < 0 {
		return meta.JobLogCursor{}, errs.E("job.ParseCursor", errs.Invalid, CodeCursor, fmt.Sprintf("log cursor %q is not <attempt>.<seq>", s),
			errs.Hint("pass the `next` value of the previous answer as ?after="))
	}
	return meta.JobLogCursor{Attempt: attempt, Seq: seq}, nil
}

// FormatCursor is the cursor after c.
func FormatCursor(c meta.JobLogCursor) string { return fmt.Sprintf("%d.%d", c.Attempt, c.Seq) }

func toAPI(l meta.JobLogLine) api.LogLine {
	return api.LogLine{Attempt: l.Attempt, Seq: l.Seq, Time: ms(l.Time), Stream: l.Stream, Text: l.Text}
}

// Logs returns up to limit lines after the cursor, and the next cursor.
func (js *Jobs) Logs(ctx context.Context, p *auth.Principal, id, after string, limit int) (*api.JobLogs, error) {
	const op errs.Op = "job.Logs"
	if _, err := js.load(ctx, op, p, id, "Get"); err != nil {
		return nil, err
	}
	cur, err := ParseCursor(after)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > api.MaxLogLines {
		limit = meta.DefaultLogLimit
	}
	lines, err := js.store.ReadJobLogs(ctx, id, cur, limit)
	if err != nil {
		return nil, errs.E(op, err)
	}
	out := &api.JobLogs{Lines: make([]api.LogLine, len(lines))}
	for i, l := range lines {
		out.Lines[i] = toAPI(l)
		cur = meta.JobLogCursor{Attempt: l.Attempt, Seq: l.Seq}
	}
	out.Next = FormatCursor(cur)
	return out, nil
}

// FollowLogs calls fn for every line after the cursor as it arrives, and
// returns when the job is terminal and its log complete, or ctx ends.
func (js *Jobs) FollowLogs(ctx context.Context, p *auth.Principal, id, after string, fn func(api.LogLine) error) error {
	const op errs.Op = "job.FollowLogs"
	if _, err := js.load(ctx, op, p, id, "Get"); err != nil {
		return err
	}
	cur, err := ParseCursor(after)
	if err != nil {
		return err
	}
	for {
		wake := js.waiters.wait(id)
		// Read the phase BEFORE the lines: a job seen terminal here has
		// delivered its whole log (the exit comes after the last batch).
		raw, err := js.store.GetJob(ctx, id)
		if err != nil {
			if errs.Is(err, errs.NotFound) {
				return nil
			}
			return errs.E(op, err)
		}
		terminal := Terminal(raw.Phase)
		for {
			lines, err := js.store.ReadJobLogs(ctx, id, cur, 1000)
			if err != nil {
				return errs.E(op, err)
			}
			for _, l := range lines {
				if err := fn(toAPI(l)); err != nil {
					return err
				}
				cur = meta.JobLogCursor{Attempt: l.Attempt, Seq: l.Seq}
			}
			if len(lines) < 1000 {
				break
			}
		}
		if terminal {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-time.After(2 * time.Second):
		}
	}
}

// MaxCodeBytes and MaxCodeFiles bound an uploaded code dir.
const (
	MaxCodeBytes = 1 << 30
	MaxCodeFiles = 10000
)

// UploadCode stores a tar archive of a code dir under
// obs://atelier-system/code/<user id>/<upload id>/<name>/ and returns that
// prefix as code_dir.
func (js *Jobs) UploadCode(ctx context.Context, p *auth.Principal, name string, r io.Reader) (codeDir string, files int, size int64, err error) {
	const op errs.Op = "job.UploadCode"
	if err := js.authz.Authorize(p, "job", "Create", auth.Resource("job", "*"), p.User.ID, nil); err != nil {
		return "", 0, 0, err
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || len(name) > 128 {
		return "", 0, 0, errs.E(op, errs.Invalid, CodeCodeUpload, fmt.Sprintf("code dir name %q is not a plain directory name", name),
			errs.Hint("pass ?name= with the last element of the code dir, e.g. ?name=src"))
	}
	prefix := codeRoot + p.User.ID + "/" + uuid.Must(uuid.NewV7()).String() + "/" + name + "/"
	sys := obs.As(js.system)
	defer func() {
		if err != nil {
			// Nothing of a refused upload stays behind.
			if derr := js.janitor.deletePrefix(context.WithoutCancel(ctx), sys, uploadOf(prefix)); derr != nil {
				js.log.Warn("deleting a failed code upload", "prefix", prefix, "err", derr)
			}
		}
	}()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", 0, 0, errs.E(op, errs.Invalid, CodeCodeUpload, "the code archive is not a valid tar stream: "+err.Error())
		}
		if h.Typeflag != tar.TypeReg { // the reader turns the old '\x00' into TypeReg
			continue // directories are implied; links are not uploaded
		}
		rel := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if rel == "." || strings.HasPrefix(rel, "../") || rel == ".." || path.IsAbs(rel) {
			return "", 0, 0, errs.E(op, errs.Invalid, CodeCodeUpload, fmt.Sprintf("the code archive holds an unsafe path %q", h.Name))
		}
		files++
		size += h.Size
		if files > MaxCodeFiles || size > MaxCodeBytes {
			return "", 0, 0, errs.E(op, errs.TooLarge, CodeCodeUpload,
				fmt.Sprintf("the code dir is larger than %d files / %s", MaxCodeFiles, text.Bytes(MaxCodeBytes)),
				errs.Hint("keep data and checkpoints out of the code dir: list them in .atelierignore, or pass them as inputs"))
		}
		if _, err := js.obs.PutObject(ctx, sys, SystemBucket, prefix+rel, tr, obs.PutOptions{Size: h.Size}); err != nil {
			return "", 0, 0, errs.E(op, err)
		}
	}
	if files == 0 {
		return "", 0, 0, errs.E(op, errs.Invalid, CodeCodeUpload, "the code dir is empty", errs.Hint("check --code-dir and .atelierignore"))
	}
	return "obs://" + SystemBucket + "/" + prefix, files, size, nil
}
