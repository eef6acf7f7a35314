package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/codeignore"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/strictjson"
	"github.com/atelier-dev/atelier/internal/text"
)

// Error codes of `job create` failures found before the job is submitted.
const (
	codeJobSpecRead    errs.Code = "ATL.CLI.0110" // the job spec file cannot be read
	codeJobSpecSyntax  errs.Code = "ATL.CLI.0111" // not YAML/JSON, not a mapping, or a field of the wrong type
	codeJobSpecUnknown errs.Code = "ATL.CLI.0112" // a field the job spec does not have
	codeCodeDir        errs.Code = "ATL.CLI.0113" // the local code dir does not exist or is not a directory
	codeCodeTooLarge   errs.Code = "ATL.CLI.0114" // the code dir is over 1 GiB or 10,000 files
	codeBootFile       errs.Code = "ATL.CLI.0115" // the boot file is not in the local code dir
	codeIgnoreSyntax   errs.Code = "ATL.CLI.0116" // a bad pattern in .atelierignore
	codeCodeRead       errs.Code = "ATL.CLI.0117" // a file of the code dir cannot be read
	codeLocalChannel   errs.Code = "ATL.CLI.0118" // an input, output or log export path is local, not in OBS
)

// Limits of a local code dir uploaded by `job create`.
const (
	maxCodeBytes = 1 << 30
	maxCodeFiles = 10_000
)

// ignoreFile is the file in a code dir that lists what not to upload.
const ignoreFile = codeignore.FileName

const createHelp = `Create a training job from a job spec file (-f job.yaml; YAML or JSON, the
ModelArts v2 shape: kind, metadata, algorithm, spec) and/or flags. Flags
override the file's values (--input, --output and --param replace an entry of
the same name, or add one).

A LOCAL --code-dir (or a code_dir in the file that exists on this machine;
relative to the file's directory) is packed and uploaded for you: .git/ and
__pycache__/ are skipped, and so is whatever DIR/.atelierignore lists
(gitignore syntax: "data/", "*.ckpt", "/rooted", "**/tmp", "!keep.ckpt").
At most 1 GiB and 10,000 files. --boot-file is relative to the code dir.
The server checks the job (a dry run) before the code dir is uploaded, so
a job it refuses leaves nothing behind.
An obs:// (or s3://, or ModelArts' /bucket/prefix/) code dir is used as is.

--from-notebook NB makes the job from your notebook NB: the server
snapshots its work dir (/home/ma-user/work) as an immutable code dir —
leaving out .venv/, .git/, __pycache__/, .ipynb_checkpoints/, caches, links
and what its .atelierignore lists — with a requirements.txt that pins the
packages installed into the notebook's venv (%pip install), appended to the
work dir's own; it fails naming the packages a job cannot reinstall from the
package index (editable or local installs). The job runs on the notebook's
engine and links back to the notebook and the snapshot (job get).
--boot-file is then relative to the work dir; --notebook-file X.ipynb runs a
notebook headless instead (its cell tagged "parameters" is filled from
--param, inputs and outputs, as papermill does; the executed notebook is
saved as X.executed.ipynb into the first --output). --name defaults to
NB-<date>-<time>.

  --retries N        retry up to N times, also after a non-zero exit
                     (fault-tolerance/job-retry-num=N and
                     fault-tolerance/job-unconditional-retry=true)
  --max-runtime D    stop the job after D of running time (90s, 30m, 2h)
  --flavor ID        default: the server's first flavor (atelier job flavors)

The output of ` + "`atelier job get ID -o yaml`" + ` is a valid spec file: its
status, id and times are ignored. -o json prints the created job (its id
at .metadata.id). With --follow the log is printed until the job ends and the
exit code is the one of ` + "`atelier job wait`" + `.

  kind: job
  metadata: {name: mnist}
  algorithm:
    code_dir: ./src
    boot_file: train.py
    engine: {engine_name: pytorch}
    inputs:  [{name: data_url,  remote: {obs: {obs_url: obs://bkt/mnist/}}}]
    outputs: [{name: train_url, remote: {obs: {obs_url: obs://bkt/out/}}}]
    parameters: [{name: epochs, value: "5"}]
  spec:
    resource: {flavor_id: cpu.2}
    auto_stop: {time_unit: HOURS, duration: 2}`

// createFlags are the flags of `job create`.
type createFlags struct {
	file, name, description, codeDir, bootFile, command, engine, flavor, logExport string
	fromNotebook, notebookFile                                                     string
	inputs, outputs, params, envs                                                  []string
	retries, priority                                                              int
	maxRuntime, syncInterval, hangTimeout                                          time.Duration
	follow                                                                         bool
}

func (j *jobCmds) create() *cobra.Command {
	var f createFlags
	cmd := &cobra.Command{
		Use:   "create [-f FILE] [flags]",
		Short: "Create a training job from a spec file and/or flags",
		Long:  createHelp,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return j.runCreate(cmd.Context(), f, cmd.Flags().Changed)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "job spec (YAML or JSON); - reads standard input")
	fl.StringVar(&f.name, "name", "", "job name")
	fl.StringVar(&f.description, "description", "", "what the job is for")
	fl.StringVar(&f.codeDir, "code-dir", "", "code: a local directory (uploaded) or obs://BUCKET/PREFIX/")
	fl.StringVar(&f.bootFile, "boot-file", "", "script to run, relative to the code dir")
	fl.StringVar(&f.command, "command", "", "shell command to run instead of a boot file")
	fl.StringVar(&f.fromNotebook, "from-notebook", "", "make the job from a snapshot of this notebook's work dir, on its engine")
	fl.StringVar(&f.notebookFile, "notebook-file", "", "notebook (.ipynb) to run headless instead of a boot file, relative to the code dir")
	fl.StringVar(&f.engine, "engine", "", "engine name (atelier job engines)")
	fl.StringArrayVar(&f.inputs, "input", nil, "input channel NAME=obs://BUCKET/PREFIX/ or NAME=dataset:DATASET@VERSION (repeatable)")
	// --output names output channels here, and keeps -o/--output FORMAT
	// working: channels have a "=", formats do not.
	fl.VarP(&outputOrFormat{format: &j.a.output, channels: &f.outputs}, "output", "o",
		"output channel NAME=obs://BUCKET/PREFIX/ (repeatable); without \"=\", the output format: table, json or yaml")
	fl.StringArrayVar(&f.params, "param", nil, "parameter NAME=VALUE, passed as --NAME=VALUE (repeatable)")
	fl.StringArrayVar(&f.envs, "env", nil, "environment variable KEY=VALUE (repeatable)")
	fl.StringVar(&f.flavor, "flavor", "", "flavor id (default: the server's first flavor)")
	fl.IntVar(&f.retries, "retries", 0, "retry a failed job up to N times, whatever the failure")
	fl.DurationVar(&f.maxRuntime, "max-runtime", 0, "stop the job after this running time, e.g. 90s, 30m, 2h")
	fl.IntVar(&f.priority, "priority", 0, "queue priority: higher is admitted first")
	fl.StringVar(&f.logExport, "log-export", "", "also upload the full log to this obs:// prefix")
	fl.DurationVar(&f.syncInterval, "sync-interval", 0, "sync outputs to OBS this often (default 30s)")
	fl.DurationVar(&f.hangTimeout, "hang-timeout", 0, "fail a job that shows no progress for this long (default 30m)")
	fl.BoolVarP(&f.follow, "follow", "F", false, "print the log until the job ends, then exit as job wait does")
	return cmd
}

// outputOrFormat is the --output flag of `job create`: NAME=URL adds an
// output channel, anything else sets the output format (-o json).
type outputOrFormat struct {
	format   *outputFormat
	channels *[]string
}

func (o *outputOrFormat) String() string { return strings.Join(*o.channels, ",") }
func (o *outputOrFormat) Type() string   { return "NAME=URL|format" }

func (o *outputOrFormat) Set(s string) error {
	if strings.Contains(s, "=") {
		*o.channels = append(*o.channels, s)
		return nil
	}
	if err := o.format.Set(s); err != nil {
		return fmt.Errorf("want an output channel NAME=obs://BUCKET/PREFIX/ or an output format (table, json, yaml)")
	}
	return nil
}

// runCreate builds the job from the file and flags, has the server check
// it, uploads a local code dir, submits the job and prints it.
func (j *jobCmds) runCreate(ctx context.Context, f createFlags, changed func(string) bool) error {
	a := j.a
	job := &api.Job{}
	fileDir := "" // relative paths of the file are relative to its directory
	if f.file != "" {
		var err error
		if job, err = a.readJobSpec(f.file); err != nil {
			return err
		}
		if f.file != "-" {
			fileDir = filepath.Dir(f.file)
		}
	}
	if err := applyCreateFlags(job, f, changed); err != nil {
		return err
	}
	if f.fromNotebook != "" {
		return j.createFromNotebook(ctx, job, f, changed)
	}
	if err := checkJobShape(job); err != nil {
		return err
	}
	if err := checkRemotePaths(job); err != nil {
		return err
	}
	codeBase, bootBase := fileDir, fileDir
	if changed("code-dir") {
		codeBase = ""
	}
	if changed("boot-file") || changed("notebook-file") {
		bootBase = ""
	}
	localDir, isLocal, err := localCodeDir(job.Algorithm.CodeDir, codeBase)
	if err != nil {
		return err
	}
	var plan *codePlan
	if isLocal {
		if plan, err = planCodeDir(localDir, codeLimits{maxBytes: maxCodeBytes, maxFiles: maxCodeFiles}); err != nil {
			return err
		}
		if job.Algorithm.BootFile, err = plan.resolveBootFile(job.Algorithm.BootFile, bootBase); err != nil {
			return err
		}
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	if isLocal {
		// The server checks the rest of the job before anything is
		// uploaded: a job it would refuse leaves no code behind.
		check := *job
		check.Algorithm.CodeDir = ""
		if _, err := c.ValidateJob(ctx, &check, true); err != nil {
			return err
		}
		if job.Algorithm.CodeDir, err = j.uploadCode(ctx, c, plan); err != nil {
			return err
		}
	}
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

// readJobSpec reads and parses a job spec file ("-" is stdin).
func (a *app) readJobSpec(file string) (*api.Job, error) {
	var (
		b    []byte
		err  error
		name = file
	)
	if file == "-" {
		b, err = io.ReadAll(a.stdin)
		name = "standard input"
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, errs.E("cli.job.spec", errs.IO, codeJobSpecRead, fmt.Sprintf("cannot read job spec: %v", err))
	}
	return parseJobSpec(name, b)
}

// parseJobSpec decodes a job spec (YAML or JSON) strictly: unknown fields
// and duplicate keys are errors naming the field. Numbers and booleans are
// accepted where the spec wants strings (parameter values, environment
// variables, annotations), as YAML writes them unquoted. Fields the server
// sets (status, id, times, user) are dropped, so `job get -o yaml` output
// can be submitted again.
func parseJobSpec(name string, b []byte) (*api.Job, error) {
	const op errs.Op = "cli.job.spec"
	hint := errs.Hint("see `atelier job create --help` for the shape of a job spec")
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errs.E(op, errs.Invalid, codeJobSpecSyntax, fmt.Sprintf("job spec %s is empty", name), hint)
	}
	js, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return nil, errs.E(op, errs.Invalid, codeJobSpecSyntax, fmt.Sprintf("job spec %s is not valid YAML or JSON: %v", name, err), hint)
	}
	tree, err := strictjson.Tree(js)
	if err != nil {
		return nil, errs.E(op, errs.Invalid, codeJobSpecSyntax, fmt.Sprintf("job spec %s is not valid YAML or JSON: %v", name, err), hint)
	}
	root, ok := tree.(map[string]any)
	if !ok {
		return nil, errs.E(op, errs.Invalid, codeJobSpecSyntax,
			fmt.Sprintf("job spec %s must be a mapping with kind, metadata, algorithm and spec", name), hint)
	}
	if issues := strictjson.UnknownFields(root, reflect.TypeFor[api.Job]()); len(issues) > 0 {
		return nil, unknownFieldError(op, name, issues)
	}
	stringifyScalars(root)
	job := &api.Job{}
	var e *strictjson.Error
	if err := strictjson.Into(root, job); errors.As(err, &e) {
		if e.Field != "" && e.Refused == nil {
			return nil, errs.E(op, errs.Invalid, codeJobSpecSyntax,
				fmt.Sprintf("job spec %s: field %q must be %s, not %s", name, e.Field, e.Want, e.Got), hint)
		}
		return nil, errs.E(op, errs.Invalid, codeJobSpecSyntax, fmt.Sprintf("job spec %s: %v", name, e), hint)
	} else if err != nil {
		return nil, errs.E(op, errs.Internal, codeJobSpecSyntax, fmt.Sprintf("job spec %s: %v", name, err))
	}
	job.Status = nil
	job.Metadata.ID, job.Metadata.CreateTime, job.Metadata.UserName = "", 0, ""
	return job, nil
}

func unknownFieldError(op errs.Op, name string, issues []strictjson.Unknown) error {
	first := issues[0]
	msg := fmt.Sprintf("job spec %s: unknown field %q", name, first.Path)
	if first.Suggest != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", first.Suggest)
	}
	if len(issues) > 1 {
		var rest []string
		for _, is := range issues[1:] {
			rest = append(rest, strconv.Quote(is.Path))
		}
		msg += ", and " + strings.Join(rest, ", ")
	}
	where := "a job spec"
	if first.Parent != "" {
		where = first.Parent
	}
	return errs.E(op, errs.Invalid, codeJobSpecUnknown, msg,
		errs.Hint(fmt.Sprintf("the fields of %s are %s", where, strings.Join(first.Known, ", "))))
}

// stringifyScalars turns numbers and booleans into strings where the job
// spec has string values: parameters[].value, environments and annotations.
func stringifyScalars(root map[string]any) {
	str := func(v any) any {
		switch v := v.(type) {
		case json.Number:
			return v.String()
		case bool:
			return strconv.FormatBool(v)
		}
		return v
	}
	mapValues := func(m any) {
		if m, ok := m.(map[string]any); ok {
			for k, v := range m {
				m[k] = str(v)
			}
		}
	}
	if md, ok := root["metadata"].(map[string]any); ok {
		mapValues(md["annotations"])
	}
	alg, ok := root["algorithm"].(map[string]any)
	if !ok {
		return
	}
	mapValues(alg["environments"])
	if ps, ok := alg["parameters"].([]any); ok {
		for _, p := range ps {
			if p, ok := p.(map[string]any); ok {
				if v, ok := p["value"]; ok {
					p["value"] = str(v)
				}
			}
		}
	}
}

// applyCreateFlags applies the flags that changed to job.
func applyCreateFlags(job *api.Job, f createFlags, changed func(string) bool) error {
	md, alg, spec := &job.Metadata, &job.Algorithm, &job.Spec
	set := func(flag string, dst *string, v string) {
		if changed(flag) {
			*dst = v
		}
	}
	set("name", &md.Name, f.name)
	set("description", &md.Description, f.description)
	set("code-dir", &alg.CodeDir, f.codeDir)
	set("engine", &alg.Engine.EngineName, f.engine)
	set("flavor", &spec.Resource.FlavorID, f.flavor)
	switch {
	case changed("boot-file") && changed("command"):
		return usagef("give --boot-file or --command, not both")
	case changed("notebook-file") && changed("command"):
		return usagef("give --notebook-file or --command, not both")
	case changed("boot-file") && changed("notebook-file"):
		return usagef("give --boot-file or --notebook-file, not both")
	case changed("notebook-file"):
		if !strings.HasSuffix(f.notebookFile, ".ipynb") {
			return usagef("--notebook-file %s: a notebook file ends in .ipynb (give a script as --boot-file)", f.notebookFile)
		}
		alg.BootFile, alg.Command = f.notebookFile, ""
	case changed("boot-file"):
		alg.BootFile, alg.Command = f.bootFile, ""
	case changed("command"):
		alg.Command, alg.BootFile = f.command, ""
	}
	for _, in := range f.inputs {
		k, v, err := splitKV("--input", in, true)
		if err != nil {
			return err
		}
		if ref, ok := strings.CutPrefix(v, "dataset:"); ok {
			name, version, found := strings.Cut(ref, "@")
			if !found || name == "" || version == "" {
				return usagef("--input %s=%s: write dataset:NAME@VERSION (e.g. dataset:flowers@v1)", k, v)
			}
			alg.Inputs = setDatasetChannel(alg.Inputs, k, name, version)
			continue
		}
		alg.Inputs = setChannel(alg.Inputs, k, v)
	}
	for _, out := range f.outputs {
		k, v, err := splitKV("--output", out, true)
		if err != nil {
			return err
		}
		alg.Outputs = setChannel(alg.Outputs, k, v)
	}
	for _, p := range f.params {
		k, v, err := splitKV("--param", p, false)
		if err != nil {
			return err
		}
		alg.Parameters = setParam(alg.Parameters, k, v)
	}
	for _, e := range f.envs {
		k, v, err := splitKV("--env", e, false)
		if err != nil {
			return err
		}
		if alg.Environments == nil {
			alg.Environments = map[string]string{}
		}
		alg.Environments[k] = v
	}
	if changed("log-export") {
		if f.logExport == "" {
			spec.LogExportPath = nil
		} else {
			spec.LogExportPath = &api.OBSLocation{OBSURL: f.logExport}
		}
	}
	if changed("priority") {
		spec.SchedulePolicy = &api.JobSchedulePolicy{Priority: f.priority}
	}
	if changed("max-runtime") {
		as, err := autoStopFor(f.maxRuntime)
		if err != nil {
			return err
		}
		spec.AutoStop = as
	}
	if changed("retries") {
		if f.retries < 0 {
			return usagef("--retries must not be negative")
		}
		setAnnotation(md, api.AnnotationRetryNum, strconv.Itoa(f.retries))
		if f.retries > 0 {
			setAnnotation(md, api.AnnotationUnconditionalRetry, "true")
		} else {
			delete(md.Annotations, api.AnnotationUnconditionalRetry)
		}
	}
	for _, d := range []struct {
		flag, key string
		v         time.Duration
	}{{"sync-interval", api.AnnotationSyncInterval, f.syncInterval}, {"hang-timeout", api.AnnotationHangTimeout, f.hangTimeout}} {
		if !changed(d.flag) {
			continue
		}
		if d.v < time.Second || d.v%time.Second != 0 {
			return usagef("--%s must be a whole number of seconds, at least 1s (got %s)", d.flag, d.v)
		}
		setAnnotation(md, d.key, strconv.FormatInt(int64(d.v/time.Second), 10))
	}
	return nil
}

func setAnnotation(md *api.JobMetadata, k, v string) {
	if md.Annotations == nil {
		md.Annotations = map[string]string{}
	}
	md.Annotations[k] = v
}

// splitKV splits a NAME=VALUE flag value; the value may hold "=" and must
// be non-empty when needValue.
func splitKV(flag, s string, needValue bool) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" || (needValue && v == "") {
		return "", "", usagef("%s wants NAME=VALUE, got %q", flag, s)
	}
	return k, v, nil
}

// setChannel replaces the OBS location of the channel named name, or adds
// the channel.
func setChannel(chs []api.JobChannel, name, url string) []api.JobChannel {
	for i := range chs {
		if chs[i].Name == name {
			chs[i].Remote = api.JobRemote{OBS: &api.OBSLocation{OBSURL: url}}
			return chs
		}
	}
	return append(chs, api.JobChannel{Name: name, Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: url}}})
}

// setDatasetChannel makes the input named name read a dataset version.
func setDatasetChannel(chs []api.JobChannel, name, dataset, version string) []api.JobChannel {
	remote := api.JobRemote{Dataset: &api.DatasetLocation{Name: dataset, Version: version}}
	for i := range chs {
		if chs[i].Name == name {
			chs[i].Remote = remote
			return chs
		}
	}
	return append(chs, api.JobChannel{Name: name, Remote: remote})
}

// setParam replaces the value of the parameter named name, or adds it.
func setParam(ps []api.JobParameter, name, value string) []api.JobParameter {
	for i := range ps {
		if ps[i].Name == name {
			ps[i].Value = value
			return ps
		}
	}
	return append(ps, api.JobParameter{Name: name, Value: value})
}

// autoStopFor expresses a maximum running time in the largest unit that
// holds it exactly.
func autoStopFor(d time.Duration) (*api.JobAutoStop, error) {
	if d < time.Second || d%time.Second != 0 {
		return nil, usagef("--max-runtime must be a whole number of seconds, at least 1s (got %s)", d)
	}
	s := int64(d / time.Second)
	switch {
	case s%86400 == 0:
		return &api.JobAutoStop{TimeUnit: "DAYS", Duration: s / 86400}, nil
	case s%3600 == 0:
		return &api.JobAutoStop{TimeUnit: "HOURS", Duration: s / 3600}, nil
	case s%60 == 0:
		return &api.JobAutoStop{TimeUnit: "MINUTES", Duration: s / 60}, nil
	}
	return &api.JobAutoStop{TimeUnit: "SECONDS", Duration: s}, nil
}

// checkJobShape checks what the job needs before anything is uploaded.
func checkJobShape(job *api.Job) error {
	if job.Kind == "" {
		job.Kind = "job"
	}
	if strings.TrimSpace(job.Metadata.Name) == "" {
		return usagef("the job needs a name: --name, or metadata.name in the spec file")
	}
	alg := job.Algorithm
	switch {
	case alg.BootFile == "" && alg.Command == "":
		return usagef("the job needs something to run: --boot-file (with --code-dir) or --command")
	case alg.BootFile != "" && alg.Command != "":
		return usagef("the job has both a boot file and a command; keep one")
	}
	return nil
}

// isOBSURL reports whether s is written obs://… or s3://….
func isOBSURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "obs://") || strings.HasPrefix(l, "s3://")
}

// checkRemotePaths refuses inputs, outputs and a log export path that are
// local paths (relative, or absolute and present here): jobs read and write
// them in OBS. Absolute paths not present here are ModelArts' /bucket/key.
func checkRemotePaths(job *api.Job) error {
	check := func(what, s string) error {
		if s == "" || isOBSURL(s) {
			return nil
		}
		if strings.HasPrefix(s, "/") && !localPathLike(s) {
			return nil // ModelArts' /bucket/prefix/ form
		}
		return errs.E("cli.job.create", errs.Invalid, codeLocalChannel,
			fmt.Sprintf("%s %s is a local path; jobs read their inputs from and write their outputs to OBS", what, s),
			errs.Hint(fmt.Sprintf("upload it with `atelier obs cp -r %s obs://BUCKET/PREFIX/` and give obs://BUCKET/PREFIX/", s)))
	}
	for _, set := range []struct {
		kind string
		chs  []api.JobChannel
	}{{"input", job.Algorithm.Inputs}, {"output", job.Algorithm.Outputs}} {
		for _, ch := range set.chs {
			if ch.Remote.OBS == nil {
				continue
			}
			if err := check(fmt.Sprintf("%s %s =", set.kind, ch.Name), ch.Remote.OBS.OBSURL); err != nil {
				return err
			}
		}
	}
	if lp := job.Spec.LogExportPath; lp != nil {
		return check("log export path", lp.OBSURL)
	}
	return nil
}

// localPathLike reports whether an absolute path names something on this
// machine: it exists, or its parent directory (other than /) does, so a
// mistyped local path is not taken for ModelArts' /bucket/prefix/ form.
func localPathLike(p string) bool {
	if _, err := os.Lstat(p); err == nil {
		return true
	}
	parent := filepath.Dir(filepath.Clean(p))
	if parent == string(filepath.Separator) || parent == "." {
		return false
	}
	fi, err := os.Stat(parent)
	return err == nil && fi.IsDir()
}

// localCodeDir decides whether a code_dir is a local directory (relative
// paths are taken from base when base is set): obs:// and s3:// URLs are
// not, a path that exists here is, and an absolute path that does not is
// ModelArts' /bucket/prefix/ form unless its parent directory exists here.
func localCodeDir(codeDir, base string) (string, bool, error) {
	const op errs.Op = "cli.job.codeDir"
	if codeDir == "" || isOBSURL(codeDir) {
		return "", false, nil
	}
	p := codeDir
	if !filepath.IsAbs(p) && base != "" {
		p = filepath.Join(base, p)
	}
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.IsDir():
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", false, errs.E(op, errs.IO, codeCodeDir, fmt.Sprintf("cannot resolve code dir %s: %v", p, err))
		}
		return abs, true, nil
	case err == nil:
		return "", false, errs.E(op, errs.Invalid, codeCodeDir, fmt.Sprintf("code dir %s is a file, not a directory", p),
			errs.Hint("give the directory that holds the boot file, and the boot file relative to it"))
	case errors.Is(err, fs.ErrNotExist) && strings.HasPrefix(codeDir, "/") && !localPathLike(p):
		return "", false, nil
	case errors.Is(err, fs.ErrNotExist):
		return "", false, errs.E(op, errs.NotFound, codeCodeDir, fmt.Sprintf("code dir %s does not exist", p),
			errs.Hint("give a local directory, or an OBS prefix such as obs://BUCKET/PREFIX/"))
	}
	return "", false, errs.E(op, errs.IO, codeCodeDir, fmt.Sprintf("cannot read code dir %s: %v", p, err))
}

// codeLimits bound a code dir.
type codeLimits struct {
	maxBytes int64
	maxFiles int
}

// codeEntry is one file or directory of a code dir.
type codeEntry struct {
	rel   string // slash-separated, relative to the root
	abs   string // path to read
	dir   bool
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

// codePlan is what of a code dir gets uploaded.
type codePlan struct {
	root    string
	entries []codeEntry // in walk order: a directory before its contents
	files   map[string]bool
	nFiles  int
	bytes   int64
	notes   []string // what was left out that the user may not expect
}

// planCodeDir walks root, leaving out .git, __pycache__ and what
// root/.atelierignore lists, and checks the limits.
func planCodeDir(root string, lim codeLimits) (*codePlan, error) {
	const op errs.Op = "cli.job.pack"
	rules, err := loadIgnoreFile(root)
	if err != nil {
		return nil, err
	}
	p := &codePlan{root: root, files: map[string]bool{}}
	type agg struct {
		size  int64
		files int
	}
	tops := map[string]*agg{}
	walkCap := lim.maxFiles * 10 // stop counting far past the limit
	truncated := false
	err = filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			return errs.E(op, errs.IO, codeCodeRead, fmt.Sprintf("cannot read %s: %v", abs, pathErrText(err)),
				errs.Hint(fmt.Sprintf("make it readable, or list it in %s", filepath.Join(root, ignoreFile))))
		}
		if abs == root {
			return nil
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := d.Name()
		isDir := d.IsDir()
		if name == ".git" || name == "__pycache__" {
			if isDir {
				return filepath.SkipDir
			}
			return nil
		}
		var info fs.FileInfo
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			fi, err := os.Stat(abs)
			switch {
			case err != nil:
				p.notes = append(p.notes, fmt.Sprintf("skipped %s: a broken symbolic link", rel))
				return nil
			case fi.IsDir():
				p.notes = append(p.notes, fmt.Sprintf("skipped %s: a symbolic link to a directory", rel))
				return nil
			case !fi.Mode().IsRegular():
				return nil
			}
			info = fi
		case isDir:
		case d.Type().IsRegular():
			if info, err = d.Info(); err != nil {
				return errs.E(op, errs.IO, codeCodeRead, fmt.Sprintf("cannot read %s: %v", abs, pathErrText(err)))
			}
		default:
			return nil // sockets, devices, pipes
		}
		if rules.Ignored(rel, isDir) {
			if isDir {
				return filepath.SkipDir
			}
			return nil
		}
		top, _, nested := strings.Cut(rel, "/")
		if nested || isDir {
			top += "/"
		}
		if tops[top] == nil {
			tops[top] = &agg{}
		}
		if isDir {
			p.entries = append(p.entries, codeEntry{rel: rel, abs: abs, dir: true, mode: 0o755})
			return nil
		}
		p.entries = append(p.entries, codeEntry{rel: rel, abs: abs, size: info.Size(), mode: info.Mode().Perm(), mtime: info.ModTime()})
		p.files[rel] = true
		p.nFiles++
		p.bytes += info.Size()
		tops[top].size += info.Size()
		tops[top].files++
		if p.nFiles >= walkCap {
			truncated = true
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p.bytes <= lim.maxBytes && p.nFiles <= lim.maxFiles {
		return p, nil
	}
	names := make([]string, 0, len(tops))
	for n := range tops {
		names = append(names, n)
	}
	bySize := p.bytes > lim.maxBytes
	sort.Slice(names, func(i, k int) bool {
		a, b := tops[names[i]], tops[names[k]]
		if bySize && a.size != b.size {
			return a.size > b.size
		}
		if !bySize && a.files != b.files {
			return a.files > b.files
		}
		return names[i] < names[k]
	})
	var biggest []string
	for _, n := range names[:min(5, len(names))] {
		t := tops[n]
		if strings.HasSuffix(n, "/") {
			biggest = append(biggest, fmt.Sprintf("%s %s in %d files", n, text.Bytes(t.size), t.files))
		} else {
			biggest = append(biggest, fmt.Sprintf("%s %s", n, text.Bytes(t.size)))
		}
	}
	count := fmt.Sprintf("%d files", p.nFiles)
	if truncated {
		count = fmt.Sprintf("more than %d files", p.nFiles)
	}
	return nil, errs.E(op, errs.TooLarge, codeCodeTooLarge,
		fmt.Sprintf("code dir %s is too large to upload: %s in %s (the limits are %s and %d files); the biggest entries: %s",
			root, text.Bytes(p.bytes), count, text.Bytes(lim.maxBytes), lim.maxFiles, strings.Join(biggest, ", ")),
		errs.Hint(fmt.Sprintf("list data, checkpoints and environments in %s (e.g. data/, *.ckpt, .venv/) and give data to the job as --input obs://…",
			filepath.Join(root, ignoreFile))))
}

// pathErrText is the reason of a *fs.PathError without the path.
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// resolveBootFile returns the boot file relative to the code dir. It may
// be given relative to the code dir, as an absolute path inside it, or
// relative to base (the current directory when "") inside it.
func (p *codePlan) resolveBootFile(boot, base string) (string, error) {
	const op errs.Op = "cli.job.bootFile"
	if boot == "" {
		return "", nil
	}
	var candidates []string
	if filepath.IsAbs(boot) {
		if r, ok := p.inside(boot); ok {
			candidates = append(candidates, r)
		}
	} else {
		candidates = append(candidates, path.Clean(filepath.ToSlash(boot)))
		from := base
		if from == "" {
			from, _ = os.Getwd()
		}
		if abs, err := filepath.Abs(filepath.Join(from, boot)); err == nil {
			if r, ok := p.inside(abs); ok {
				candidates = append(candidates, r)
			}
		}
	}
	for _, c := range candidates {
		if p.files[c] {
			return c, nil
		}
	}
	rel := path.Clean(filepath.ToSlash(boot))
	if len(candidates) > 0 {
		rel = candidates[0]
	}
	if fi, err := os.Stat(filepath.Join(p.root, filepath.FromSlash(rel))); err == nil && !fi.IsDir() && len(candidates) > 0 {
		return "", errs.E(op, errs.Invalid, codeBootFile,
			fmt.Sprintf("boot file %s is left out of the upload of code dir %s by %s", rel, p.root, ignoreFile),
			errs.Hint(fmt.Sprintf("remove the pattern that matches it from %s", filepath.Join(p.root, ignoreFile))))
	}
	listing := p.listing(20)
	hint := "the boot file is relative to the code dir"
	var same []string
	for _, e := range p.entries {
		if !e.dir && path.Base(e.rel) == path.Base(rel) {
			same = append(same, e.rel)
		}
	}
	if len(same) > 0 {
		hint = fmt.Sprintf("the boot file is relative to the code dir: did you mean %s?", strings.Join(same[:min(3, len(same))], " or "))
	}
	return "", errs.E(op, errs.NotFound, codeBootFile,
		fmt.Sprintf("boot file %s is not in code dir %s, which holds: %s", boot, p.root, listing), errs.Hint(hint))
}

// inside returns abs relative to the root when it lies inside it.
func (p *codePlan) inside(abs string) (string, bool) {
	r, err := filepath.Rel(p.root, filepath.Clean(abs))
	if err != nil || r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// listing names the first n files of the plan, sorted.
func (p *codePlan) listing(n int) string {
	var fs []string
	for _, e := range p.entries {
		if !e.dir {
			fs = append(fs, e.rel)
		}
	}
	if len(fs) == 0 {
		return "no files"
	}
	sort.Strings(fs)
	s := strings.Join(fs[:min(n, len(fs))], ", ")
	if len(fs) > n {
		s += fmt.Sprintf(" … and %d more", len(fs)-n)
	}
	return s
}

// writeCodeTar writes the plan's entries to w as a tar archive.
func writeCodeTar(w io.Writer, p *codePlan) error {
	const op errs.Op = "cli.job.pack"
	tw := tar.NewWriter(w)
	for _, e := range p.entries {
		hdr := &tar.Header{Name: e.rel, Mode: int64(e.mode), ModTime: e.mtime, Typeflag: tar.TypeReg, Size: e.size}
		if e.dir {
			hdr.Name, hdr.Typeflag, hdr.Size, hdr.ModTime = e.rel+"/", tar.TypeDir, 0, time.Time{}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return errs.E(op, errs.IO, codeCodeRead, fmt.Sprintf("cannot pack %s: %v", e.rel, err))
		}
		if e.dir {
			continue
		}
		if err := copyFile(tw, e); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return errs.E(op, errs.IO, codeCodeRead, fmt.Sprintf("cannot finish the code archive: %v", err))
	}
	return nil
}

// copyFile copies the planned size of e's content; a file that shrank
// since the walk is an error, one that grew is cut at the planned size.
func copyFile(w io.Writer, e codeEntry) error {
	const op errs.Op = "cli.job.pack"
	f, err := os.Open(e.abs)
	if err != nil {
		return errs.E(op, errs.IO, codeCodeRead, fmt.Sprintf("cannot read %s: %v", e.abs, pathErrText(err)))
	}
	defer func() { _ = f.Close() }()
	n, err := io.CopyN(w, f, e.size)
	switch {
	case err == io.EOF:
		return errs.E(op, errs.IO, codeCodeRead,
			fmt.Sprintf("%s shrank from %d to %d bytes while it was packed", e.abs, e.size, n),
			errs.Hint("run the command again once nothing writes to the code dir"))
	case err != nil:
		return errs.E(op, errs.IO, codeCodeRead, fmt.Sprintf("cannot pack %s: %v", e.abs, err))
	}
	return nil
}

// uploadCode streams the plan as a tar archive to the server and returns
// the obs:// code dir it was stored at.
func (j *jobCmds) uploadCode(ctx context.Context, c *client.Client, p *codePlan) (string, error) {
	for _, n := range p.notes {
		j.a.note("%s", n)
	}
	name := filepath.Base(p.root)
	if name == "/" || name == "." || name == "" {
		name = "code"
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := writeCodeTar(pw, p)
		_ = pw.CloseWithError(err)
		done <- err
	}()
	codeDir, files, size, err := c.UploadCode(ctx, name, pr)
	_ = pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the upload ended early
	werr := <-done
	if err != nil {
		return "", err
	}
	if werr != nil {
		return "", werr
	}
	j.a.note("uploaded code dir %s (%d files, %s) to %s", p.root, files, text.Bytes(size), codeDir)
	return codeDir, nil
}

// loadIgnoreFile reads root/.atelierignore; a missing file ignores nothing.
func loadIgnoreFile(root string) (*codeignore.Rules, error) {
	p := filepath.Join(root, ignoreFile)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &codeignore.Rules{}, nil
	}
	if err != nil {
		return nil, errs.E("cli.job.pack", errs.IO, codeCodeRead, fmt.Sprintf("cannot read %s: %v", p, pathErrText(err)))
	}
	defer func() { _ = f.Close() }()
	return parseIgnore(p, f)
}

// parseIgnore reads gitignore-style patterns (package codeignore, which
// the server's notebook snapshots use too) from src.
func parseIgnore(src string, r io.Reader) (*codeignore.Rules, error) {
	rules, err := codeignore.Parse(r)
	var se *codeignore.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, errs.E("cli.job.pack", errs.Invalid, codeIgnoreSyntax,
			fmt.Sprintf("%s line %d: bad pattern %q", src, se.Line, se.Text),
			errs.Hint("close every [ of a character class, or escape it as \\["))
	case errors.Is(err, codeignore.ErrTooLarge):
		return nil, errs.E("cli.job.pack", errs.Invalid, codeIgnoreSyntax,
			fmt.Sprintf("%s has more than %d patterns or a line longer than %d bytes", src, codeignore.MaxRules, codeignore.MaxLineLen))
	case err != nil:
		return nil, errs.E("cli.job.pack", errs.IO, codeCodeRead, fmt.Sprintf("cannot read %s: %v", src, err))
	}
	return rules, nil
}
