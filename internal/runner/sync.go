package runner

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/keypath"
	"github.com/atelier-dev/atelier/internal/obsclient"
)

// fileState is what an output file was like when it was uploaded.
type fileState struct {
	Size  int64
	MTime time.Time
}

// outputSync uploads the new and changed files of the output dirs to their
// OBS prefixes. It remembers the size and mtime of every file uploaded (or
// restored) and never deletes anything in OBS. One sync runs at a time.
// Once user code runs (setRoots), every directory and file is read
// beneath the job's roots without following a link: a directory swapped
// for a symlink is skipped, a symlinked file refused.
type outputSync struct {
	s3      obsclient.S3
	client  *obsclient.Client
	outputs []Channel

	mu    sync.Mutex
	done  map[string]fileState // host path → state in OBS
	roots *userRoots
}

// newOutputSync makes the sync of outputs; o configures its uploads
// (Open is set to open through the roots).
func newOutputSync(s3 obsclient.S3, opt obsclient.Options, outputs []Channel) *outputSync {
	o := &outputSync{s3: s3, outputs: outputs, done: map[string]fileState{}}
	opt.Open = o.open
	o.client = obsclient.New(s3, opt)
	return o
}

// setRoots makes the sync read through roots from now on.
func (o *outputSync) setRoots(roots *userRoots) {
	o.mu.Lock()
	o.roots = roots
	o.mu.Unlock()
}

func (o *outputSync) open(p string) (*os.File, error) {
	if o.roots == nil {
		return nil, errs.E("runner.sync", errs.Internal, CodeSync, "the output dirs are not open")
	}
	return o.roots.open(p)
}

// scan lists the regular files of the output dirs that differ from what
// was uploaded.
func (o *outputSync) scan() ([]obsclient.Transfer, map[string]fileState, error) {
	var ts []obsclient.Transfer
	seen := map[string]fileState{}
	if o.roots == nil {
		return nil, nil, errs.E("runner.sync", errs.Internal, CodeSync, "the output dirs are not open")
	}
	for _, c := range o.outputs {
		d, err := o.roots.sub(c.Dir)
		if err != nil {
			return nil, nil, errs.E("runner.sync", CodeSync, fmt.Sprintf("cannot read the output dir of %s", c.Name), err)
		}
		if d == nil {
			continue // not created (yet)
		}
		err = d.Walk(func(rel string, fi fs.FileInfo) error {
			p := filepath.Join(c.Dir, filepath.FromSlash(rel))
			st := fileState{Size: fi.Size(), MTime: fi.ModTime()}
			if prev, ok := o.done[p]; ok && prev.Size == st.Size && prev.MTime.Equal(st.MTime) {
				return nil
			}
			seen[p] = st
			ts = append(ts, obsclient.Transfer{
				Op: obsclient.Upload, Src: obsclient.Location{Path: p},
				Dst: c.Remote.AsDir().Join(rel), Size: st.Size, ModTime: st.MTime,
			})
			return nil
		})
		d.Close()
		if err != nil {
			return nil, nil, errs.E("runner.sync", errs.IO, CodeSync, because(fmt.Sprintf("cannot read the output dir of %s", c.Name), err), err)
		}
	}
	return ts, seen, nil
}

// sync uploads what changed since the last sync. A file changed while it
// was uploaded is uploaded again by the next sync (its mtime differs from
// the one recorded before the upload).
func (o *outputSync) sync(ctx context.Context) (obsclient.Summary, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ts, seen, err := o.scan()
	if err != nil || len(ts) == 0 {
		return obsclient.Summary{Action: "synced"}, err
	}
	sum, err := o.client.Execute(ctx, obsclient.Plan{Transfers: ts}, "synced", false)
	if err != nil {
		return sum, errs.E("runner.sync", CodeSync, "cannot sync the outputs", err)
	}
	for p, st := range seen {
		o.done[p] = st
	}
	return sum, nil
}

// abortUploads aborts the multipart uploads the syncs left open for a
// resume and forgets them; it returns how many it aborted.
func (o *outputSync) abortUploads(ctx context.Context) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.client.AbortResumable(ctx)
}

// restore downloads what the output prefixes hold into the output dirs
// (a retry resumes from the last synced outputs) and records it as synced.
func (o *outputSync) restore(ctx context.Context) (obsclient.Summary, error) {
	const op errs.Op = "runner.restore"
	o.mu.Lock()
	defer o.mu.Unlock()
	var plan obsclient.Plan
	for _, c := range o.outputs {
		dir := c.Remote.AsDir()
		for obj, err := range o.s3.List(ctx, dir.Bucket, obsclient.ListOptions{Prefix: dir.Key, Recursive: true}) {
			if err != nil {
				return obsclient.Summary{}, errs.E(op, CodeRestore, because(fmt.Sprintf("cannot list %s", dir), err), err)
			}
			rel := obj.Key[len(dir.Key):]
			if keypath.Unsafe(rel) != "" {
				continue // "dir/" markers and keys that are no paths
			}
			plan.Transfers = append(plan.Transfers, obsclient.Transfer{
				Op: obsclient.Download, Src: obsclient.Location{Bucket: dir.Bucket, Key: obj.Key},
				Dst:  obsclient.Location{Path: filepath.Join(c.Dir, filepath.FromSlash(rel))},
				Size: obj.Size, ModTime: obj.LastModified, ETag: obj.ETag,
			})
		}
	}
	if len(plan.Transfers) == 0 {
		return obsclient.Summary{Action: "restored"}, nil
	}
	sum, err := o.client.Execute(ctx, plan, "restored", false)
	if err != nil {
		return sum, errs.E(op, CodeRestore, because("cannot restore the outputs", err), err)
	}
	// What was restored is in OBS already.
	for _, t := range plan.Transfers {
		if fi, err := os.Stat(t.Dst.Path); err == nil {
			o.done[t.Dst.Path] = fileState{Size: fi.Size(), MTime: fi.ModTime()}
		}
	}
	return sum, nil
}
