package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient"
)

// obsHelp is the long help of `atelier obs`.
const obsHelp = `Work with objects in OBS, Atelier's S3-compatible object storage, through the
s3_endpoint of the client config.

Locations are obs://BUCKET/KEY or s3://BUCKET/KEY (the same thing) or local
paths. A trailing "/" marks a directory prefix. A recursive copy copies the
CONTENTS of its source: ` + "`atelier obs cp -r DIR obs://b/ds/`" + ` writes DIR/cat/1.jpg
to obs://b/ds/cat/1.jpg, and obs://b/ds (without the slash) means the same.
Directories named .git and __pycache__ are skipped unless --all is given.

Transfers run -j files in parallel over reused connections; files larger than
--part-size go in parts, -p at a time. An interrupted multipart upload resumes
when the same command runs again (its checkpoint is kept in the checkpoints
directory next to the client config). On a terminal a progress bar shows bytes,
rate and ETA; otherwise one summary line is printed at the end.`

// obsDialer connects to the S3 endpoint of cfg for conns requests at once.
type obsDialer func(cfg *config.ClientConfig, conns int) (obsclient.S3, error)

// obsMinioDialer is the obsDialer of the real command.
func obsMinioDialer(cfg *config.ClientConfig, conns int) (obsclient.S3, error) {
	return obsclient.NewMinio(cfg, obsclient.MinioOptions{Conns: conns, AppName: "atelier-cli", AppVersion: buildVersion().Version})
}

// obsCmds builds the obs commands of one run.
type obsCmds struct {
	a    *app
	dial obsDialer
}

// newObsCmd builds `atelier obs`, talking to the configured S3 endpoint.
func newObsCmd(a *app) *cobra.Command {
	return newObsGroup(a, obsMinioDialer)
}

// newObsGroup builds `atelier obs` with its S3 connections made by dial.
func newObsGroup(a *app, dial obsDialer) *cobra.Command {
	o := &obsCmds{a: a, dial: dial}
	cmd := group("obs", "Copy, sync and manage objects in OBS (S3-compatible storage)",
		o.mb(), o.rb(), o.ls(), o.cp(), o.sync(), o.mv(), o.rm(), o.stat(), o.cat(), o.presign(), o.versioning(),
		o.lock(), o.retention(), o.legalHold())
	cmd.Long = obsHelp
	return cmd
}

// obsTransferFlags are the flags of cp, sync and mv.
type obsTransferFlags struct {
	recursive, force, all, quiet, delete bool
	jobs, parts                          int
	partSize                             string
}

// register adds the flags every transfer command has.
func (f *obsTransferFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVarP(&f.jobs, "jobs", "j", obsclient.DefaultJobs, "files to transfer in parallel")
	fl.IntVarP(&f.parts, "parts", "p", obsclient.DefaultPartJobs, "parts of one large file to transfer in parallel")
	fl.StringVar(&f.partSize, "part-size", "16MiB", "part size; larger files go in parts (5MiB to 5GiB)")
	fl.BoolVar(&f.all, "all", false, "include .git/ and __pycache__/ directories")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
}

// options checks the flags and returns the client options they select.
func (f *obsTransferFlags) options() (obsclient.Options, error) {
	if f.jobs < 1 || f.jobs > 256 {
		return obsclient.Options{}, usagef("-j/--jobs must be between 1 and 256, got %d", f.jobs)
	}
	if f.parts < 1 || f.parts > 64 {
		return obsclient.Options{}, usagef("-p/--parts must be between 1 and 64, got %d", f.parts)
	}
	ps, err := config.ParseBytes(f.partSize)
	if err != nil {
		return obsclient.Options{}, usagef("--part-size: %v", err)
	}
	if ps < obsclient.MinPartSize || ps > obsclient.MaxPartSize {
		return obsclient.Options{}, usagef("--part-size must be between 5MiB and 5GiB, got %s", f.partSize)
	}
	return obsclient.Options{Jobs: f.jobs, PartJobs: f.parts, PartSize: ps}, nil
}

// client connects to OBS with opt, adding the checkpoint directory and a
// reporter that suits stderr (a progress bar on a terminal, a summary line
// otherwise, nothing with quiet).
func (o *obsCmds) client(opt obsclient.Options, quiet bool) (*obsclient.Client, error) {
	cfg, err := o.a.loadConfig()
	if err != nil {
		return nil, err
	}
	s3, err := o.dial(cfg, max(opt.Jobs, 1)*max(opt.PartJobs, 1))
	if err != nil {
		return nil, err
	}
	opt.CheckpointDir = filepath.Join(filepath.Dir(o.a.configPath()), "checkpoints")
	opt.Reporter = o.reporter(quiet)
	return obsclient.New(s3, opt), nil
}

// reporter picks how a transfer shows progress.
func (o *obsCmds) reporter(quiet bool) obsclient.Reporter {
	if quiet {
		return obsclient.Quiet()
	}
	out := o.a.stdout
	if o.a.output != formatTable {
		out = io.Discard
	}
	if f, ok := o.a.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return obsclient.NewBarReporter(o.a.stderr, out)
	}
	return obsclient.NewSummaryReporter(out, o.a.stderr)
}

// obsParse parses a command-line location; a malformed one is a usage
// error.
func obsParse(s string) (obsclient.Location, error) {
	l, err := obsclient.ParseLocation(s)
	if err != nil {
		msg := errs.UserMessage(err)
		if h := errs.HintOf(err); h != "" {
			msg += "; " + string(h)
		}
		return obsclient.Location{}, usagef("%s", msg)
	}
	return l, nil
}

// obsParseRemote parses a location that must be in OBS.
func obsParseRemote(s string) (obsclient.Location, error) {
	l, err := obsParse(s)
	if err != nil {
		return l, err
	}
	if !l.Remote() {
		return l, usagef("%q is not an OBS URL; write it as obs://BUCKET/KEY", s)
	}
	return l, nil
}

// obsParseBucket parses an obs://BUCKET argument.
func obsParseBucket(s string) (string, error) {
	l, err := obsParseRemote(s)
	if err != nil {
		return "", err
	}
	if l.Key != "" {
		return "", usagef("%q names an object; give the bucket alone, as obs://%s", s, l.Bucket)
	}
	return l.Bucket, nil
}

// obsParsePair parses the SRC and DST of a transfer; one must be in OBS.
func obsParsePair(args []string) (src, dst obsclient.Location, err error) {
	if src, err = obsParse(args[0]); err != nil {
		return
	}
	if dst, err = obsParse(args[1]); err != nil {
		return
	}
	if !src.Remote() && !dst.Remote() {
		err = usagef("SRC and DST are both local paths; one of them must be obs://BUCKET/KEY")
	}
	return
}

// obsOptionalArg accepts at most one positional argument, named name.
func obsOptionalArg(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) > 1:
			return usagef("unexpected argument %q", args[1])
		case len(args) == 1 && args[0] == "":
			return usagef("argument %s is empty", name)
		}
		return nil
	}
}

// obsPlural is "1 object" or "3 objects".
func obsPlural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
