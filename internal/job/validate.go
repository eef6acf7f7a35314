package job

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
)

// validateData checks, before a job is queued, what it will read and write:
// the boot file exists inside the code dir (unless codeUpload: the client
// uploads it later), every input exists and is readable by the user, every
// output (and the log export path) is writable.
func (js *Jobs) validateData(ctx context.Context, p *auth.Principal, j *api.Job, codeUpload bool) error {
	const op errs.Op = "job.validateData"
	user := obs.As(p)
	if j.Algorithm.CodeDir != "" && !codeUpload {
		b, prefix, err := ParseOBSURL(j.Algorithm.CodeDir)
		if err != nil {
			return err
		}
		reader := user
		if b == SystemBucket {
			if !strings.HasPrefix(prefix, "code/"+p.User.ID+"/") {
				return errs.E(op, errs.NotFound, CodeCodeDir, fmt.Sprintf("code_dir %s is not code you uploaded", j.Algorithm.CodeDir),
					errs.Hint("give a local --code-dir (the CLI uploads it) or an obs:// prefix in your own bucket"))
			}
			reader = obs.As(js.system)
		}
		if j.Algorithm.BootFile != "" {
			key := prefix + j.Algorithm.BootFile
			if _, err := js.obs.HeadObject(ctx, reader, b, key, obs.GetOptions{}); err != nil {
				if errs.Is(err, errs.NotFound) {
					listing := js.listing(ctx, reader, b, prefix, 20)
					return errs.E(op, errs.Invalid, CodeBootFile,
						fmt.Sprintf("boot_file %s does not exist in code_dir %s; the code dir holds: %s", j.Algorithm.BootFile, j.Algorithm.CodeDir, listing),
						errs.Hint("boot_file is relative to code_dir, e.g. --code-dir ./src --boot-file train.py"))
				}
				return errs.E(op, CodeCodeDir, err)
			}
		} else if n := js.count(ctx, reader, b, prefix); n == 0 {
			return errs.E(op, errs.Invalid, CodeCodeDir, fmt.Sprintf("code_dir %s is empty or does not exist", j.Algorithm.CodeDir),
				errs.Hint("`atelier obs ls "+j.Algorithm.CodeDir+"` shows what is there"))
		}
	}
	for i, in := range j.Algorithm.Inputs {
		if in.Remote.OBS == nil {
			continue
		}
		b, prefix, err := ParseOBSURL(in.Remote.OBS.OBSURL)
		if err != nil {
			return err
		}
		res, err := js.obs.ListObjects(ctx, user, b, obs.ListOptions{Prefix: prefix, MaxKeys: 1, V2: true})
		if err != nil {
			return errs.E(op, CodeInput, fmt.Sprintf("algorithm.inputs[%d] %s (%s)", i, in.Name, in.Remote.OBS.OBSURL), err)
		}
		if len(res.Objects) == 0 {
			parent := path.Dir(strings.TrimSuffix(prefix, "/"))
			if parent == "." {
				parent = ""
			} else {
				parent += "/"
			}
			return errs.E(op, errs.Invalid, CodeInput,
				fmt.Sprintf("input %s: %s is empty or does not exist; obs://%s/%s holds: %s", in.Name, in.Remote.OBS.OBSURL, b, parent, js.listing(ctx, user, b, parent, 20)),
				errs.Hint("keys are case-sensitive; upload the data with `atelier obs cp -r DIR "+in.Remote.OBS.OBSURL+"`"))
		}
	}
	for i, out := range j.Algorithm.Outputs {
		if out.Remote.OBS == nil {
			continue
		}
		b, prefix, err := ParseOBSURL(out.Remote.OBS.OBSURL)
		if err != nil {
			return err
		}
		if err := js.obs.Check(ctx, user, b, obs.ActionPutObject, prefix+"x", nil); err != nil {
			return errs.E(op, CodeOutput, fmt.Sprintf("algorithm.outputs[%d] %s (%s) is not writable", i, out.Name, out.Remote.OBS.OBSURL), err)
		}
	}
	if lp := j.Spec.LogExportPath; lp != nil && lp.OBSURL != "" {
		b, prefix, err := ParseOBSURL(lp.OBSURL)
		if err != nil {
			return err
		}
		if err := js.obs.Check(ctx, user, b, obs.ActionPutObject, prefix+"x", nil); err != nil {
			return errs.E(op, CodeLogExport, "spec.log_export_path "+lp.OBSURL+" is not writable", err)
		}
	}
	return nil
}

// listing is a short description of what lies directly under prefix.
func (js *Jobs) listing(ctx context.Context, c *obs.Caller, bucket, prefix string, n int) string {
	res, err := js.obs.ListObjects(ctx, c, bucket, obs.ListOptions{Prefix: prefix, Delimiter: "/", MaxKeys: n, V2: true})
	if err != nil {
		return "(cannot list: " + errs.UserMessage(err) + ")"
	}
	var names []string
	for _, cp := range res.CommonPrefixes {
		names = append(names, strings.TrimPrefix(cp, prefix))
	}
	for _, o := range res.Objects {
		names = append(names, strings.TrimPrefix(o.Key, prefix))
	}
	if len(names) == 0 {
		return "nothing"
	}
	out := strings.Join(names, ", ")
	if res.IsTruncated {
		out += ", …"
	}
	return out
}

func (js *Jobs) count(ctx context.Context, c *obs.Caller, bucket, prefix string) int {
	res, err := js.obs.ListObjects(ctx, c, bucket, obs.ListOptions{Prefix: prefix, MaxKeys: 1, V2: true})
	if err != nil {
		return 0
	}
	return len(res.Objects)
}
