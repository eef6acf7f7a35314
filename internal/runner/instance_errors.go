package runner

import "github.com/atelier-dev/atelier/internal/errs"

// Error codes of the runner of service instances (ATL.RUN.0100–0149). A
// bad command line, the token file, pip and the log buffer keep the codes of
// the job runner (CodeUsage, CodeToken, CodeInstall…, CodeLogBuffer).
const (
	CodeInstanceFetch errs.Code = "ATL.RUN.0100" // the instance cannot be fetched from the server
	CodeInstanceTree  errs.Code = "ATL.RUN.0101" // the instance's directories or files cannot be created
	CodeModelLocation errs.Code = "ATL.RUN.0102" // the model version's location is not an obs:// URL
	CodeModelEmpty    errs.Code = "ATL.RUN.0103" // there is no file at the model version's location
	CodeModelDownload errs.Code = "ATL.RUN.0104" // the model version cannot be downloaded
	CodeConfigJSON    errs.Code = "ATL.RUN.0105" // the model's config.json cannot be read or is malformed
	CodeDependency    errs.Code = "ATL.RUN.0106" // a dependency of config.json cannot be given to pip as it is
	CodeModelServer   errs.Code = "ATL.RUN.0107" // the model server cannot be started
	CodeReadyFile     errs.Code = "ATL.RUN.0108" // the model server's ready file is malformed
)
