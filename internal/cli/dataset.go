package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/text"
)

// Error codes of the dataset commands (ATL.DS.0090–0099; the service's own
// are ATL.DS.0001–0089).
const (
	codeDatasetFailed  errs.Code = "ATL.DS.0090" // --follow saw the version fail
	codeDatasetInvalid errs.Code = "ATL.DS.0091" // validate found errors
)

// datasetHelp is the long help of `atelier dataset`.
const datasetHelp = `Turn files in OBS into datasets with versions that copy nothing.

A dataset is an OBS prefix in a layout (imagefolder, image_txt, voc, yolo,
coco, manifest; auto detects it). A version is a ModelArts manifest that
references each object in place with its ETag: making one copies no data,
and a changed or deleted object makes the version "degraded" and stops a
training job from using it before its code starts.

  atelier dataset create --name flowers --type image_classification --source obs://bkt/flowers/
  atelier dataset version flowers --split train=0.8,seed=1 --follow
  atelier dataset get flowers --version v1
  atelier dataset diff flowers v1 v2
  atelier dataset validate --source obs://bkt/new-data/ --format auto
  atelier job create … --input data_url=dataset:flowers@v1

Where a command takes a DATASET, it is the dataset's id or name; a VERSION is
a version's id or name (v1, v2, …).`

// datasetCmds builds the dataset commands of one run.
type datasetCmds struct{ a *app }

// newDatasetCmd builds `atelier dataset`.
func newDatasetCmd(a *app) *cobra.Command {
	d := &datasetCmds{a: a}
	cmd := group("dataset", "Datasets and their versions", d.create(), d.list(), d.get(), d.delete(),
		d.version(), d.validate(), d.diff(), d.manifest(), d.export(), d.deleteVersion(),
		d.samples(), d.label(), d.autolabel(), d.preview(), d.update())
	cmd.Long = datasetHelp
	return cmd
}

func (d *datasetCmds) create() *cobra.Command {
	var req api.CreateDatasetRequest
	var src, typ string
	cmd := &cobra.Command{
		Use:   "create --name NAME --type TYPE --source obs://BUCKET/DIR/ [--format auto]",
		Short: "Create a dataset over an OBS prefix",
		Long: `Create a dataset over an OBS prefix.

--type is image_classification, object_detection, image_segmentation,
text_classification or custom. --format is the layout: imagefolder
(<class>/x.jpg, or train|val|test/<class>/x.jpg), image_txt (x.jpg beside
x.txt), voc (x.jpg beside x.xml), yolo (images/, labels/, data.yaml), coco
(images and annotations/*.json), manifest (a ModelArts .manifest), or auto
(the default), which detects it and says how sure it is and why.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.DatasetName == "" || typ == "" || src == "" {
				return usagef("--name, --type and --source are required")
			}
			if err := localSource(src); err != nil {
				return err
			}
			req.DatasetType = api.NumberOrString(typ)
			req.DataSources = []api.DatasetSource{{DataType: "OBS", DataPath: src}}
			c, err := d.a.client()
			if err != nil {
				return err
			}
			ds, err := c.CreateDataset(cmd.Context(), &req)
			if err != nil {
				return err
			}
			return d.a.show(ds, func(w io.Writer) { datasetDetail(w, ds) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.DatasetName, "name", "", "dataset name (letters, digits, '_', '-', '.')")
	f.StringVar(&typ, "type", "", "image_classification|object_detection|image_segmentation|text_classification|custom")
	f.StringVar(&src, "source", "", "OBS dir of the data")
	f.StringVar(&req.DataFormat, "format", "auto", "layout: imagefolder|image_txt|voc|yolo|coco|manifest|auto")
	f.VarP(&urlOrFormat{format: &d.a.output, url: &req.WorkPath}, "output", "o",
		"OBS dir where every version also writes NAME-VERSION.manifest, or the output format (table, json, yaml)")
	f.StringVar(&req.Description, "description", "", "description")
	f.BoolVar(&req.PreviewsDisabled, "no-previews", false, "turn previews off (sensitive data)")
	return cmd
}

func (d *datasetCmds) list() *cobra.Command {
	var (
		lf   listFlags
		name string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List datasets, newest first",
		Long:  "List datasets, newest first, each with its latest version. --name keeps datasets whose name contains the text." + listHelp,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := d.a.client()
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), d.a, lf, func(ctx context.Context, o client.ListOptions) (*api.List[api.Dataset], error) {
				return c.ListDatasets(ctx, name, o)
			})
			if err != nil {
				return err
			}
			return d.a.show(l, func(w io.Writer) { datasetTable(w, l.Items) })
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "only datasets whose name contains this text")
	return cmd
}

func (d *datasetCmds) get() *cobra.Command {
	var version string
	var noCheck bool
	cmd := &cobra.Command{
		Use:   "get DATASET [--version VERSION]",
		Short: "Show a dataset and its versions, or one version: counts, histograms, findings, what changed",
		Long: `Show a dataset and its versions, or, with --version, one version: its
counts per class and per usage, image size and box histograms, validation
findings and progress. Getting a version checks every object it references
against what is stored now (--no-check skips it) and lists what changed or
disappeared: such a version is "degraded" and cannot be trained from.`,
		Args: exactArgs("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := d.a.client()
			if err != nil {
				return err
			}
			if version == "" {
				ds, err := c.GetDataset(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return d.a.show(ds, func(w io.Writer) { datasetDetail(w, ds) })
			}
			v, err := c.GetDatasetVersion(cmd.Context(), args[0], version, !noCheck)
			if err != nil {
				return err
			}
			return d.a.show(v, func(w io.Writer) { versionDetail(w, v) })
		},
	}
	cmd.Flags().StringVar(&version, "version", "", "show this version (id or name)")
	cmd.Flags().BoolVar(&noCheck, "no-check", false, "with --version: do not compare the objects with the stored ones")
	return cmd
}

func (d *datasetCmds) delete() *cobra.Command {
	return &cobra.Command{
		Use:   "delete DATASET",
		Short: "Delete a dataset, its versions and their manifests (never the data)",
		Args:  exactArgs("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := d.a.client()
			if err != nil {
				return err
			}
			if err := c.DeleteDataset(cmd.Context(), args[0]); err != nil {
				return err
			}
			d.a.done("deleted dataset %s", args[0])
			return nil
		},
	}
}

func (d *datasetCmds) deleteVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "delete-version DATASET VERSION",
		Short: "Delete a version and its manifest (never the data)",
		Args:  exactArgs("DATASET", "VERSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := d.a.client()
			if err != nil {
				return err
			}
			if err := c.DeleteDatasetVersion(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			d.a.done("deleted version %s of dataset %s", args[1], args[0])
			return nil
		},
	}
}

func (d *datasetCmds) version() *cobra.Command {
	var req api.CreateDatasetVersionRequest
	var follow bool
	cmd := &cobra.Command{
		Use:   "version DATASET [--name v2] [--split train=0.8,seed=1 | --split-pattern GLOB=USAGE,…] [--parent v1] [--output obs://…/] [--follow]",
		Short: "Make a version: validate the data and publish a manifest that references it in place",
		Long: `Make a version of a dataset. The server lists the source, reads each
annotation file and image header, validates everything (findings name the
object, the line or JSON path, the rule and the fix), splits the samples and
publishes a ModelArts manifest that references each object with its ETag.
Nothing is copied. It runs in the background; --follow shows a progress bar
and waits for the outcome.

--split train=0.8,seed=1 (or train=0.7,eval=0.2,test=0.1) assigns usages by a
stable hash of each key, per class; --split-pattern train/**=TRAIN,val/**=EVAL
by path. --parent keeps the parent's class order and each of its samples'
usage. --strict turns warnings into errors. --output also writes
DATASET-VERSION.manifest to that OBS dir, for ModelArts tools.`,
		Args: exactArgs("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Split != "" && req.SplitPattern != "" {
				return usagef("give --split or --split-pattern, not both")
			}
			c, err := d.a.client()
			if err != nil {
				return err
			}
			v, err := c.CreateDatasetVersion(cmd.Context(), args[0], &req)
			if err != nil {
				return err
			}
			if follow {
				if v, err = d.follow(cmd.Context(), c, args[0], v); err != nil {
					return err
				}
			} else {
				d.a.note("creating version %s of %s in the background: atelier dataset get %s --version %s", v.VersionName, args[0], args[0], v.VersionName)
			}
			if err := d.a.show(v, func(w io.Writer) { versionDetail(w, v) }); err != nil {
				return err
			}
			if v.Status == api.DatasetVersionFailed {
				return errs.E("cli.dataset.version", errs.Invalid, codeDatasetFailed,
					fmt.Sprintf("version %s failed: %s", v.VersionName, v.FailureMessage),
					errs.Hint("fix what the findings name, then make a new version"))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.VersionName, "name", "", "version name (default v<N>)")
	f.StringVar(&req.Description, "description", "", "description")
	f.StringVar(&req.ParentVersionID, "parent", "", "parent version (id or name)")
	f.StringVar(&req.Split, "split", "", "ratios and seed: train=0.8,seed=1")
	f.StringVar(&req.SplitPattern, "split-pattern", "", "usages by path: train/**=TRAIN,val/**=EVAL")
	f.VarP(&urlOrFormat{format: &d.a.output, url: &req.Output}, "output", "o",
		"OBS dir that also gets DATASET-VERSION.manifest, or the output format (table, json, yaml)")
	f.BoolVar(&req.Strict, "strict", false, "warnings are errors")
	f.BoolVar(&follow, "follow", false, "show progress and wait for the version to be published or fail")
	return cmd
}

// urlOrFormat is a command's --output/-o: an OBS dir (obs://…, s3://… or
// ModelArts' /bucket/dir/), or, as for every command, the output format.
type urlOrFormat struct {
	format *outputFormat
	url    *string
}

func (o *urlOrFormat) String() string { return *o.url }
func (o *urlOrFormat) Type() string   { return "URL|format" }

func (o *urlOrFormat) Set(s string) error {
	if strings.Contains(s, "://") || strings.HasPrefix(s, "/") {
		*o.url = s
		return nil
	}
	if err := o.format.Set(s); err != nil {
		return fmt.Errorf("want an OBS dir obs://BUCKET/DIR/ or an output format (table, json, yaml)")
	}
	return nil
}

// followEvery is how often --follow polls.
const followEvery = 150 * time.Millisecond

// follow polls a version until it leaves "creating", drawing its progress
// on stderr.
func (d *datasetCmds) follow(ctx context.Context, c *client.Client, ds string, v *api.DatasetVersion) (*api.DatasetVersion, error) {
	tty := false
	if f, ok := d.a.stderr.(*os.File); ok {
		tty = isTerminal(f)
	}
	lastLine := ""
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for v.Status == api.DatasetVersionCreating {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		nv, err := c.GetDatasetVersion(ctx, ds, v.VersionID, false)
		if err != nil {
			return nil, err
		}
		v = nv
		line := progressLine(v.Progress)
		switch {
		case line == "" || line == lastLine:
		case tty:
			fmt.Fprintf(d.a.stderr, "\r%-78s", line)
		default:
			if p := v.Progress; p == nil || p.Phase != progressPhase(lastLine) || p.Done == p.Total {
				fmt.Fprintln(d.a.stderr, line)
			}
		}
		lastLine = line
	}
	if tty && lastLine != "" {
		fmt.Fprintln(d.a.stderr)
	}
	// One last read with the object check, as get shows it.
	return c.GetDatasetVersion(ctx, ds, v.VersionID, v.Status != api.DatasetVersionFailed)
}

// progressLine draws a version's progress: "reading [=====     ] 52% 5200/10000".
func progressLine(p *api.DatasetProgress) string {
	if p == nil {
		return ""
	}
	if p.Total <= 0 {
		return p.Phase
	}
	const width = 30
	done := min(p.Done, p.Total)
	n := done * width / p.Total
	return fmt.Sprintf("%s [%s%s] %3d%% %d/%d", p.Phase, strings.Repeat("=", n), strings.Repeat(" ", width-n),
		done*100/p.Total, done, p.Total)
}

func progressPhase(line string) string {
	ph, _, _ := strings.Cut(line, " ")
	return ph
}

func (d *datasetCmds) validate() *cobra.Command {
	var req api.ValidateDatasetRequest
	cmd := &cobra.Command{
		Use:   "validate (DATASET | --source obs://BUCKET/DIR/) [--format auto] [--type TYPE] [--strict]",
		Short: "Validate a dataset's data as it is now, or any OBS prefix; creates nothing",
		Long: `Validate a dataset's source, or any OBS prefix you may list, without making a
version. Each finding names the object (and the line or JSON path in a text
file), the rule, what was found and how to fix it; a wrong tree shape is
drawn beside the expected one. Errors make the command fail; --strict turns
warnings into errors.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := ""
			if len(args) == 1 {
				ref = args[0]
			}
			if (ref == "") == (req.DataPath == "") {
				return usagef("give a DATASET or --source obs://BUCKET/DIR/, not both")
			}
			if err := localSource(req.DataPath); err != nil {
				return err
			}
			c, err := d.a.client()
			if err != nil {
				return err
			}
			out, err := c.ValidateDataset(cmd.Context(), ref, &req)
			if err != nil {
				return err
			}
			if err := d.a.show(out, func(w io.Writer) { validationDetail(w, out) }); err != nil {
				return err
			}
			if out.Errors > 0 {
				return errs.E("cli.dataset.validate", errs.Invalid, codeDatasetInvalid,
					fmt.Sprintf("%s has %s", out.DataPath, text.Count(out.Errors, "error")),
					errs.Hint("fix what the findings name and validate again"))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.DataPath, "source", "", "OBS dir to validate (instead of a dataset)")
	f.StringVar(&req.DataFormat, "format", "", "layout (default: the dataset's, or auto)")
	f.StringVar(&req.DatasetType, "type", "", "dataset type, with --source")
	f.BoolVar(&req.Strict, "strict", false, "warnings are errors")
	return cmd
}

func (d *datasetCmds) diff() *cobra.Command {
	return &cobra.Command{
		Use:   "diff DATASET FROM TO",
		Short: "Compare two versions: added, removed, changed (ETag), relabeled, per class",
		Args:  exactArgs("DATASET", "FROM", "TO"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := d.a.client()
			if err != nil {
				return err
			}
			diff, err := c.DiffDataset(cmd.Context(), args[0], args[1], args[2])
			if err != nil {
				return err
			}
			return d.a.show(diff, func(w io.Writer) { diffDetail(w, diff) })
		},
	}
}

func (d *datasetCmds) manifest() *cobra.Command {
	return &cobra.Command{
		Use:   "manifest DATASET VERSION",
		Short: "Print a version's ModelArts manifest (JSON Lines)",
		Args:  exactArgs("DATASET", "VERSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := d.a.client()
			if err != nil {
				return err
			}
			data, err := c.DatasetManifest(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if _, err := d.a.stdout.Write(data); err != nil {
				return errs.E("cli.dataset.manifest", errs.IO, fmt.Sprintf("cannot write output: %v", err))
			}
			return nil
		},
	}
}

func (d *datasetCmds) export() *cobra.Command {
	var req api.ExportDatasetRequest
	var version string
	cmd := &cobra.Command{
		Use:   "export DATASET --version VERSION --format coco|voc|yolo|imagefolder|manifest --to obs://BUCKET/DIR/",
		Short: "Write a version in another layout under an OBS dir",
		Long: `Write a published version in another layout under an OBS dir: the
annotation files (VOC XML, YOLO labels and data.yaml, COCO JSON, a manifest)
are generated and the images copied server-side, each only while it is as the
version recorded it. The result can be made a dataset again with
` + "`atelier dataset create --format F`" + `. Classification versions export as
imagefolder or manifest; detection versions as any layout.`,
		Args: exactArgs("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version == "" || req.Format == "" || req.To == "" {
				return usagef("--version, --format and --to are required")
			}
			c, err := d.a.client()
			if err != nil {
				return err
			}
			out, err := c.ExportDataset(cmd.Context(), args[0], version, &req)
			if err != nil {
				return err
			}
			return d.a.show(out, func(w io.Writer) {
				field(w, "Exported", fmt.Sprintf("%s of %s %s as %s to %s", text.Count(out.Samples, "sample"), args[0], version, out.Format, out.To))
				field(w, "Files", fmt.Sprintf("%d copied, %d written, %s", out.Copied, out.Written, text.Bytes(out.Bytes)))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&version, "version", "", "the version (id or name)")
	f.StringVar(&req.Format, "format", "", "imagefolder|voc|yolo|coco|manifest")
	f.StringVar(&req.To, "to", "", "OBS dir to write under")
	return cmd
}

func (d *datasetCmds) samples() *cobra.Command {
	var (
		unlabeled, labeledOnly, proposed bool
		after                            string
		limit                            int
	)
	cmd := &cobra.Command{
		Use:   "samples DATASET [--unlabeled | --labeled] [--proposed] [--after KEY] [--limit N]",
		Short: "List the samples of the current version with the draft's labels (the labeling queue)",
		Long: `List the samples of the dataset's current version, in key order, with the
draft's labels over the version's. --unlabeled is the labeling queue;
--proposed lists the samples an auto-labeling service proposed a label for.
A page holds --limit samples (at most 1000); --after KEY starts after it.`,
		Args: exactArgs("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if unlabeled && labeledOnly {
				return usagef("give --unlabeled or --labeled, not both")
			}
			f := client.SampleFilter{Proposed: proposed, After: after, Limit: limit}
			if unlabeled || labeledOnly {
				f.Labeled = &labeledOnly
			}
			c, err := d.a.client()
			if err != nil {
				return err
			}
			out, err := c.DatasetSamples(cmd.Context(), args[0], f)
			if err != nil {
				return err
			}
			return d.a.show(out, func(w io.Writer) {
				row(w, "SAMPLE", "KEY", "USAGE", "LABEL", "FROM", "PROPOSAL")
				for _, s := range out.Samples {
					prop := "-"
					if p := s.Proposal; p != nil {
						prop = fmt.Sprintf("%s (%.2f)", annotationText(p.DatasetAnnotations), p.Confidence)
					}
					row(w, s.SampleID, s.Key, orDash(s.Usage), annotationText(s.Annotations), orDash(s.LabelSource), prop)
				}
				if out.Next != "" {
					fmt.Fprintf(w, "(more: --after %s)\n", out.Next)
				}
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&unlabeled, "unlabeled", false, "only samples without a label")
	f.BoolVar(&labeledOnly, "labeled", false, "only labelled samples")
	f.BoolVar(&proposed, "proposed", false, "only samples with an auto-labeling proposal")
	f.StringVar(&after, "after", "", "start after this key")
	f.IntVar(&limit, "limit", 0, "samples per page (default and at most 1000)")
	return cmd
}

// annotationText is "cat,dog" or "cat[1,2,30,40] …".
func annotationText(a api.DatasetAnnotations) string {
	var parts []string
	parts = append(parts, a.Tags...)
	for _, b := range a.Boxes {
		parts = append(parts, fmt.Sprintf("%s[%g,%g,%g,%g]", b.Label, b.XMin, b.YMin, b.XMax, b.YMax))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func (d *datasetCmds) label() *cobra.Command {
	var (
		sample                string
		tags, boxes           []string
		clearIt, accept, deny bool
	)
	cmd := &cobra.Command{
		Use:   "label DATASET --sample SAMPLE (--tag NAME… | --box NAME:XMIN,YMIN,XMAX,YMAX… | --clear | --accept | --reject)",
		Short: "Label a sample in the draft, or accept or reject an auto-labeling proposal",
		Long: `Set a sample's label in the dataset's draft: --tag (repeatable) for
classification, --box NAME:XMIN,YMIN,XMAX,YMAX in pixels (repeatable) for
detection. --clear drops the draft's label (the version's applies again);
--accept and --reject decide an auto-labeling proposal. SAMPLE is the
sample id (` + "`atelier dataset samples`" + `) or its key. The next
` + "`atelier dataset version`" + ` publishes the draft's labels.`,
		Args: exactArgs("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			modes := 0
			for _, b := range []bool{len(tags)+len(boxes) > 0, clearIt, accept, deny} {
				if b {
					modes++
				}
			}
			if sample == "" || modes != 1 {
				return usagef("give --sample and one of --tag/--box, --clear, --accept or --reject")
			}
			c, err := d.a.client()
			if err != nil {
				return err
			}
			var out *api.DatasetSample
			switch {
			case clearIt:
				out, err = c.ClearAnnotations(cmd.Context(), args[0], sample)
			case accept || deny:
				out, err = c.DecideProposal(cmd.Context(), args[0], sample, accept)
			default:
				a := api.DatasetAnnotations{Tags: tags}
				for _, b := range boxes {
					box, err := parseBox(b)
					if err != nil {
						return err
					}
					a.Boxes = append(a.Boxes, box)
				}
				out, err = c.PutAnnotations(cmd.Context(), args[0], sample, &a)
			}
			if err != nil {
				return err
			}
			return d.a.show(out, func(w io.Writer) {
				field(w, "Sample", out.SampleID+" ("+out.Key+")")
				field(w, "Label", annotationText(out.Annotations)+" (from "+orDash(out.LabelSource)+")")
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&sample, "sample", "", "the sample (id or key)")
	f.StringArrayVar(&tags, "tag", nil, "a classification tag (repeatable)")
	f.StringArrayVar(&boxes, "box", nil, "a box NAME:XMIN,YMIN,XMAX,YMAX in pixels (repeatable)")
	f.BoolVar(&clearIt, "clear", false, "drop the draft's label and proposal")
	f.BoolVar(&accept, "accept", false, "accept the auto-labeling proposal")
	f.BoolVar(&deny, "reject", false, "reject the auto-labeling proposal")
	return cmd
}

// parseBox reads NAME:XMIN,YMIN,XMAX,YMAX.
func parseBox(s string) (api.DatasetBox, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return api.DatasetBox{}, usagef("--box %q: write NAME:XMIN,YMIN,XMAX,YMAX (pixels)", s)
	}
	parts := strings.Split(s[i+1:], ",")
	if len(parts) != 4 {
		return api.DatasetBox{}, usagef("--box %q: write NAME:XMIN,YMIN,XMAX,YMAX (pixels)", s)
	}
	var v [4]float64
	for j, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return api.DatasetBox{}, usagef("--box %q: %q is not a number", s, p)
		}
		v[j] = f
	}
	return api.DatasetBox{Label: s[:i], XMin: v[0], YMin: v[1], XMax: v[2], YMax: v[3]}, nil
}

func (d *datasetCmds) autolabel() *cobra.Command {
	var req api.AutolabelRequest
	var svc string
	cmd := &cobra.Command{
		Use:   "autolabel DATASET --service SERVICE [--threshold 0.9] [--limit N]",
		Short: "Send the unlabelled samples to a deployed service and keep its answers as proposals",
		Long: `Send each unlabelled sample of the current version to a deployed service
(SERVICE is its id or name), as you, the way ModelArts clients call it
(multipart, field "images"), and keep each answer whose confidence is at
least --threshold as a proposal. Proposals are not labels: accept or reject
each with ` + "`atelier dataset label DATASET --sample S --accept|--reject`" + `
(` + "`atelier dataset samples DATASET --proposed`" + ` lists them).`,
		Args: exactArgs("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if svc == "" {
				return usagef("--service is required")
			}
			c, err := d.a.client()
			if err != nil {
				return err
			}
			if req.ServiceID, err = (&serviceCmds{a: d.a}).resolve(cmd.Context(), c, svc); err != nil {
				return err
			}
			out, err := c.Autolabel(cmd.Context(), args[0], &req)
			if err != nil {
				return err
			}
			return d.a.show(out, func(w io.Writer) {
				field(w, "Sent", fmt.Sprint(out.Sent))
				field(w, "Proposed", fmt.Sprint(out.Proposed))
				field(w, "Below threshold", fmt.Sprint(out.BelowThresh))
				field(w, "Failed", fmt.Sprint(out.Failed))
				if out.FirstError != "" {
					field(w, "First error", oneLine(out.FirstError))
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&svc, "service", "", "the service (id or name)")
	f.Float64Var(&req.Threshold, "threshold", 0.9, "the least confidence kept as a proposal")
	f.IntVar(&req.Limit, "limit", 0, "samples to send (default and at most 10000)")
	return cmd
}

func (d *datasetCmds) preview() *cobra.Command {
	var (
		version, download string
		perClass          int
		classes           []string
	)
	cmd := &cobra.Command{
		Use:   "preview DATASET [--version V] [--per-class 4] [--class NAME…] [--download DIR]",
		Short: "Sample items of a version with short-lived thumbnail URLs (boxes drawn for detection)",
		Long: `Pick sample items of a version (the current one by default): the samples its
owner pinned (` + "`atelier dataset update --preview-samples`" + `), else --per-class
of each class (or of each --class). Each comes with its labels and a URL of
a server-made thumbnail that works for 15 minutes without credentials;
--download DIR saves the thumbnails there. Previews of a dataset whose
owner turned them off are refused.`,
		Args: exactArgs("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := d.a.client()
			if err != nil {
				return err
			}
			out, err := c.PreviewDataset(cmd.Context(), args[0], version, perClass, classes)
			if err != nil {
				return err
			}
			for i := range out.Samples {
				out.Samples[i].PreviewURL = c.Endpoint() + out.Samples[i].PreviewURL
			}
			if download != "" {
				if err := os.MkdirAll(download, 0o755); err != nil {
					return errs.E("cli.dataset.preview", errs.IO, "cannot create "+download, err)
				}
				for _, smp := range out.Samples {
					jpg, err := c.Thumbnail(cmd.Context(), strings.TrimPrefix(smp.PreviewURL, c.Endpoint()))
					if err != nil {
						return err
					}
					name := strings.NewReplacer("/", "_", "\\", "_").Replace(smp.Key) + ".jpg"
					if err := os.WriteFile(filepath.Join(download, name), jpg, 0o644); err != nil {
						return errs.E("cli.dataset.preview", errs.IO, "cannot write "+name, err)
					}
				}
				d.a.note("saved %s in %s", text.Count(len(out.Samples), "thumbnail"), download)
			}
			return d.a.show(out, func(w io.Writer) {
				row(w, "KEY", "LABEL", "PREVIEW (15 min)")
				for _, smp := range out.Samples {
					row(w, smp.Key, annotationText(smp.Annotations), smp.PreviewURL)
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&version, "version", "", "the version (default: the current one)")
	f.IntVar(&perClass, "per-class", 4, "samples of each class")
	f.StringArrayVar(&classes, "class", nil, "only this class (repeatable)")
	f.StringVar(&download, "download", "", "save the thumbnails in this dir")
	return cmd
}

func (d *datasetCmds) update() *cobra.Command {
	var (
		previews, samples, description string
	)
	cmd := &cobra.Command{
		Use:   "update DATASET [--previews on|off] [--preview-samples KEY,…] [--description TEXT]",
		Short: "Turn previews on or off, pick the preview samples, change the description",
		Args:  exactArgs("DATASET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req api.UpdateDatasetRequest
			changed := cmd.Flags().Changed
			if changed("previews") {
				switch previews {
				case "on":
					off := false
					req.PreviewsDisabled = &off
				case "off":
					off := true
					req.PreviewsDisabled = &off
				default:
					return usagef("--previews is on or off, not %q", previews)
				}
			}
			if changed("preview-samples") {
				keys := []string{}
				for _, k := range strings.Split(samples, ",") {
					if k = strings.TrimSpace(k); k != "" {
						keys = append(keys, k)
					}
				}
				req.PreviewSamples = &keys
			}
			if changed("description") {
				req.Description = &description
			}
			if req == (api.UpdateDatasetRequest{}) {
				return usagef("give --previews, --preview-samples or --description")
			}
			c, err := d.a.client()
			if err != nil {
				return err
			}
			ds, err := c.UpdateDataset(cmd.Context(), args[0], &req)
			if err != nil {
				return err
			}
			return d.a.show(ds, func(w io.Writer) { datasetDetail(w, ds) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&previews, "previews", "", "on or off")
	f.StringVar(&samples, "preview-samples", "", "comma-separated sample keys shown in previews (empty: let the server pick)")
	f.StringVar(&description, "description", "", "description")
	return cmd
}

func datasetTable(w io.Writer, items []api.Dataset) {
	row(w, "ID", "NAME", "TYPE", "FORMAT", "SOURCE", "VERSIONS", "LATEST", "CREATED")
	for _, d := range items {
		latest := "-"
		if v := d.LatestVersion; v != nil {
			latest = v.VersionName + " (" + v.Status + ")"
		}
		row(w, d.DatasetID, d.DatasetName, d.DatasetType, orDash(d.DataFormat), sourceOf(&d), fmt.Sprint(d.VersionCount), latest, timeMs(d.CreateTime))
	}
}

func sourceOf(d *api.Dataset) string {
	if len(d.DataSources) == 0 {
		return "-"
	}
	return d.DataSources[0].DataPath
}

func datasetDetail(w io.Writer, d *api.Dataset) {
	field(w, "ID", d.DatasetID)
	field(w, "Name", d.DatasetName)
	field(w, "Type", d.DatasetType)
	field(w, "Source", sourceOf(d))
	format := orDash(d.DataFormat)
	if det := d.Detection; det != nil {
		format += fmt.Sprintf(" (detected, %.0f%% sure)", det.Confidence*100)
	}
	field(w, "Format", format)
	if det := d.Detection; det != nil {
		for _, r := range det.Reasons {
			field(w, "  because", oneLine(r))
		}
	}
	if d.WorkPath != "" {
		field(w, "Output", d.WorkPath)
	}
	if d.Description != "" {
		field(w, "Description", oneLine(d.Description))
	}
	if d.PreviewsDisabled {
		field(w, "Previews", "off")
	}
	if len(d.PreviewSamples) > 0 {
		field(w, "Preview samples", strings.Join(d.PreviewSamples, ", "))
	}
	field(w, "Created", timeMs(d.CreateTime))
	if dr := d.Draft; dr != nil {
		field(w, "Draft", fmt.Sprintf("%s, %s (the next version publishes the labels)",
			text.Count(dr.Labels, "label"), text.Count(dr.Proposals, "proposal")))
	}
	field(w, "Versions", fmt.Sprint(d.VersionCount))
	for _, v := range d.Versions {
		field(w, "  "+v.VersionName, fmt.Sprintf("%s, %s (%d labeled), %s, %s", v.Status,
			text.Count(v.TotalSampleCount, "sample"), v.AnnotatedSampleCount, text.Count(len(v.Classes), "class"), timeMs(v.CreateTime)))
	}
}

func versionDetail(w io.Writer, v *api.DatasetVersion) {
	field(w, "Version", v.VersionName+" ("+v.VersionID+")")
	field(w, "Status", v.Status)
	if v.FailureMessage != "" {
		field(w, "Failure", oneLine(v.FailureMessage))
	}
	if p := v.Progress; p != nil && v.Status == api.DatasetVersionCreating {
		field(w, "Progress", progressLine(p))
	}
	if v.ParentVersionID != "" {
		field(w, "Parent", v.ParentVersionID)
	}
	if v.Split != "" {
		field(w, "Split", v.Split)
	}
	if v.SplitPattern != "" {
		field(w, "Split pattern", v.SplitPattern)
	}
	if v.ManifestPath != "" {
		field(w, "Manifest", v.ManifestPath)
	}
	if v.OutputManifestPath != "" {
		field(w, "Output manifest", v.OutputManifestPath)
	}
	if v.Status != api.DatasetVersionCreating && v.Status != api.DatasetVersionFailed {
		field(w, "Samples", fmt.Sprintf("%d (%d labeled), %s, %s", v.TotalSampleCount, v.AnnotatedSampleCount,
			text.Count(v.ObjectCount, "object"), text.Bytes(v.Bytes)))
		if v.PinnedObjects > 0 {
			field(w, "Pinned", fmt.Sprintf("%s by version id, %s", text.Count(v.PinnedObjects, "object"), heldText(v)))
		}
		field(w, "Classes", strings.Join(v.Classes, ", "))
		for _, c := range v.Classes {
			field(w, "  "+c, fmt.Sprint(v.PerClass[c]))
		}
		usages := make([]string, 0, len(v.PerUsage))
		for _, u := range slices.Sorted(maps.Keys(v.PerUsage)) {
			usages = append(usages, fmt.Sprintf("%s %d", orDash(u), v.PerUsage[u]))
		}
		field(w, "Usage", strings.Join(usages, ", "))
		histogram(w, "Image sizes", v.SizeHistogram)
		histogram(w, "Boxes per image", v.BoxHistogram)
	}
	field(w, "Findings", fmt.Sprintf("%s, %s", text.Count(v.Errors, "error"), text.Count(v.Warnings, "warning")))
	for _, f := range v.Findings {
		findingLines(w, f)
	}
	if len(v.Changes) > 0 {
		field(w, "Changed", fmt.Sprintf("%s changed or disappeared since the version was made:", text.Count(len(v.Changes), "object")))
		for _, c := range v.Changes {
			what := c.Object
			if c.VersionID != "" {
				what += " (version " + c.VersionID + ")"
			}
			field(w, "  "+c.Change, what)
		}
	}
	field(w, "Created", timeMs(v.CreateTime))
}

func histogram(w io.Writer, name string, h []api.DatasetHistogramBucket) {
	if len(h) == 0 {
		return
	}
	most := 0
	for _, b := range h {
		most = max(most, b.Count)
	}
	field(w, name, "")
	for _, b := range h {
		bar := ""
		if most > 0 {
			bar = strings.Repeat("#", (b.Count*30+most-1)/most)
		}
		field(w, "  "+b.Label, fmt.Sprintf("%d %s", b.Count, bar))
	}
}

func findingLines(w io.Writer, f api.DatasetFinding) {
	where := f.Object
	switch {
	case f.Line > 0:
		where += fmt.Sprintf(":%d", f.Line)
	case f.Path != "":
		where += " " + f.Path
	}
	msg := oneLine(f.Message)
	if where != "" {
		msg = where + ": " + msg
	}
	field(w, "  "+f.Severity+" "+f.Rule, msg)
	if f.Hint != "" {
		field(w, "    fix", oneLine(f.Hint))
	}
	for _, l := range strings.Split(strings.TrimRight(f.Layout, "\n"), "\n") {
		if l != "" {
			field(w, "    ", l)
		}
	}
}

func validationDetail(w io.Writer, v *api.DatasetValidation) {
	field(w, "Source", v.DataPath)
	format := v.DataFormat
	if det := v.Detection; det != nil {
		format += fmt.Sprintf(" (detected, %.0f%% sure)", det.Confidence*100)
	}
	field(w, "Format", format)
	if det := v.Detection; det != nil {
		for _, r := range det.Reasons {
			field(w, "  because", oneLine(r))
		}
	}
	field(w, "Samples", fmt.Sprint(v.Samples))
	field(w, "Classes", strings.Join(v.Classes, ", "))
	field(w, "Findings", fmt.Sprintf("%s, %s", text.Count(v.Errors, "error"), text.Count(v.Warnings, "warning")))
	for _, f := range v.Findings {
		findingLines(w, f)
	}
}

func diffDetail(w io.Writer, d *api.DatasetDiff) {
	field(w, "From", d.From)
	field(w, "To", d.To)
	field(w, "Added", fmt.Sprint(d.Added))
	field(w, "Removed", fmt.Sprint(d.Removed))
	field(w, "Changed", fmt.Sprint(d.Changed))
	field(w, "Relabeled", fmt.Sprint(d.Relabeled))
	classes := make([]string, 0, len(d.PerClass))
	for c := range d.PerClass {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	for _, c := range classes {
		cd := d.PerClass[c]
		field(w, "  "+c, fmt.Sprintf("%d → %d (+%d −%d)", cd.Before, cd.After, cd.Added, cd.Removed))
	}
	for _, c := range d.Changes {
		detail := ""
		if c.Change == "relabeled" {
			detail = fmt.Sprintf(" (%s → %s)", strings.Join(c.Before, ","), strings.Join(c.After, ","))
		}
		field(w, "  "+c.Change, c.Object+detail)
	}
	if d.Truncated {
		field(w, "  …", "more changes not shown (-o json has the first ones)")
	}
}

// heldText says what lifecycle rules may do to a version's pinned objects.
func heldText(v *api.DatasetVersion) string {
	switch {
	case v.HeldObjects >= v.PinnedObjects:
		return "kept from lifecycle expiry"
	case v.HeldObjects == 0:
		return "not kept from lifecycle expiry"
	}
	return fmt.Sprintf("%d kept from lifecycle expiry", v.HeldObjects)
}
