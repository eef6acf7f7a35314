package cli

import (
	"context"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/text"
)

// createFromNotebook is `job create --from-notebook NB`: the server
// checks the job (a dry run, so a job it refuses leaves no snapshot),
// snapshots the notebook's work dir, and the job is created on the
// snapshot and the notebook's engine, linked to both.
func (j *jobCmds) createFromNotebook(ctx context.Context, job *api.Job, f createFlags, changed func(string) bool) error {
	a := j.a
	alg := &job.Algorithm
	switch {
	case alg.CodeDir != "":
		return usagef("--from-notebook makes the code dir from the notebook's work dir: give no --code-dir (nor code_dir in the spec file)")
	case alg.Command != "":
		return usagef("--from-notebook runs a file of the notebook's work dir: give --boot-file FILE or --notebook-file FILE.ipynb, not --command")
	case alg.BootFile == "":
		return usagef("--from-notebook needs --boot-file FILE (e.g. train.py) or --notebook-file FILE.ipynb, relative to the notebook's work dir")
	}
	// The path the notebook shows (/home/ma-user/work/x.py) is fine too.
	if rel, ok := strings.CutPrefix(alg.BootFile, api.NotebookMountPath+"/"); ok {
		alg.BootFile = rel
	}
	alg.BootFile = path.Clean(strings.TrimPrefix(alg.BootFile, "./"))
	c, err := a.client()
	if err != nil {
		return err
	}
	nb, err := c.GetNotebook(ctx, f.fromNotebook)
	if err != nil {
		return err
	}
	if eng := alg.Engine.EngineName; eng != "" && !strings.EqualFold(eng, nb.Engine) {
		what := "--engine " + eng
		if !changed("engine") {
			what = "engine_name " + eng + " of the spec file"
		}
		return usagef("%s conflicts with notebook %s, whose engine is %s: a job made from a notebook runs on the notebook's engine (leave the engine out)",
			what, nb.Name, nb.Engine)
	}
	alg.Engine.EngineName = nb.Engine
	if strings.TrimSpace(job.Metadata.Name) == "" {
		job.Metadata.Name = defaultJobName(nb.Name, time.Now())
	}
	if err := checkJobShape(job); err != nil {
		return err
	}
	if err := checkRemotePaths(job); err != nil {
		return err
	}
	check := *job
	check.Algorithm.CodeDir, check.Algorithm.SourceNotebook = "", nil
	if _, err := c.ValidateJob(ctx, &check, true); err != nil {
		return err
	}
	snap, err := c.SnapshotNotebook(ctx, nb.ID, &api.NotebookSnapshotRequest{BootFile: alg.BootFile})
	if err != nil {
		return err
	}
	j.noteSnapshot(snap)
	if strings.HasSuffix(alg.BootFile, ".ipynb") && len(alg.Outputs) == 0 {
		a.note("note: the job has no --output: the executed notebook is saved into its log dir, which is not kept; " +
			"give --output NAME=obs://BUCKET/PREFIX/ to keep it")
	}
	alg.CodeDir = snap.CodeDir
	alg.SourceNotebook = &api.SourceNotebook{ID: snap.NotebookID, Name: snap.NotebookName, CodeDir: snap.CodeDir}
	created, err := c.CreateJob(ctx, job)
	if err != nil {
		return err
	}
	if err := a.show(created, func(w io.Writer) { createdTable(w, created) }); err != nil {
		return err
	}
	if f.follow {
		return j.followAndFinish(ctx, c, created.Metadata.ID)
	}
	return nil
}

// noteSnapshot says on stderr what the snapshot holds and left out.
func (j *jobCmds) noteSnapshot(s *api.NotebookSnapshot) {
	a := j.a
	a.note("snapshot of notebook %s: %s, %s at %s", s.NotebookName, text.Count(s.Files, "file"), text.Bytes(s.Bytes), s.CodeDir)
	switch n := len(s.Requirements); {
	case n == 0:
		a.note("requirements.txt: nothing was installed into the notebook's venv")
	case len(s.RequirementsAdded) == n:
		a.note("requirements.txt: %s from the notebook's venv: %s", text.Count(n, "package"), clipList(s.Requirements, 10))
	default:
		a.note("requirements.txt: %s from the notebook's venv, %d of them named by the work dir's own requirements.txt; added: %s",
			text.Count(n, "package"), n-len(s.RequirementsAdded), clipList(s.RequirementsAdded, 10))
	}
	if len(s.Excluded) > 0 {
		a.note("left out: %s", clipList(s.Excluded, 8))
	}
}

// clipList joins the first n items, saying how many more there are.
func clipList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s … and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

var jobNameBad = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]+`) })

// defaultJobName is the name of a job made from notebook nb at t:
// nb-YYYYMMDD-HHMMSS, with what a job name cannot hold replaced.
func defaultJobName(nb string, t time.Time) string {
	base := strings.Trim(jobNameBad().ReplaceAllString(nb, "-"), "-")
	if base == "" {
		base = "notebook"
	}
	if len(base) > 48 { // ASCII only now
		base = base[:48]
	}
	return base + t.Format("-20060102-150405")
}
