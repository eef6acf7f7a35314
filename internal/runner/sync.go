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
type outputSync struct {
	s3      obsclient.S3
	client  *obsclient.Client
	outputs []Channel

	mu   sync.Mutex
	done map[string]fileState // host path → state in OBS
}

func newOutputSync(s3 obsclient.S3, client *obsclient.Client, outputs []Channel) *outputSync {
	return &outputSync{s3: s3, client: client, outputs: outputs, done: map[string]fileState{}}
}

// scan lists the regular files of the output dirs that differ from what
// was uploaded.
func (o *outputSync) scan() ([]obsclient.Transfer, map[string]fileState, error) {
	var ts []obsclient.Transfer
	seen := map[string]fileState{}
	for _, c := range o.outputs {
		err := filepath.WalkDir(c.Dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == c.Dir {
					return filepath.SkipDir // not created (yet)
				}
				return nil // vanished while walking
			}
			if !d.Type().IsRegular() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			st := fileState{Size: fi.Size(), MTime: fi.ModTime()}
			if prev, ok := o.done[p]; ok && prev.Size == st.Size && prev.MTime.Equal(st.MTime) {
				return nil
			}
			rel, err := filepath.Rel(c.Dir, p)
			if err != nil {
				return nil
			}
			seen[p] = st
			ts = append(ts, obsclient.Transfer{
				Op: obsclient.Upload, Src: obsclient.Location{Path: p},
				Dst: c.Remote.AsDir().Join(filepath.ToSlash(rel)), Size: st.Size, ModTime: st.MTime,
			})
			return nil
		})
		if err != nil {
			return nil, nil, errs.E("runner.sync", errs.IO, CodeSync, because(fmt.Sprintf("cannot read %s", c.Dir), err), err)
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
			if unsafeRel(rel) != "" {
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
