package dataset

import "github.com/atelier-dev/atelier/internal/errs"

// Error codes of datasets (ATL.DS.0001–0099).
const (
	CodeNotFound        errs.Code = "ATL.DS.0001" // no dataset has the id or name (or the caller may not see it)
	CodeInvalidRequest  errs.Code = "ATL.DS.0002" // a field of the request is invalid
	CodeDuplicate       errs.Code = "ATL.DS.0003" // the caller already has a dataset with the name
	CodeSource          errs.Code = "ATL.DS.0004" // the source prefix cannot be read (no bucket, access denied)
	CodeSourceEmpty     errs.Code = "ATL.DS.0005" // the source prefix holds no objects
	CodeVersionNotFound errs.Code = "ATL.DS.0006" // the dataset has no version with the id or name
	CodeVersionExists   errs.Code = "ATL.DS.0007" // the dataset already has a version with the name
	CodeInvalidData     errs.Code = "ATL.DS.0008" // validation found errors (every finding listed)
	CodeNotPublished    errs.Code = "ATL.DS.0009" // the version is not published (creating, failed, degraded)
	CodeChanged         errs.Code = "ATL.DS.0010" // objects the version references changed or disappeared
	CodeTooLarge        errs.Code = "ATL.DS.0011" // the source holds more objects than a version may
	CodeManifest        errs.Code = "ATL.DS.0012" // the version's manifest cannot be read or written
	CodeBusy            errs.Code = "ATL.DS.0013" // the version is still being created
	CodeSampleNotFound  errs.Code = "ATL.DS.0014" // the current version has no sample with the id or key
	CodeNoProposal      errs.Code = "ATL.DS.0015" // the sample has no auto-labeling proposal to accept or reject
	CodeAutolabel       errs.Code = "ATL.DS.0016" // the auto-labeling service cannot be called
	CodePreviewsOff     errs.Code = "ATL.DS.0017" // the dataset's previews are turned off
	CodePreviewToken    errs.Code = "ATL.DS.0018" // the preview URL is expired or not valid
	CodePreview         errs.Code = "ATL.DS.0019" // no thumbnail can be made of the image
)
