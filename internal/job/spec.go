package job

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/obsurl"
	"github.com/atelier-dev/atelier/internal/text"
)

// Error codes of job specs, phases and the queue (ATL.JOB.0001–0049).
const (
	// CodeInvalidSpec: the job spec has problems; the message lists each
	// with its JSON field path and what is accepted.
	CodeInvalidSpec errs.Code = "ATL.JOB.0001"
	// CodeUnsupportedSpec: every problem of the spec is a feature Atelier
	// does not offer (yet): several nodes, datasets as inputs.
	CodeUnsupportedSpec errs.Code = "ATL.JOB.0002"
	// CodeBadOBSURL: a string is not an OBS URL (ParseOBSURL).
	CodeBadOBSURL errs.Code = "ATL.JOB.0003"
	// CodeBadAutoStop: spec.auto_stop is invalid (MaxRuntime).
	CodeBadAutoStop errs.Code = "ATL.JOB.0004"
	// CodeBadTransition: a job cannot move from one phase to another
	// (CheckTransition).
	CodeBadTransition errs.Code = "ATL.JOB.0005"
)

// Where a job sees its files (ModelArts' layout).
const (
	HomeDir    = "/home/ma-user/"
	CodeParent = "/home/ma-user/modelarts/user-job-dir/" // MA_JOB_DIR; the code dir is CodeParent/<code dir name>/
	InputsDir  = "/home/ma-user/modelarts/inputs/"       // inputs[i] at InputsDir/<name>_0/
	OutputsDir = "/home/ma-user/modelarts/outputs/"      // outputs[i] at OutputsDir/<name>_0/
	LogDir     = "/home/ma-user/modelarts/log/"
)

// Limits and defaults of a job spec.
const (
	DefaultMaxNameLen   = 64
	MaxDescriptionLen   = 256
	MaxRetries          = 10
	MaxEnvironments     = 100
	MaxParamNameLen     = 128
	MinPriority         = 1
	MaxPriority         = 3
	DefaultPriority     = 1
	MaxAutoStop         = 30 * 24 * time.Hour
	DefaultSyncInterval = 30 * time.Second
	MinSyncInterval     = time.Second
	MaxSyncInterval     = time.Hour
	DefaultHangTimeout  = 30 * time.Minute
	MinHangTimeout      = 10 * time.Second
	MaxHangTimeout      = 7 * 24 * time.Hour
)

// Access methods of inputs and outputs.
const (
	AccessParameter = "parameter" // --name=local_dir
	AccessEnv       = "env"       // environment variable name=local_dir
)

// Env is what Normalize checks a job against: the server's flavors and
// engines (the first of each is the default) and the longest job name.
type Env struct {
	Flavors []api.Flavor
	Engines []api.Engine
	// Refused are configured engines the sandbox cannot run, with why.
	Refused    map[string]error
	MaxNameLen int // 0 = DefaultMaxNameLen
}

var (
	jobNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })
	argNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`) })
	envKeyRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// reservedEnv are the environment variables the platform sets in a job;
// reservedEnvPrefixes the prefixes it owns.
var (
	reservedEnv = []string{
		"S3_ENDPOINT", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "PYTHONPATH", "RANK", "WORLD_SIZE", "MASTER_ADDR",
		"MASTER_PORT", "TMPDIR", "PYTHONUNBUFFERED",
	}
	reservedEnvPrefixes = []string{"MA_", "VC_", "ATELIER_", "AWS_"}
)

// ReservedEnv reports whether the platform sets the environment variable
// key in a job, so a job may not set it.
func ReservedEnv(key string) bool {
	if slices.Contains(reservedEnv, key) {
		return true
	}
	for _, p := range reservedEnvPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// problem is one thing wrong with a job spec.
type problem struct {
	field       string // JSON path, e.g. algorithm.parameters[2].name
	msg         string // what is wrong and what is accepted
	hint        string
	unsupported bool // a valid request for something not offered
}

type problems []problem

func (ps *problems) add(field, msg string) { *ps = append(*ps, problem{field: field, msg: msg}) }
func (ps *problems) addHint(field, msg, hint string) {
	*ps = append(*ps, problem{field, msg, hint, false})
}
func (ps *problems) unsupported(field, msg, hint string) {
	*ps = append(*ps, problem{field, msg, hint, true})
}

// err joins the problems into one error: "invalid job spec: FIELD: MSG" or
// "invalid job spec (N problems): FIELD: MSG; FIELD: MSG".
func (ps problems) err(op errs.Op) error {
	if len(ps) == 0 {
		return nil
	}
	kind, code, head := errs.Unsupported, CodeUnsupportedSpec, "unsupported job spec"
	for _, p := range ps {
		if !p.unsupported {
			kind, code, head = errs.Invalid, CodeInvalidSpec, "invalid job spec"
			break
		}
	}
	parts := make([]string, len(ps))
	var hints []string
	for i, p := range ps {
		parts[i] = p.field + ": " + p.msg
		if p.hint != "" && !slices.Contains(hints, p.hint) {
			hints = append(hints, p.hint)
		}
	}
	msg := head + ": " + parts[0]
	if len(ps) > 1 {
		msg = fmt.Sprintf("%s (%d problems): %s", head, len(ps), strings.Join(parts, "; "))
	}
	hint := strings.Join(hints, "; ")
	if hint == "" {
		hint = "fix the fields named in the message; docs/training.md describes the job spec"
	}
	return errs.E(op, kind, code, msg, errs.Hint(hint))
}

// Normalize validates a job spec and fills in its defaults, in place. It
// collects every problem into one error (CodeInvalidSpec, or
// CodeUnsupportedSpec when all of them are unsupported features) whose
// message names each field by its JSON path and says what is accepted. On
// error j is unchanged. A normalised job normalises to itself.
//
// What it does: kind "" → "job"; annotations checked and written in their
// canonical form; OBS URLs in the forms obs://b/k, s3://b/k and ModelArts'
// /b/k/ written as obs://b/k, directories with a trailing "/"; boot_file
// made relative to code_dir; engine and flavor resolved against env (the
// first is the default) and written with their configured names;
// parameters, inputs, outputs and environments checked; inputs' and
// outputs' access_method ("parameter") and local_dir
// (/home/ma-user/modelarts/{inputs,outputs}/<name>_0/) filled in;
// node_count 0 → 1; auto_stop's time_unit upper-cased; priority 0 → 1.
// It leaves metadata.id, create_time, user_name and status alone.
func Normalize(j *api.Job, env Env) error {
	const op errs.Op = "job.Normalize"
	if j == nil {
		return errs.E(op, errs.Invalid, CodeInvalidSpec, "invalid job spec: no job given")
	}
	c := clone(j)
	var ps problems
	normKind(&c, &ps)
	normMetadata(&c.Metadata, env, &ps)
	normAlgorithm(&c.Algorithm, env, &ps)
	normSpec(&c.Spec, env, &ps)
	if err := ps.err(op); err != nil {
		return err
	}
	*j = c
	return nil
}

// clone copies j deeply enough that normalising the copy leaves j alone.
// Status is shared: Normalize does not touch it.
func clone(j *api.Job) api.Job {
	c := *j
	if j.Metadata.Annotations != nil {
		c.Metadata.Annotations = make(map[string]string, len(j.Metadata.Annotations))
		for k, v := range j.Metadata.Annotations {
			c.Metadata.Annotations[k] = v
		}
	}
	a := &c.Algorithm
	a.Parameters = slices.Clone(j.Algorithm.Parameters)
	a.Inputs = cloneChannels(j.Algorithm.Inputs)
	a.Outputs = cloneChannels(j.Algorithm.Outputs)
	if j.Algorithm.Environments != nil {
		a.Environments = make(map[string]string, len(j.Algorithm.Environments))
		for k, v := range j.Algorithm.Environments {
			a.Environments[k] = v
		}
	}
	if j.Algorithm.SourceNotebook != nil {
		v := *j.Algorithm.SourceNotebook
		a.SourceNotebook = &v
	}
	if j.Spec.AutoStop != nil {
		v := *j.Spec.AutoStop
		c.Spec.AutoStop = &v
	}
	if j.Spec.LogExportPath != nil {
		v := *j.Spec.LogExportPath
		c.Spec.LogExportPath = &v
	}
	if j.Spec.SchedulePolicy != nil {
		v := *j.Spec.SchedulePolicy
		c.Spec.SchedulePolicy = &v
	}
	return c
}

func cloneChannels(in []api.JobChannel) []api.JobChannel {
	out := slices.Clone(in)
	for i := range out {
		if o := out[i].Remote.OBS; o != nil {
			v := *o
			out[i].Remote.OBS = &v
		}
		if d := out[i].Remote.Dataset; d != nil {
			v := *d
			out[i].Remote.Dataset = &v
		}
	}
	return out
}

func normKind(j *api.Job, ps *problems) {
	switch k := strings.TrimSpace(j.Kind); {
	case k == "" || strings.EqualFold(k, "job"):
		j.Kind = "job"
	case strings.EqualFold(k, "visualization_job"):
		ps.unsupported("kind", fmt.Sprintf("%q is not offered: use \"job\"", k), "")
	default:
		ps.add("kind", fmt.Sprintf("%q is not a job kind: use \"job\"", k))
	}
}

func normMetadata(m *api.JobMetadata, env Env, ps *problems) {
	maxLen := env.MaxNameLen
	if maxLen <= 0 {
		maxLen = DefaultMaxNameLen
	}
	rule := fmt.Sprintf("use 1-%d letters, digits, '_' or '-'", maxLen)
	switch {
	case m.Name == "":
		ps.add("metadata.name", "required: "+rule)
	case utf8.RuneCountInString(m.Name) > maxLen:
		ps.add("metadata.name", fmt.Sprintf("%q is %d characters long: %s", text.Clip(m.Name, 80), utf8.RuneCountInString(m.Name), rule))
	case !jobNameRe().MatchString(m.Name):
		ps.add("metadata.name", fmt.Sprintf("%q is not a valid name: %s", text.Clip(m.Name, 80), rule))
	}
	if n := utf8.RuneCountInString(m.Description); n > MaxDescriptionLen {
		ps.add("metadata.description", fmt.Sprintf("is %d characters long: at most %d are accepted", n, MaxDescriptionLen))
	}
	normAnnotations(m.Annotations, ps)
}

func normAnnotations(a map[string]string, ps *problems) {
	field := func(k string) string { return fmt.Sprintf("metadata.annotations[%q]", k) }
	intIn := func(k string, lo, hi int, what string) {
		v, ok := a[k]
		if !ok {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			ps.add(field(k), fmt.Sprintf("%q is not accepted: use a whole number of %s from %d to %d", text.Clip(v, 40), what, lo, hi))
			return
		}
		a[k] = strconv.Itoa(n)
	}
	boolean := func(k string) {
		v, ok := a[k]
		if !ok {
			return
		}
		switch t := strings.TrimSpace(v); {
		case strings.EqualFold(t, "true"):
			a[k] = "true"
		case strings.EqualFold(t, "false"):
			a[k] = "false"
		default:
			ps.add(field(k), fmt.Sprintf("%q is not accepted: use \"true\" or \"false\"", text.Clip(v, 40)))
		}
	}
	intIn(api.AnnotationRetryNum, 0, MaxRetries, "retries")
	boolean(api.AnnotationUnconditionalRetry)
	boolean(api.AnnotationHangRetry)
	intIn(api.AnnotationSyncInterval, int(MinSyncInterval/time.Second), int(MaxSyncInterval/time.Second), "seconds")
	intIn(api.AnnotationHangTimeout, int(MinHangTimeout/time.Second), int(MaxHangTimeout/time.Second), "seconds")
}

func normAlgorithm(a *api.JobAlgorithm, env Env, ps *problems) {
	const f = "algorithm."
	codeDir, codeOK := "", false
	if strings.TrimSpace(a.CodeDir) != "" {
		if u, ok := normDirURL(f+"code_dir", a.CodeDir, true, ps); ok {
			a.CodeDir, codeDir, codeOK = u, u, true
		}
	} else {
		a.CodeDir = ""
	}
	a.BootFile = strings.TrimSpace(a.BootFile)
	a.Command = strings.TrimSpace(a.Command)
	switch {
	case a.BootFile == "" && a.Command == "":
		ps.addHint(f+"boot_file", "neither boot_file nor command is set: one of them is required",
			"set boot_file to a .py or .sh file relative to code_dir (e.g. train.py), or command to a shell command line")
	case a.BootFile != "" && a.Command != "":
		ps.addHint(f+"command", "boot_file and command are both set: give one of them",
			"boot_file runs a file of code_dir with the engine; command runs a shell command line in code_dir")
	case a.BootFile != "":
		if a.CodeDir == "" {
			ps.addHint(f+"code_dir", "required when boot_file is set",
				"give the OBS dir that holds the code (obs://bucket/code/), or a local dir to the CLI (--code-dir DIR)")
		}
		if b, ok := normBootFile(a.BootFile, codeDir, codeOK, ps); ok {
			a.BootFile = b
		}
	default:
		if strings.ContainsAny(a.Command, "\n\r\x00") {
			ps.addHint(f+"command", "contains a line break or NUL: a command is one line",
				"chain commands with ';' or '&&', or put them in a .sh file and give it as boot_file")
		}
	}
	normEngine(&a.Engine, env, ps)
	normSourceNotebook(a, codeOK, ps)

	// Parameters, inputs and outputs all become --name=value arguments:
	// their names are unique together.
	names := map[string]string{} // name → field that has it
	claim := func(field, name string) {
		if prev, ok := names[name]; ok {
			ps.addHint(field, fmt.Sprintf("%q is already used by %s", name, prev),
				"parameters, inputs and outputs all become --name=value arguments, so their names must differ")
			return
		}
		names[name] = field
	}
	for i := range a.Parameters {
		p := &a.Parameters[i]
		field := fmt.Sprintf("%sparameters[%d]", f, i)
		if argName(field+".name", p.Name, ps) {
			claim(field+".name", p.Name)
		}
		if strings.ContainsAny(p.Value, "\n\r\x00") {
			ps.add(field+".value", "contains a line break or NUL: a parameter value is one line")
		}
	}
	var dirs []channelDir
	for i := range a.Inputs {
		normChannel(fmt.Sprintf("%sinputs[%d]", f, i), &a.Inputs[i], InputsDir, a.Environments, claim, &dirs, ps)
	}
	for i := range a.Outputs {
		normChannel(fmt.Sprintf("%soutputs[%d]", f, i), &a.Outputs[i], OutputsDir, a.Environments, claim, &dirs, ps)
	}
	checkOverlaps(dirs, ps)
	normEnvironments(a.Environments, ps)
}

// MaxSourceNotebookField bounds source_notebook's id and name.
const MaxSourceNotebookField = 128

// normSourceNotebook checks the link to the notebook the code dir is a
// snapshot of: an id and a name (one line each), and its code_dir, which
// must be the job's own (so the link names the code that runs).
func normSourceNotebook(a *api.JobAlgorithm, codeOK bool, ps *problems) {
	sn := a.SourceNotebook
	if sn == nil {
		return
	}
	const f = "algorithm.source_notebook."
	c := *sn
	c.ID, c.Name = strings.TrimSpace(c.ID), strings.TrimSpace(c.Name)
	for _, v := range []struct{ field, v string }{{"id", c.ID}, {"name", c.Name}} {
		switch {
		case v.v == "":
			ps.addHint(f+v.field, "required", "source_notebook is set by `atelier job create --from-notebook`; remove it, or give id, name and code_dir")
		case len(v.v) > MaxSourceNotebookField || strings.ContainsAny(v.v, "\x00\n\r\t") || !utf8.ValidString(v.v):
			ps.add(f+v.field, fmt.Sprintf("must be one line of at most %d bytes", MaxSourceNotebookField))
		}
	}
	if u, ok := normDirURL(f+"code_dir", c.CodeDir, true, ps); ok {
		c.CodeDir = u
		if codeOK && u != a.CodeDir {
			ps.addHint(f+"code_dir", fmt.Sprintf("%q is not the job's code_dir %q", text.Clip(u, 200), text.Clip(a.CodeDir, 200)),
				"a job made from a notebook runs its snapshot: code_dir is the snapshot's code_dir")
		}
	}
	a.SourceNotebook = &c
}

// normBootFile makes boot_file a clean path relative to code_dir.
func normBootFile(b, codeDir string, codeOK bool, ps *problems) (string, bool) {
	const field = "algorithm.boot_file"
	if fs := strings.Fields(b); len(fs) > 1 && looksLikeCommand(fs) {
		script := "train.py"
		for _, w := range fs {
			if strings.HasSuffix(w, ".py") || strings.HasSuffix(w, ".sh") {
				script = path.Base(w)
				break
			}
		}
		ps.addHint(field, fmt.Sprintf("%q is a command line, not a file", text.Clip(b, 120)),
			fmt.Sprintf("give command: %q, or boot_file: %s with the arguments as parameters", text.Clip(b, 120), script))
		return "", false
	}
	if strings.ContainsAny(b, "\x00\n\r") {
		ps.add(field, "contains a control character: give a file name relative to code_dir, e.g. train.py")
		return "", false
	}
	rel := b
	if obsurl.HasScheme(b) && !hasScheme(b) {
		_, _, err := ParseOBSURL(b)
		ps.addHint(field, errs.UserMessage(err), string(errs.HintOf(err)))
		return "", false
	}
	if hasScheme(b) || strings.HasPrefix(b, "/") {
		// A full OBS path, ModelArts' form: it must lie inside code_dir.
		if !codeOK {
			return "", false // code_dir is missing or invalid: reported already
		}
		bucket, key, err := ParseOBSURL(b)
		cb, ck, _ := ParseOBSURL(codeDir)
		if err != nil || bucket != cb || !strings.HasPrefix(key, ck) || key == ck {
			ps.addHint(field, fmt.Sprintf("boot_file must be inside code_dir: %q is not inside %q", text.Clip(b, 200), codeDir),
				"give boot_file relative to code_dir (e.g. train.py), or a full OBS path inside code_dir")
			return "", false
		}
		rel = key[len(ck):]
	}
	if strings.Contains(rel, `\`) {
		ps.add(field, fmt.Sprintf("%q contains '\\': separate directories with '/'", text.Clip(b, 200)))
		return "", false
	}
	if strings.HasPrefix(rel, "/") || slices.Contains(strings.Split(rel, "/"), "..") {
		ps.add(field, fmt.Sprintf("%q leaves code_dir: give a path relative to code_dir without '..', e.g. train.py or src/train.py", text.Clip(b, 200)))
		return "", false
	}
	if strings.HasSuffix(rel, "/") {
		ps.add(field, fmt.Sprintf("%q is a directory: give the file to run, e.g. train.py", text.Clip(b, 200)))
		return "", false
	}
	rel = path.Clean(rel)
	switch {
	case strings.HasSuffix(rel, ".py"), strings.HasSuffix(rel, ".sh"), strings.HasSuffix(rel, ".ipynb"):
		return rel, true
	default:
		ps.add(field, fmt.Sprintf("%q must end in .py (run with the engine's Python), .sh (run with /bin/sh) or .ipynb (a notebook, run headless)", text.Clip(b, 200)))
	}
	return "", false
}

// looksLikeCommand reports whether the words of a boot_file are a command
// line: an interpreter first, or options.
func looksLikeCommand(words []string) bool {
	first := path.Base(words[0])
	switch {
	case strings.HasPrefix(first, "python"), first == "sh", first == "bash", first == "torchrun",
		first == "accelerate", first == "deepspeed", first == "exec", first == "cd":
		return true
	}
	for _, w := range words[1:] {
		if strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
			return true
		}
	}
	return false
}

func normEngine(e *api.JobEngine, env Env, ps *problems) {
	const field = "algorithm.engine.engine_name"
	if len(env.Engines) == 0 {
		ps.addHint(field, "the server has no engines configured", "ask the administrator to configure engines (atelier job engines lists them)")
		return
	}
	name := strings.TrimSpace(e.EngineName)
	if name == "" {
		e.EngineName, e.EngineVersion = env.Engines[0].Name, env.Engines[0].Version
		return
	}
	var matches []api.Engine
	for _, en := range env.Engines {
		if strings.EqualFold(en.Name, name) {
			matches = append(matches, en)
		}
	}
	if len(matches) == 0 {
		for n, err := range env.Refused {
			if strings.EqualFold(n, name) {
				hint := string(errs.HintOf(err))
				if hint == "" {
					hint = "atelier job engines lists the engines that work"
				}
				ps.addHint(field, fmt.Sprintf("engine %q is not available on this server: %s", n, errs.UserMessage(err)), hint)
				return
			}
		}
		ps.addHint(field, fmt.Sprintf("unknown engine %q: available engines are %s", text.Clip(name, 80), engineNames(env.Engines)),
			"atelier job engines lists them")
		return
	}
	pick := matches[0]
	// Several engines of one name: the version chooses. With one, a
	// ModelArts engine_version (e.g. pytorch_1.8.0-cuda_10.2-…) is replaced
	// by the configured engine's version.
	if v := strings.TrimSpace(e.EngineVersion); len(matches) > 1 && v != "" {
		found := false
		for _, m := range matches {
			if strings.EqualFold(m.Version, v) {
				pick, found = m, true
				break
			}
		}
		if !found {
			var vs []string
			for _, m := range matches {
				vs = append(vs, strconv.Quote(m.Version))
			}
			ps.add("algorithm.engine.engine_version", fmt.Sprintf("engine %s has no version %q: available versions are %s",
				pick.Name, text.Clip(v, 80), strings.Join(vs, ", ")))
			return
		}
	}
	e.EngineName, e.EngineVersion = pick.Name, pick.Version
}

func engineNames(es []api.Engine) string {
	var names []string
	for _, e := range es {
		if !slices.Contains(names, e.Name) {
			names = append(names, e.Name)
		}
	}
	return strings.Join(names, ", ")
}

// argName checks the name of a parameter, input or output.
func argName(field, name string, ps *problems) bool {
	const rule = "a name starts with a letter or '_' and has letters, digits, '_', '.' or '-'"
	switch {
	case name == "":
		ps.add(field, "required: "+rule)
	case len(name) > MaxParamNameLen:
		ps.add(field, fmt.Sprintf("%q is %d characters long: at most %d are accepted", text.Clip(name, 40), len(name), MaxParamNameLen))
	case !argNameRe().MatchString(name):
		ps.add(field, fmt.Sprintf("%q is not a valid name: %s", text.Clip(name, 80), rule))
	default:
		return true
	}
	return false
}

// channelDir is a channel's local dir, for the overlap check.
type channelDir struct{ field, dir string }

func normChannel(field string, ch *api.JobChannel, defaultParent string, environments map[string]string,
	claim func(field, name string), dirs *[]channelDir, ps *problems) {
	nameOK := argName(field+".name", ch.Name, ps)
	if nameOK {
		claim(field+".name", ch.Name)
	}
	switch {
	case ch.Remote.Dataset != nil && defaultParent != InputsDir:
		ps.add(field+".remote.dataset", "an output cannot be a dataset: give an OBS dir in remote.obs.obs_url")
	case ch.Remote.Dataset != nil && (ch.Remote.OBS == nil || ch.Remote.OBS.OBSURL == ""):
		// Jobs.check resolves a dataset input to its data's OBS dir before
		// normalising; without a resolver there is none.
		ps.unsupported(field+".remote.dataset", "this server does not resolve datasets",
			"give the data's OBS dir in remote.obs.obs_url")
	case ch.Remote.Dataset != nil:
		if u, ok := normDirURL(field+".remote.obs.obs_url", ch.Remote.OBS.OBSURL, false, ps); ok {
			ch.Remote.OBS.OBSURL = u
		}
	case ch.Remote.OBS == nil || strings.TrimSpace(ch.Remote.OBS.OBSURL) == "":
		ps.add(field+".remote.obs.obs_url", "required: the OBS dir (obs://bucket/path/)")
	default:
		if u, ok := normDirURL(field+".remote.obs.obs_url", ch.Remote.OBS.OBSURL, false, ps); ok {
			ch.Remote.OBS.OBSURL = u
		}
	}
	switch m := strings.ToLower(strings.TrimSpace(ch.AccessMethod)); m {
	case "", AccessParameter:
		ch.AccessMethod = AccessParameter
	case AccessEnv:
		ch.AccessMethod = AccessEnv
		if nameOK {
			switch {
			case !envKeyRe().MatchString(ch.Name):
				ps.add(field+".name", fmt.Sprintf("%q is not an environment variable name, as access_method \"env\" needs: use letters, digits and '_', not starting with a digit", ch.Name))
			case ReservedEnv(ch.Name):
				ps.add(field+".name", fmt.Sprintf("%s is set by the platform: choose another name for access_method \"env\"", ch.Name))
			default:
				if _, ok := environments[ch.Name]; ok {
					ps.add(field+".name", fmt.Sprintf("%s is also set in algorithm.environments: with access_method \"env\" the input or output sets it", ch.Name))
				}
			}
		}
	default:
		ps.add(field+".access_method", fmt.Sprintf("%q is not accepted: use \"parameter\" (--name=dir) or \"env\" (an environment variable)", text.Clip(ch.AccessMethod, 40)))
	}
	if strings.TrimSpace(ch.LocalDir) == "" {
		if nameOK {
			ch.LocalDir = defaultParent + ch.Name + "_0/"
			*dirs = append(*dirs, channelDir{field + ".local_dir", ch.LocalDir})
		} else {
			ch.LocalDir = ""
		}
		return
	}
	d := strings.TrimSpace(ch.LocalDir)
	switch {
	case strings.ContainsAny(d, "\x00\n\r\\"):
		ps.add(field+".local_dir", fmt.Sprintf("%q contains a control character or '\\': give a dir under %s", text.Clip(d, 120), HomeDir))
	case slices.Contains(strings.Split(d, "/"), ".."):
		ps.add(field+".local_dir", fmt.Sprintf("%q contains '..': give a dir under %s", text.Clip(d, 120), HomeDir))
	default:
		clean := path.Clean(d) + "/"
		if !strings.HasPrefix(clean, HomeDir) || clean == HomeDir {
			ps.add(field+".local_dir", fmt.Sprintf("%q is not under %s: a job sees only its home; leave it empty for the default %s%s_0/",
				text.Clip(d, 120), HomeDir, defaultParent, ch.Name))
			return
		}
		ch.LocalDir = clean
		*dirs = append(*dirs, channelDir{field + ".local_dir", clean})
	}
}

// checkOverlaps makes sure no two channels share a dir and none hides the
// code or log dir.
func checkOverlaps(dirs []channelDir, ps *problems) {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, d := range dirs {
		for _, sys := range []string{CodeParent, LogDir} {
			if overlap(d.dir, sys) {
				ps.add(d.field, fmt.Sprintf("%q overlaps %s, which the platform uses: choose another dir under %s", d.dir, sys, HomeDir))
			}
		}
		for _, e := range dirs[:i] {
			if overlap(d.dir, e.dir) {
				ps.add(d.field, fmt.Sprintf("%q overlaps %s %q: each input and output needs its own dir", d.dir, e.field, e.dir))
				break
			}
		}
	}
}

func normEnvironments(env map[string]string, ps *problems) {
	const f = "algorithm.environments"
	if len(env) > MaxEnvironments {
		ps.add(f, fmt.Sprintf("%d variables: at most %d are accepted", len(env), MaxEnvironments))
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field := fmt.Sprintf("%s[%q]", f, k)
		v := env[k]
		switch {
		case !envKeyRe().MatchString(k):
			ps.add(field, fmt.Sprintf("%q is not a valid variable name: use letters, digits and '_', not starting with a digit", text.Clip(k, 80)))
			continue
		case k == "CUDA_VISIBLE_DEVICES" || k == "NVIDIA_VISIBLE_DEVICES":
			ps.addHint(field, k+" is set by the platform to the GPU devices the job was given",
				"choose a flavor with the GPUs you need (atelier job flavors)")
			continue
		case ReservedEnv(k):
			ps.addHint(field, fmt.Sprintf("%s is set by the platform", k),
				"the platform sets MA_*, VC_*, ATELIER_*, AWS_*, S3_ENDPOINT, CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, PYTHONPATH, RANK, WORLD_SIZE, "+
					"MASTER_ADDR, MASTER_PORT, TMPDIR and PYTHONUNBUFFERED; choose another name")
			continue
		}
		if strings.Contains(v, "$") {
			ps.addHint(field, "the value contains '$': values are passed literally and '$' is not accepted (as in ModelArts)",
				"write the value out in full; a job that needs expansion can use command: \"FOO=$BAR python train.py\"")
		}
		if strings.ContainsRune(v, 0) {
			ps.add(field, "the value contains a NUL character, which an environment variable cannot hold")
		}
	}
}

func normSpec(s *api.JobSpec, env Env, ps *problems) {
	normResource(&s.Resource, env, ps)
	if a := s.AutoStop; a != nil {
		a.TimeUnit = strings.ToUpper(strings.TrimSpace(a.TimeUnit))
		if _, field, msg := autoStop(a.TimeUnit, a.Duration); msg != "" {
			ps.add("spec.auto_stop."+field, msg)
		}
	}
	if l := s.LogExportPath; l != nil {
		if strings.TrimSpace(l.OBSURL) == "" {
			s.LogExportPath = nil
		} else if u, ok := normDirURL("spec.log_export_path.obs_url", l.OBSURL, false, ps); ok {
			l.OBSURL = u
		}
	}
	if s.SchedulePolicy == nil {
		s.SchedulePolicy = &api.JobSchedulePolicy{}
	}
	switch p := s.SchedulePolicy.Priority; {
	case p == 0:
		s.SchedulePolicy.Priority = DefaultPriority
	case p < MinPriority || p > MaxPriority:
		ps.add("spec.schedule_policy.priority", fmt.Sprintf("%d is out of range: use %d (lowest, the default) to %d (highest)", p, MinPriority, MaxPriority))
	}
}

func normResource(r *api.JobResource, env Env, ps *problems) {
	const f = "spec.resource."
	switch {
	case len(env.Flavors) == 0:
		ps.addHint(f+"flavor_id", "the server has no flavors configured", "ask the administrator to configure flavors (atelier job flavors lists them)")
	default:
		id := strings.TrimSpace(r.FlavorID)
		fl, ok := env.Flavors[0], id == ""
		for _, c := range env.Flavors {
			if ok {
				break
			}
			if strings.EqualFold(c.ID, id) {
				fl, ok = c, true
			}
		}
		if !ok {
			var ids []string
			for _, c := range env.Flavors {
				ids = append(ids, c.ID)
			}
			ps.addHint(f+"flavor_id", fmt.Sprintf("unknown flavor %q: available flavors are %s", text.Clip(id, 80), strings.Join(ids, ", ")),
				"atelier job flavors lists them with their CPU, memory and GPU")
			break
		}
		r.FlavorID, r.FlavorName = fl.ID, FlavorName(fl)
	}
	switch {
	case r.NodeCount == 0:
		r.NodeCount = 1
	case r.NodeCount < 0:
		ps.add(f+"node_count", fmt.Sprintf("%d is not accepted: use 1", r.NodeCount))
	case r.NodeCount > 1:
		ps.unsupported(f+"node_count", fmt.Sprintf("%d nodes: the local executor runs single-node jobs", r.NodeCount),
			"use node_count 1 and a flavor with more CPUs or GPUs")
	}
}

// FlavorName describes a flavor, e.g. "cpu.2 (2 CPU, 4.0 GiB memory)" or
// "gpu.1 (8 CPU, 32.0 GiB memory, 1 GPU, 100.0 GiB disk)".
func FlavorName(f api.Flavor) string {
	parts := []string{strconv.FormatFloat(f.CPU, 'f', -1, 64) + " CPU", text.Bytes(f.Memory) + " memory"}
	if f.GPU > 0 {
		parts = append(parts, strconv.Itoa(f.GPU)+" GPU")
	}
	if f.Disk > 0 {
		parts = append(parts, text.Bytes(f.Disk)+" disk")
	}
	return f.ID + " (" + strings.Join(parts, ", ") + ")"
}

var timeUnits = map[string]time.Duration{"SECONDS": time.Second, "MINUTES": time.Minute, "HOURS": time.Hour, "DAYS": 24 * time.Hour}

// autoStop is the maximum running time of a time unit (upper case) and a
// duration; when invalid, field ("time_unit", "duration") and msg say why.
func autoStop(unit string, n int64) (d time.Duration, field, msg string) {
	u, ok := timeUnits[unit]
	switch {
	case !ok:
		return 0, "time_unit", fmt.Sprintf("%q is not accepted: use SECONDS, MINUTES, HOURS or DAYS", text.Clip(unit, 40))
	case n <= 0:
		return 0, "duration", fmt.Sprintf("%d is not accepted: the maximum running time must be more than 0", n)
	case n > int64(MaxAutoStop/u):
		return 0, "duration", fmt.Sprintf("%d %s is more than the longest maximum running time, 30 days (%d %s)",
			n, strings.ToLower(unit), int64(MaxAutoStop/u), strings.ToLower(unit))
	}
	return time.Duration(n) * u, "", ""
}

// MaxRuntime is a job's maximum running time from spec.auto_stop, 0 when
// it has none. time_unit is read case-insensitively.
func MaxRuntime(j *api.Job) (time.Duration, error) {
	const op errs.Op = "job.MaxRuntime"
	if j == nil || j.Spec.AutoStop == nil {
		return 0, nil
	}
	a := j.Spec.AutoStop
	d, field, msg := autoStop(strings.ToUpper(strings.TrimSpace(a.TimeUnit)), a.Duration)
	if msg != "" {
		return 0, errs.E(op, errs.Invalid, CodeBadAutoStop, "spec.auto_stop."+field+": "+msg,
			errs.Hint("e.g. {\"time_unit\": \"HOURS\", \"duration\": 24}; at most 30 days"))
	}
	return d, nil
}

// SyncInterval is how often a job's outputs are synced to OBS: the
// annotation atelier/output-sync-interval (seconds), DefaultSyncInterval
// when absent or invalid.
func SyncInterval(j *api.Job) time.Duration {
	return secondsAnnotation(j, api.AnnotationSyncInterval, DefaultSyncInterval, MinSyncInterval, MaxSyncInterval)
}

// HangTimeout is how long a job may show no output and no CPU/GPU progress
// before it counts as hung: the annotation atelier/hang-timeout (seconds),
// DefaultHangTimeout when absent or invalid.
func HangTimeout(j *api.Job) time.Duration {
	return secondsAnnotation(j, api.AnnotationHangTimeout, DefaultHangTimeout, MinHangTimeout, MaxHangTimeout)
}

func secondsAnnotation(j *api.Job, key string, def, lo, hi time.Duration) time.Duration {
	if j == nil {
		return def
	}
	v, ok := j.Metadata.Annotations[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return def
	}
	d := time.Duration(n) * time.Second
	if d < lo || d > hi {
		return def
	}
	return d
}

// ---- OBS URLs ----

// ParseOBSURL reads an OBS location written obs://bucket/key, s3://bucket/key
// (schemes case-insensitive) or, as ModelArts' REST API writes it,
// /bucket/key (internal/obsurl). The key is returned as written (a dir
// keeps its trailing "/"; it is "" for the bucket itself); a non-empty key
// must be a valid object key.
func ParseOBSURL(s string) (bucket, key string, err error) {
	const op errs.Op = "job.ParseOBSURL"
	bucket, key, err = obsurl.Parse(s, true)
	var ue *obsurl.Error
	if errors.As(err, &ue) {
		hint := ue.Hint
		if s != "" && !obsurl.HasScheme(s) && !strings.HasPrefix(s, "/") {
			hint += "; the CLI uploads a local code dir itself (--code-dir DIR)"
		}
		return "", "", errs.E(op, errs.Invalid, CodeBadOBSURL, ue.Msg, errs.Hint(hint))
	}
	if key != "" {
		if kerr := obs.ValidateKey(key); kerr != nil {
			return "", "", errs.E(op, errs.Invalid, CodeBadOBSURL, fmt.Sprintf("%q: %s", text.Clip(s, 200), errs.UserMessage(kerr)), errs.HintOf(kerr))
		}
	}
	return bucket, key, nil
}

// hasScheme reports whether s starts with obs:// or s3:// (any case).
func hasScheme(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && (strings.EqualFold(scheme, "obs") || strings.EqualFold(scheme, "s3"))
}

// normDirURL writes an OBS dir as obs://bucket/key/ ("obs://bucket/" for a
// whole bucket, which needKey refuses).
func normDirURL(field, s string, needKey bool, ps *problems) (string, bool) {
	s = strings.TrimSpace(s)
	bucket, key, err := ParseOBSURL(s)
	if err != nil {
		ps.addHint(field, errs.UserMessage(err), string(errs.HintOf(err)))
		return "", false
	}
	if key == "" {
		if needKey {
			ps.add(field, fmt.Sprintf("%q names a whole bucket: give a dir in it, e.g. obs://%s/code/", text.Clip(s, 200), bucket))
			return "", false
		}
		return "obs://" + bucket + "/", true
	}
	for _, seg := range strings.Split(strings.TrimSuffix(key, "/"), "/") {
		switch seg {
		case "":
			ps.add(field, fmt.Sprintf("%q has an empty path segment ('//'): write obs://BUCKET/DIR/", text.Clip(s, 200)))
			return "", false
		case ".", "..":
			ps.add(field, fmt.Sprintf("%q has a %q path segment: OBS keys are not resolved like local paths, write the dir in full", text.Clip(s, 200), seg))
			return "", false
		}
	}
	if !strings.HasSuffix(key, "/") {
		key += "/"
	}
	return "obs://" + bucket + "/" + key, true
}
