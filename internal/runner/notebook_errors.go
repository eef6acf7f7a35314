package runner

import "github.com/atelier-dev/atelier/internal/errs"

// Error codes of the runner of notebooks (ATL.RUN.0150–0199). A bad command
// line, the token file, the log and final.json keep the codes of the job
// runner (CodeUsage, CodeToken, CodeLogBuffer, CodeFinal).
const (
	CodeNotebookFetch       errs.Code = "ATL.RUN.0150" // the notebook cannot be fetched from the server
	CodeNotebookTree        errs.Code = "ATL.RUN.0151" // the notebook's directories or files cannot be created
	CodeNotebookVolume      errs.Code = "ATL.RUN.0152" // the notebook's volume cannot be made, grown or mounted
	CodeNotebookEnv         errs.Code = "ATL.RUN.0153" // the notebook's virtual environment cannot be made
	CodeJupyter             errs.Code = "ATL.RUN.0154" // Jupyter cannot be started
	CodeNotebookCredentials errs.Code = "ATL.RUN.0155" // the notebook's credentials files cannot be written
)
