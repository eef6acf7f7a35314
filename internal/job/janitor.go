package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
)

// A job's work dir (<work_dir>/jobs/<id>) holds the runner dir of each
// attempt (token, runner.log, job.log, final.json, the log spool) and the
// job's tree (code, staged inputs, local copies of the outputs, /cache).
// Nothing in it is needed once the job has ended: the log is in the
// metadata store and exported to log_export_path, the outputs are in OBS,
// and each attempt's runner.log (the runner's own diagnostics) is kept in
// the platform bucket. The janitor removes it then; `job delete` removes
// it at once.

// Janitor removes what jobs leave behind: it makes the platform bucket
// (Init), exports the log of a job that ended and keeps its runner logs
// there, removes the work dirs of ended and deleted jobs once their
// runners are gone (decideWorkDir), and deletes uploaded code dirs no job
// references (ExpiredCode).
type Janitor struct {
	*base
}

// Init makes sure the platform bucket exists.
func (jn *Janitor) Init(ctx context.Context) error {
	if _, err := jn.obs.HeadBucket(ctx, obs.As(jn.system), SystemBucket); err == nil {
		return nil
	}
	_, err := jn.obs.CreateBucket(ctx, obs.As(jn.system), SystemBucket, obs.CreateBucketOptions{})
	if err != nil && errs.Is(err, errs.Exists) {
		return nil
	}
	return err
}

// CollectGarbage removes what jobs leave behind: the work dirs of jobs
// that ended (once their log is exported) or were deleted, and uploaded
// code dirs no job references that are older than Options.CodeGrace. The
// server calls it at start and then periodically; it returns the number of
// code dirs deleted.
func (jn *Janitor) CollectGarbage(ctx context.Context) (codeDirs int, err error) {
	werr := jn.tidyWorkDirs(ctx)
	n, cerr := jn.collectCode(ctx)
	return n, errors.Join(werr, cerr)
}

// runnerLogKey is where the runner.log of an attempt is kept in the
// platform bucket once the job's work dir is removed.
func runnerLogKey(id string, attempt int) string {
	return "logs/" + id + "/attempt-" + strconv.Itoa(attempt) + ".runner.log"
}

// RunnerLogURL is the obs:// URL of an attempt's runner.log once its job
// has ended and its work dir is gone.
func RunnerLogURL(id string, attempt int) string {
	return "obs://" + SystemBucket + "/" + runnerLogKey(id, attempt)
}

// dirFacts is what the janitor knows about a job's work dir.
type dirFacts struct {
	Found       bool // the job's record exists (false: the job was deleted)
	Terminal    bool // the job has ended
	LogExported bool // its log reached log_export_path
	RunnerAlive bool // the runner of its last attempt still runs (it reports its exit, then ends)
}

// dirStep is what the janitor does with a job's work dir.
type dirStep int

const (
	dirKeep   dirStep = iota // the job runs, or its runner is still ending
	dirExport                // export the log first, then remove the dir
	dirRemove                // keep the runner logs, remove the dir
	dirDrop                  // the job is deleted: remove the dir
)

// decideWorkDir is the janitor's decision about a job's work dir, a pure
// function of what it knows.
func decideWorkDir(f dirFacts) dirStep {
	switch {
	case !f.Found:
		return dirDrop
	case !f.Terminal || f.RunnerAlive:
		return dirKeep
	case !f.LogExported:
		return dirExport
	}
	return dirRemove
}

// removeAll removes a dir user code may have written in (Options.RemoveAll).
func (jn *Janitor) removeAll(dir string) error {
	if jn.o.RemoveAll != nil {
		return jn.o.RemoveAll(dir)
	}
	return os.RemoveAll(dir)
}

// tidy applies the janitor's decision to the work dir of job id and
// reports whether the dir is gone.
func (jn *Janitor) tidy(ctx context.Context, id string) (bool, error) {
	const op errs.Op = "job.tidy"
	dir := jn.jobDir(id)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	var f dirFacts
	raw, err := jn.store.GetJob(ctx, id)
	switch {
	case errs.Is(err, errs.NotFound):
	case err != nil:
		return false, errs.E(op, err)
	default:
		r, err := decode(raw)
		if err != nil {
			return false, err
		}
		f = dirFacts{Found: true, Terminal: Terminal(r.st.Phase), LogExported: r.rt.LogExported}
		if f.Terminal && r.rt.Handle != "" {
			st, err := jn.exec.Inspect(ctx, r.rt.Handle, r.rt.AttemptDir)
			f.RunnerAlive = err != nil || st.Phase == executor.Running
		}
		switch decideWorkDir(f) {
		case dirKeep:
			return false, nil
		case dirExport:
			if err := jn.exportLog(ctx, r); err != nil {
				return false, errs.E(op, CodeLogExport, "the log could not be exported", err)
			}
			if _, err := jn.update(ctx, id, func(u *record) (bool, error) {
				u.rt.LogExported = true
				return true, nil
			}); err != nil {
				return false, err
			}
		}
		if err := jn.keepRunnerLogs(ctx, id, dir); err != nil {
			return false, err
		}
	}
	if err := jn.removeAll(dir); err != nil {
		return false, errs.E(op, errs.IO, "cannot remove the work dir "+dir, err)
	}
	jn.log.Info("removed the work dir of an ended job", "job", id, "dir", dir)
	return true, nil
}

// keepRunnerLogs copies the runner.log of every attempt in the work dir
// dir of job id to the platform bucket (RunnerLogURL).
func (jn *Janitor) keepRunnerLogs(ctx context.Context, id, dir string) error {
	const op errs.Op = "job.keepRunnerLogs"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return errs.E(op, errs.IO, err)
	}
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "attempt-")
		attempt, err := strconv.Atoi(n)
		if !ok || err != nil || !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name(), "runner.log")
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return errs.E(op, errs.IO, err)
		}
		fi, err := f.Stat()
		if err == nil && fi.Size() > 0 {
			_, err = jn.obs.PutObject(ctx, obs.As(jn.system), SystemBucket, runnerLogKey(id, attempt), f,
				obs.PutOptions{Size: fi.Size(), ContentType: "text/plain; charset=utf-8"})
		}
		f.Close()
		if err != nil {
			return errs.E(op, fmt.Sprintf("cannot keep %s as %s", p, RunnerLogURL(id, attempt)), err)
		}
	}
	return nil
}

// tidyAfterEnd removes the work dir of a job that has just ended, once its
// runner is gone (it ends right after its exit was reported), trying for
// a minute; the periodic janitor (CollectGarbage) does what this leaves.
func (jn *Janitor) tidyAfterEnd(ctx context.Context, id string) {
	for try := 0; ; try++ {
		done, err := jn.tidy(ctx, id)
		if done {
			return
		}
		if err != nil {
			jn.log.Warn("removing the work dir of an ended job", "job", id, "err", err)
			return
		}
		if try == 30 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// tidyWorkDirs applies the janitor to every job dir under work_dir.
func (jn *Janitor) tidyWorkDirs(ctx context.Context) error {
	const op errs.Op = "job.tidyWorkDirs"
	ents, err := os.ReadDir(filepath.Join(jn.o.WorkDir, "jobs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errs.E(op, errs.IO, err)
	}
	var errList []error
	for _, e := range ents {
		if !e.IsDir() || ctx.Err() != nil {
			continue
		}
		if _, err := jn.tidy(ctx, e.Name()); err != nil {
			errList = append(errList, fmt.Errorf("job %s: %w", e.Name(), err))
		}
	}
	return errors.Join(errList...)
}

// ended exports the job's log, wakes followers and, once its
// runner is gone, removes the job's work dir (the janitor).
func (jn *Janitor) ended(r *record) {
	jn.waiters.wake(r.raw.ID)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		id := r.raw.ID
		if err := jn.exportLog(ctx, r); err != nil {
			jn.log.Warn("exporting job log", "job", id, "err", err)
			jn.event(ctx, id, "Warning", "Job", "the log could not be exported (it is kept with the job; the export is tried again later): "+errs.UserMessage(err))
			return
		}
		if _, err := jn.update(ctx, id, func(u *record) (bool, error) {
			u.rt.LogExported = true
			return true, nil
		}); err != nil {
			jn.log.Warn("recording the log export", "job", id, "err", err)
			return
		}
		jn.tidyAfterEnd(ctx, id)
	}()
}

// exportLog writes the whole log to log_export_path as <name>-<id>.log.
func (jn *Janitor) exportLog(ctx context.Context, r *record) error {
	if r.job.Spec.LogExportPath == nil || r.job.Spec.LogExportPath.OBSURL == "" {
		return nil
	}
	b, prefix, err := ParseOBSURL(r.job.Spec.LogExportPath.OBSURL)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(prefix, "/") && prefix != "" {
		prefix += "/"
	}
	var buf bytes.Buffer
	var cur meta.JobLogCursor
	for {
		lines, err := jn.store.ReadJobLogs(ctx, r.raw.ID, cur, 10000)
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintf(&buf, "%s [attempt %d] %s %s\n", l.Time.UTC().Format("2006-01-02T15:04:05.000Z"), l.Attempt, l.Stream, l.Text)
		}
		if len(lines) < 10000 {
			break
		}
		last := lines[len(lines)-1]
		cur = meta.JobLogCursor{Attempt: last.Attempt, Seq: last.Seq}
	}
	key := prefix + r.job.Metadata.Name + "-" + r.raw.ID + ".log"
	_, err = jn.obs.PutObject(ctx, obs.As(jn.system), b, key, bytes.NewReader(buf.Bytes()), obs.PutOptions{Size: int64(buf.Len()), ContentType: "text/plain; charset=utf-8"})
	return err
}
