package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/text"
)

// Error codes of the model commands (ATL.MDL.0090–0099; the registry's own
// are ATL.MDL.0001–0089).
const (
	codeModelNotFound  errs.Code = "ATL.MDL.0090" // no model version has the id or name given
	codeModelAmbiguous errs.Code = "ATL.MDL.0091" // the name given has several versions
	// codeCheckFailed is the registry's code of a failed dry load, whose
	// message carries the traceback.
	codeCheckFailed = "ATL.MDL.0012"
)

// modelHelp is the long help of `atelier model`.
const modelHelp = `Import model packages as immutable, versioned models and manage them.

A model package is a directory with config.json (model_type, runtime, apis,
dependencies, metrics) and customize_service.py (one class that subclasses
PTServingBaseService, TfServingBaseService or SingleNodeService), plus the
weights, as on ModelArts.

  atelier model import --name mnist --version 1.0.0 --source obs://bkt/mnist/
  atelier model import --name mnist --version 1.1.0 --from-job train-mnist --check
  atelier model list --name mnist
  atelier model get mnist:1.1.0
  atelier model delete mnist:1.0.0

Where a command takes a MODEL, it is a model id, NAME:VERSION, or the NAME of
a model that has one version.`

// modelCmds builds the model commands of one run.
type modelCmds struct{ a *app }

// newModelCmd builds `atelier model`.
func newModelCmd(a *app) *cobra.Command {
	m := &modelCmds{a: a}
	cmd := group("model", "Import and manage model versions", m.importCmd(), m.list(), m.get(), m.delete())
	cmd.Long = modelHelp
	return cmd
}

func (m *modelCmds) importCmd() *cobra.Command {
	var req api.ImportModelRequest
	var job string
	cmd := &cobra.Command{
		Use:   "import --name NAME --version X.Y.Z (--source obs://BUCKET/DIR/ | --from-job JOB [--path model/])",
		Short: "Import a model package from OBS or from a training job's output",
		Long: `Import a model package as a new, immutable model version.

--source is the OBS dir of the package, or its parent when the package is in
its model/ subdir. --from-job takes the package from the first output of a
completed training job (JOB is its id or name): under --path (default model/,
else the output itself). The package is validated (every problem is listed
with its file and field) and copied into the registry with its ETags; a
job's model records the job, its parameters, its inputs' ETags and metrics.

The runtime is --runtime (an engine: ` + "`atelier job engines`" + `), else
config.json's runtime mapped to the closest engine (with a warning).
--check also loads the handler in that engine before accepting, and shows
the traceback when it fails.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.ModelName == "" || req.ModelVersion == "" {
				return usagef("--name and --version are required")
			}
			switch {
			case req.SourceLocation == "" && job == "":
				return usagef("give --source obs://BUCKET/DIR/ or --from-job JOB")
			case req.SourceLocation != "" && job != "":
				return usagef("give --source or --from-job, not both")
			case req.SourcePath != "" && job == "":
				return usagef("--path goes with --from-job (a dir under the job's output)")
			}
			if err := localSource(req.SourceLocation); err != nil {
				return err
			}
			c, err := m.a.client()
			if err != nil {
				return err
			}
			if job != "" {
				if req.SourceJobID, err = (&jobCmds{a: m.a}).resolve(cmd.Context(), c, job); err != nil {
					return err
				}
			}
			model, err := c.ImportModel(cmd.Context(), &req)
			if err != nil {
				return m.checkFailure(err)
			}
			for _, w := range model.Warnings {
				m.a.note("warning: %s", w)
			}
			return m.a.show(model, func(w io.Writer) { modelTable(w, []api.Model{*model}) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.ModelName, "name", "", "model name (letters, digits, '_', '-')")
	f.StringVar(&req.ModelVersion, "version", "", "version, Digit.Digit.Digit (e.g. 1.0.0)")
	f.StringVar(&req.SourceLocation, "source", "", "OBS dir of the package (or of its parent holding model/)")
	f.StringVar(&job, "from-job", "", "import from the output of this training job (id or name)")
	f.StringVar(&req.SourcePath, "path", "", "with --from-job: the dir under the job's first output (default model/)")
	f.StringVar(&req.ModelType, "type", "", "model type when config.json has none (PyTorch, TensorFlow, …)")
	f.StringVar(&req.Runtime, "runtime", "", "engine to run the model with (default: from config.json)")
	f.StringVar(&req.Description, "description", "", "description")
	f.BoolVar(&req.Check, "check", false, "load the handler in the engine before accepting")
	return cmd
}

// localSource refuses a --source that is a local directory: the registry
// imports from OBS.
func localSource(src string) error {
	if src == "" || strings.Contains(src, "://") {
		return nil
	}
	if fi, err := os.Stat(src); err == nil && fi.IsDir() {
		return usagef("--source %s is a local dir: upload it first with `atelier obs cp -r %s obs://BUCKET/DIR/` and import obs://BUCKET/DIR/", src, src)
	}
	return nil
}

// checkFailure prints the traceback of a failed dry load on stderr and
// returns the error with its first line only.
func (m *modelCmds) checkFailure(err error) error {
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Code != codeCheckFailed {
		return err
	}
	first, rest, ok := strings.Cut(ae.Msg, "\n")
	if !ok {
		return err
	}
	m.a.note("%s", strings.TrimRight(rest, "\n"))
	short := *ae
	short.Msg = first
	return &short
}

func (m *modelCmds) list() *cobra.Command {
	var (
		lf            listFlags
		name, version string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List model versions, newest first",
		Long:  "List model versions, newest first. --name keeps models whose name contains the text; --version one version." + listHelp,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := m.a.client()
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), m.a, lf, func(ctx context.Context, o client.ListOptions) (*api.List[api.Model], error) {
				return c.ListModels(ctx, client.ModelListOptions{Name: name, Version: version, Offset: o.Offset, Limit: o.Limit})
			})
			if err != nil {
				return err
			}
			return m.a.show(l, func(w io.Writer) { modelTable(w, l.Items) })
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "only models whose name contains this text")
	cmd.Flags().StringVar(&version, "version", "", "only this version")
	return cmd
}

func (m *modelCmds) get() *cobra.Command {
	return &cobra.Command{
		Use:   "get MODEL",
		Short: "Show a model version: files with ETags, lineage, config and where it is deployed",
		Args:  exactArgs("MODEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := m.a.client()
			if err != nil {
				return err
			}
			id, err := m.resolve(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			model, err := c.GetModel(cmd.Context(), id)
			if err != nil {
				return err
			}
			return m.a.show(model, func(w io.Writer) { modelDetail(w, model) })
		},
	}
}

func (m *modelCmds) delete() *cobra.Command {
	return &cobra.Command{
		Use:   "delete MODEL",
		Short: "Delete a model version and its registry copy (refused while a service uses it)",
		Args:  exactArgs("MODEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := m.a.client()
			if err != nil {
				return err
			}
			id, err := m.resolve(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.DeleteModel(cmd.Context(), id); err != nil {
				return err
			}
			m.a.done("deleted model %s", args[0])
			return nil
		},
	}
}

// resolve turns a MODEL argument (an id, NAME:VERSION, or the name of a
// model with one version) into a model id.
func (m *modelCmds) resolve(ctx context.Context, c *client.Client, arg string) (string, error) {
	const op errs.Op = "cli.model.resolve"
	if looksLikeUUID(arg) {
		return arg, nil
	}
	name, version, _ := strings.Cut(arg, ":")
	all, err := client.All(ctx, func(ctx context.Context, o client.ListOptions) (*api.List[api.Model], error) {
		return c.ListModels(ctx, client.ModelListOptions{Name: name, Version: version, Offset: o.Offset, Limit: o.Limit})
	})
	if err != nil {
		return "", err
	}
	var found []api.Model
	for _, md := range all.Items {
		if md.ModelName == name {
			found = append(found, md)
		}
	}
	switch len(found) {
	case 1:
		return found[0].ModelID, nil
	case 0:
		if version == "" {
			if _, err := c.GetModel(ctx, arg); err == nil {
				return arg, nil
			} else if client.StatusOf(err) != 404 {
				return "", err
			}
		}
		return "", errs.E(op, errs.NotFound, codeModelNotFound, fmt.Sprintf("no model has the id or name %q", arg),
			errs.Hint("list your models with `atelier model list`"))
	}
	var vs []string
	for _, md := range found {
		vs = append(vs, md.ModelVersion)
	}
	sort.Strings(vs)
	return "", errs.E(op, errs.Conflict, codeModelAmbiguous,
		fmt.Sprintf("model %s has %d versions: %s", name, len(found), strings.Join(vs, ", ")),
		errs.Hint(fmt.Sprintf("name one as %s:VERSION, e.g. %s:%s", name, name, vs[len(vs)-1])))
}

func modelTable(w io.Writer, models []api.Model) {
	row(w, "ID", "NAME", "VERSION", "TYPE", "RUNTIME", "STATUS", "CREATED", "DEPLOYED IN")
	for _, md := range models {
		row(w, md.ModelID, md.ModelName, md.ModelVersion, orDash(md.ModelType), orDash(md.Runtime), orDash(md.ModelStatus),
			timeMs(md.CreateTime), names(md.DeployedIn))
	}
}

func modelDetail(w io.Writer, md *api.Model) {
	field(w, "ID", md.ModelID)
	field(w, "Name", md.ModelName)
	field(w, "Version", md.ModelVersion)
	field(w, "Status", orDash(md.ModelStatus))
	field(w, "Type", orDash(md.ModelType))
	runtime := orDash(md.Runtime)
	if md.RuntimeRequest != "" {
		runtime += " (config.json asked for " + md.RuntimeRequest + ")"
	}
	field(w, "Runtime", runtime)
	if md.Description != "" {
		field(w, "Description", oneLine(md.Description))
	}
	if md.Owner != "" {
		field(w, "Owner", md.Owner)
	}
	field(w, "Source", orDash(md.SourceLocation))
	if md.SourceJobID != "" {
		field(w, "Source job", md.SourceJobID)
	}
	field(w, "Location", orDash(md.Location))
	field(w, "Created", timeMs(md.CreateTime))
	field(w, "Deployed in", names(md.DeployedIn))
	for _, wn := range md.Warnings {
		field(w, "Warning", oneLine(wn))
	}
	if l := md.Lineage; l != nil {
		if l.JobID != "" {
			job := l.JobID
			if l.JobName != "" {
				job = l.JobName + " (" + l.JobID + ")"
			}
			field(w, "Lineage job", job)
			field(w, "Lineage engine", orDash(l.Engine))
		}
		for _, p := range l.Parameters {
			field(w, "Parameter", fmt.Sprintf("--%s=%s", p.Name, p.Value))
		}
		for _, in := range l.Inputs {
			src := in.OBSURL
			if d := in.Dataset; d != nil {
				src = fmt.Sprintf("dataset:%s@%s (%s, version %s)", firstNonEmpty(d.Name, d.ID), firstNonEmpty(d.Version, d.VersionID), in.OBSURL, d.VersionID)
			}
			field(w, "Input", fmt.Sprintf("%s = %s (%d objects, %d ETags recorded)", in.Name, src, in.Objects, len(in.ETags)))
		}
		if len(l.Metrics) > 0 {
			keys := make([]string, 0, len(l.Metrics))
			for k := range l.Metrics {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, k+"="+metricValue(l.Metrics[k]))
			}
			field(w, "Metrics", strings.Join(parts, " "))
		}
	}
	if len(md.Files) > 0 {
		fmt.Fprintln(w)
		row(w, "FILE", "SIZE", "ETAG")
		for _, f := range md.Files {
			row(w, f.Path, text.Bytes(f.Size)+" ("+strconv.FormatInt(f.Size, 10)+")", f.ETag)
		}
	}
}
