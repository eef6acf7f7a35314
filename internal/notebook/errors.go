package notebook

import "github.com/atelier-dev/atelier/internal/errs"

// Error codes of notebooks (ATL.NB.0001–0049; the proxy's are 0100–0149).
const (
	CodeNotFound    errs.Code = "ATL.NB.0001" // no notebook has the id or name (or the caller may not see it)
	CodeInvalid     errs.Code = "ATL.NB.0002" // a field of the request is invalid
	CodeDuplicate   errs.Code = "ATL.NB.0003" // the caller already has a notebook with the name
	CodeQuota       errs.Code = "ATL.NB.0004" // notebooks_per_user reached
	CodeState       errs.Code = "ATL.NB.0005" // the operation does not fit the notebook's status
	CodeFlavor      errs.Code = "ATL.NB.0006" // unknown flavor, or one the machine can never hold
	CodeEngine      errs.Code = "ATL.NB.0007" // unknown engine
	CodeRunnerToken errs.Code = "ATL.NB.0008" // a runner call whose token is not the notebook's current runner's
	CodeSandbox     errs.Code = "ATL.NB.0009" // the configured sandbox cannot run here
	CodeReport      errs.Code = "ATL.NB.0010" // a runner report that is not valid

	// Snapshots of a work dir (job create --from-notebook).
	CodeSnapshotTooLarge errs.Code = "ATL.NB.0011" // the work dir is over the code dir limits
	CodeUnfreezable      errs.Code = "ATL.NB.0012" // venv packages that cannot be reinstalled from an index
	CodeIgnoreSyntax     errs.Code = "ATL.NB.0013" // a bad .atelierignore
	CodeVolumeRead       errs.Code = "ATL.NB.0014" // the work dir cannot be read (not made yet, image not mountable, I/O)
	CodeSnapshotOwner    errs.Code = "ATL.NB.0015" // only the owner may snapshot a notebook
	CodeSnapshotBootFile errs.Code = "ATL.NB.0016" // the boot file asked for is not in the snapshot
)
