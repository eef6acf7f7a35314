package api

import "encoding/json"

// Dataset states of a version.
const (
	DatasetVersionCreating  = "creating"
	DatasetVersionPublished = "published"
	DatasetVersionDegraded  = "degraded"
	DatasetVersionFailed    = "failed"
	// DatasetDraft is the state of a dataset's draft: labels that the
	// next version publishes.
	DatasetDraftStatus = "draft"
)

// NumberOrString is a string field that ModelArts clients send as a
// number (dataset_type 0, data_type 0): a JSON number is taken as its
// decimal text.
type NumberOrString string

// UnmarshalJSON accepts a JSON string or number.
func (n *NumberOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' {
		var num json.Number
		if err := json.Unmarshal(b, &num); err != nil {
			return err
		}
		*n = NumberOrString(num.String())
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*n = NumberOrString(s)
	return nil
}

// DatasetSource is where a dataset's files live (ModelArts data_sources:
// data_type "OBS" or 0, data_path the prefix).
type DatasetSource struct {
	DataType NumberOrString `json:"data_type,omitempty"`
	DataPath string         `json:"data_path"`
}

// Dataset is a dataset: an OBS prefix of files in a layout, with versions.
type Dataset struct {
	DatasetID   string          `json:"dataset_id"`
	DatasetName string          `json:"dataset_name"`
	DatasetType string          `json:"dataset_type"`
	Description string          `json:"description,omitempty"`
	DataSources []DatasetSource `json:"data_sources"`
	// DataFormat is the layout (imagefolder, voc, …); Detection says how
	// it was found when the request asked for "auto".
	DataFormat string            `json:"data_format"`
	Detection  *DatasetDetection `json:"detection,omitempty"`
	// WorkPath is where versions also write Name-Version.manifest for
	// ModelArts tools ("" for none).
	WorkPath string `json:"work_path,omitempty"`
	// PreviewsDisabled turns previews off (sensitive data);
	// PreviewSamples are the sample keys the owner picked for them.
	PreviewsDisabled bool     `json:"previews_disabled,omitempty"`
	PreviewSamples   []string `json:"preview_samples,omitempty"`
	Owner            string   `json:"owner,omitempty"`
	CreateTime       int64    `json:"create_time"`
	// VersionCount and LatestVersion summarise the versions.
	VersionCount  int              `json:"version_count"`
	LatestVersion *DatasetVersion  `json:"latest_version,omitempty"`
	Versions      []DatasetVersion `json:"versions,omitempty"`
	// Draft is the labels waiting for the next version (state "draft").
	Draft *DatasetDraft `json:"draft,omitempty"`
}

// DatasetDraft sums up a dataset's draft: the samples a person labelled
// and those with an auto-labeling proposal, which the next version
// publishes (the people's labels) or leaves (the proposals).
type DatasetDraft struct {
	Status    string `json:"status"` // "draft"
	Labels    int    `json:"labels"`
	Proposals int    `json:"proposals"`
}

// DatasetDetection is how sure --format auto is, and why.
type DatasetDetection struct {
	Format     string   `json:"format"`
	Confidence float64  `json:"confidence"`
	Reasons    []string `json:"reasons"`
}

// CreateDatasetRequest is the body of POST /api/v1/datasets.
type CreateDatasetRequest struct {
	DatasetName      string          `json:"dataset_name"`
	DatasetType      NumberOrString  `json:"dataset_type"`
	Description      string          `json:"description,omitempty"`
	DataSources      []DatasetSource `json:"data_sources"`
	DataFormat       string          `json:"data_format,omitempty"`
	WorkPath         string          `json:"work_path,omitempty"`
	PreviewsDisabled bool            `json:"previews_disabled,omitempty"`
}

// CreateDatasetVersionRequest is the body of POST
// /api/v1/datasets/{id}/versions.
type CreateDatasetVersionRequest struct {
	VersionName     string `json:"version_name,omitempty"`
	Description     string `json:"description,omitempty"`
	ParentVersionID string `json:"parent_version_id,omitempty"`
	// Split is "train=0.8,seed=1"; SplitPattern "train/**=TRAIN,…".
	Split        string `json:"split,omitempty"`
	SplitPattern string `json:"split_pattern,omitempty"`
	// Strict turns warnings into errors.
	Strict bool `json:"strict,omitempty"`
	// Output is an OBS dir that also receives Name-Version.manifest
	// (default the dataset's work path).
	Output string `json:"output,omitempty"`
}

// DatasetFinding is one thing validation found.
type DatasetFinding struct {
	Severity string `json:"severity"`
	Rule     string `json:"rule"`
	Object   string `json:"object,omitempty"`
	Line     int    `json:"line,omitempty"`
	Path     string `json:"path,omitempty"`
	Message  string `json:"message"`
	Hint     string `json:"hint,omitempty"`
	Layout   string `json:"layout,omitempty"`
}

// DatasetProgress is how far a version's creation is.
type DatasetProgress struct {
	Phase string `json:"phase"`
	Done  int    `json:"done"`
	Total int    `json:"total"`
}

// DatasetHistogramBucket is one bar of a histogram.
type DatasetHistogramBucket struct {
	Label string `json:"label"`
	Count int    `json:"count"`
}

// DatasetObjectChange is an object a version references that changed or
// disappeared since the version was made.
type DatasetObjectChange struct {
	Object string `json:"object"`
	Change string `json:"change"` // changed | deleted
	ETag   string `json:"etag"`
	// VersionID is the object version the version pinned, when it
	// pinned one (a versioned bucket): that version is what changed or
	// was deleted for good.
	VersionID string `json:"version_id,omitempty"`
	ETagNow   string `json:"etag_now,omitempty"`
	SizeNow   int64  `json:"size_now,omitempty"`
	CheckTime int64  `json:"check_time,omitempty"`
}

// DatasetVersion is a version of a dataset: a manifest over objects
// referenced in place.
type DatasetVersion struct {
	VersionID       string `json:"version_id"`
	VersionName     string `json:"version_name"`
	DatasetID       string `json:"dataset_id"`
	Description     string `json:"description,omitempty"`
	Status          string `json:"status"`
	ParentVersionID string `json:"parent_version_id,omitempty"`
	Split           string `json:"split,omitempty"`
	SplitPattern    string `json:"split_pattern,omitempty"`
	Strict          bool   `json:"strict,omitempty"`
	DataFormat      string `json:"data_format,omitempty"`
	// ManifestPath is the authoritative manifest (in atelier-system);
	// OutputManifestPath the copy under the dataset's work path.
	ManifestPath       string `json:"manifest_path,omitempty"`
	ManifestSHA256     string `json:"manifest_sha256,omitempty"`
	OutputManifestPath string `json:"output_manifest_path,omitempty"`

	TotalSampleCount     int `json:"total_sample_count"`
	AnnotatedSampleCount int `json:"annotated_sample_count"`
	ObjectCount          int `json:"object_count"`
	// PinnedObjects is how many of the objects the manifest pins by
	// version id (those of a versioned bucket): overwriting or deleting
	// their keys does not change the version.
	PinnedObjects int `json:"pinned_objects,omitempty"`
	// HeldObjects is how many pinned object versions lifecycle rules
	// keep while the version exists: every one in a bucket of the
	// dataset's owner, none in another user's bucket.
	HeldObjects   int                      `json:"held_objects,omitempty"`
	Bytes         int64                    `json:"bytes"`
	Classes       []string                 `json:"classes,omitempty"`
	PerClass      map[string]int           `json:"per_class,omitempty"`
	PerUsage      map[string]int           `json:"per_usage,omitempty"`
	SizeHistogram []DatasetHistogramBucket `json:"size_histogram,omitempty"`
	BoxHistogram  []DatasetHistogramBucket `json:"box_histogram,omitempty"`
	Errors        int                      `json:"errors"`
	Warnings      int                      `json:"warnings"`
	Findings      []DatasetFinding         `json:"findings,omitempty"`
	Progress      *DatasetProgress         `json:"progress,omitempty"`
	// Changes are the referenced objects that changed (status degraded).
	Changes        []DatasetObjectChange `json:"changes,omitempty"`
	CheckTime      int64                 `json:"check_time,omitempty"`
	FailureMessage string                `json:"failure_message,omitempty"`
	CreateTime     int64                 `json:"create_time"`
	PublishTime    int64                 `json:"publish_time,omitempty"`
	// Attempts counts how often creation started (a restart resumes it).
	Attempts int `json:"attempts,omitempty"`
	// DraftLabels is how many samples took their label from the draft.
	DraftLabels int `json:"draft_labels,omitempty"`
	// CreatedBy is the user who asked for the version; an explicit output
	// manifest is written as that user.
	CreatedBy   string `json:"created_by,omitempty"`
	CreatedByID string `json:"created_by_id,omitempty"`
}

// ValidateDatasetRequest is the body of POST /api/v1/datasets/validate and
// /api/v1/datasets/{id}/validate (Source and Format come from the dataset
// then).
type ValidateDatasetRequest struct {
	DatasetType string `json:"dataset_type,omitempty"`
	DataPath    string `json:"data_path,omitempty"`
	DataFormat  string `json:"data_format,omitempty"`
	Strict      bool   `json:"strict,omitempty"`
}

// DatasetValidation is what validation found.
type DatasetValidation struct {
	DataPath    string            `json:"data_path"`
	DataFormat  string            `json:"data_format"`
	Detection   *DatasetDetection `json:"detection,omitempty"`
	Samples     int               `json:"samples"`
	Classes     []string          `json:"classes,omitempty"`
	Errors      int               `json:"errors"`
	Warnings    int               `json:"warnings"`
	Findings    []DatasetFinding  `json:"findings"`
	ElapsedMsec int64             `json:"elapsed_msec"`
}

// DatasetDiff compares two versions.
type DatasetDiff struct {
	From      string                      `json:"from"`
	To        string                      `json:"to"`
	Added     int                         `json:"added"`
	Removed   int                         `json:"removed"`
	Changed   int                         `json:"changed"`
	Relabeled int                         `json:"relabeled"`
	PerClass  map[string]DatasetClassDiff `json:"per_class,omitempty"`
	Changes   []DatasetSampleChange       `json:"changes,omitempty"`
	Truncated bool                        `json:"truncated,omitempty"`
}

// DatasetClassDiff is one class's counts in a diff.
type DatasetClassDiff struct {
	Before  int `json:"before"`
	After   int `json:"after"`
	Added   int `json:"added"`
	Removed int `json:"removed"`
}

// DatasetSampleChange is one sample that differs between two versions.
type DatasetSampleChange struct {
	Object string   `json:"object"`
	Change string   `json:"change"` // added | removed | changed | relabeled
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// ExportDatasetRequest is the body of POST
// /api/v1/datasets/{id}/versions/{version}/export.
type ExportDatasetRequest struct {
	// Format is imagefolder, voc, yolo, coco or manifest.
	Format string `json:"format"`
	// To is the OBS dir the export is written under.
	To string `json:"to"`
}

// DatasetExport is what an export wrote.
type DatasetExport struct {
	Format  string `json:"format"`
	To      string `json:"to"`
	Samples int    `json:"samples"`
	// Copied objects (images, server-side) and Written generated files
	// (annotations, the manifest, data.yaml).
	Copied      int   `json:"copied"`
	Written     int   `json:"written"`
	Bytes       int64 `json:"bytes"`
	ElapsedMsec int64 `json:"elapsed_msec"`
}

// DatasetBox is a labelled box in pixels.
type DatasetBox struct {
	Label string  `json:"label"`
	XMin  float64 `json:"xmin"`
	YMin  float64 `json:"ymin"`
	XMax  float64 `json:"xmax"`
	YMax  float64 `json:"ymax"`
}

// DatasetAnnotations are a sample's labels: classification tags or boxes.
type DatasetAnnotations struct {
	Tags  []string     `json:"tags,omitempty"`
	Boxes []DatasetBox `json:"boxes,omitempty"`
}

// DatasetProposal is what an auto-labeling service answered for a sample,
// waiting for a person to accept or reject it.
type DatasetProposal struct {
	DatasetAnnotations
	Confidence float64 `json:"confidence"`
	ServiceID  string  `json:"service_id"`
	CreateTime int64   `json:"create_time"`
}

// DatasetSample is a sample of a dataset as labeling sees it: the current
// version's sample with the draft's label over it.
type DatasetSample struct {
	SampleID string `json:"sample_id"`
	Key      string `json:"key"`
	Source   string `json:"source"`
	Usage    string `json:"usage,omitempty"`
	// Annotations are the draft's label when a person set one, else the
	// version's; LabelSource says which ("draft", "version", "" for none).
	Annotations DatasetAnnotations `json:"annotations"`
	Labeled     bool               `json:"labeled"`
	LabelSource string             `json:"label_source,omitempty"`
	LabeledBy   string             `json:"labeled_by,omitempty"`
	Proposal    *DatasetProposal   `json:"proposal,omitempty"`
	PreviewURL  string             `json:"preview_url,omitempty"`
}

// DatasetSamples is a page of samples.
type DatasetSamples struct {
	VersionID string          `json:"version_id"`
	Samples   []DatasetSample `json:"samples"`
	// Next is the after= of the next page ("" at the end).
	Next string `json:"next,omitempty"`
}

// ProposalDecision is the body of POST
// /api/v1/datasets/{id}/samples/{sample}/proposal.
type ProposalDecision struct {
	Accept bool `json:"accept"`
}

// AutolabelRequest is the body of POST /api/v1/datasets/{id}/autolabel.
type AutolabelRequest struct {
	ServiceID string  `json:"service_id"`
	Threshold float64 `json:"threshold,omitempty"`
	// Limit bounds the samples sent (default and at most 10,000).
	Limit int `json:"limit,omitempty"`
}

// AutolabelResult is what an auto-labeling pass did.
type AutolabelResult struct {
	Sent        int    `json:"sent"`
	Proposed    int    `json:"proposed"`
	BelowThresh int    `json:"below_threshold"`
	Failed      int    `json:"failed"`
	FirstError  string `json:"first_error,omitempty"`
	ElapsedMsec int64  `json:"elapsed_msec"`
}

// UpdateDatasetRequest is the body of PATCH /api/v1/datasets/{id}: the
// fields set are changed.
type UpdateDatasetRequest struct {
	Description      *string `json:"description,omitempty"`
	PreviewsDisabled *bool   `json:"previews_disabled,omitempty"`
	// PreviewSamples are the keys the owner picked for previews ([]: let
	// the server pick).
	PreviewSamples *[]string `json:"preview_samples,omitempty"`
}

// DatasetPreview is a page of preview samples: each with its labels and
// a short-lived URL of its thumbnail (boxes drawn for detection).
type DatasetPreview struct {
	VersionID   string          `json:"version_id"`
	VersionName string          `json:"version_name"`
	ExpiresAt   int64           `json:"expires_at"`
	Samples     []DatasetSample `json:"samples"`
}

// DatasetSampleFilter selects samples of GET /api/v1/datasets/{id}/samples
// (query parameters of the same names).
type DatasetSampleFilter struct {
	// Version is a version's id or name: its samples with its own labels
	// ("": the current version with the draft's labels and proposals).
	Version string
	// Labeled nil: every sample; false: the unlabelled ones (the labeling
	// queue); true: the labelled ones.
	Labeled *bool
	// Proposed keeps only samples with an auto-labeling proposal.
	Proposed bool
	// Class keeps only samples with that tag or a box of that label.
	Class string
	// After (a key) and Limit page.
	After string
	Limit int
}

// DatasetSampleObject is the object a sample's image route streams.
type DatasetSampleObject struct {
	Key  string
	Size int64
	ETag string
}
