package runner

import "github.com/atelier-dev/atelier/internal/errs"

// Error codes of the runner (ATL.RUN.0001–0099).
const (
	CodeUsage         errs.Code = "ATL.RUN.0001" // bad command line of `atelier runner`
	CodeToken         errs.Code = "ATL.RUN.0002" // the token file cannot be read
	CodeFetch         errs.Code = "ATL.RUN.0003" // the job cannot be fetched from the server
	CodeBadName       errs.Code = "ATL.RUN.0005" // a job id or channel name cannot name a directory, or is given twice
	CodeBadLocation   errs.Code = "ATL.RUN.0006" // code_dir or a channel is no obs:// URL (or a dataset, not supported yet)
	CodeNoProgram     errs.Code = "ATL.RUN.0007" // neither boot file nor command, or an engine without interpreter
	CodeBadSandbox    errs.Code = "ATL.RUN.0008" // the server asked for an unknown sandbox mode
	CodeList          errs.Code = "ATL.RUN.0010" // an input or the code dir cannot be listed or read in OBS
	CodeNothing       errs.Code = "ATL.RUN.0011" // there is no object at or under an input's OBS location
	CodeDownload      errs.Code = "ATL.RUN.0012" // downloading inputs or code failed
	CodeUnsafeArchive errs.Code = "ATL.RUN.0013" // the code archive has an entry that would escape the code dir
	CodeBadArchive    errs.Code = "ATL.RUN.0014" // the code archive is not a tar stream, breaks off or is too large
	CodeNoBootFile    errs.Code = "ATL.RUN.0015" // the boot file is not in the code dir
	CodeJobTree       errs.Code = "ATL.RUN.0016" // the job's directories or files cannot be created
	CodeCacheLink     errs.Code = "ATL.RUN.0017" // a cached object cannot be linked or copied into the job
	CodeInstallIO     errs.Code = "ATL.RUN.0020" // requirements.txt or the environment dir cannot be read or written
	CodeInstall       errs.Code = "ATL.RUN.0021" // creating the virtual environment or pip install failed
	CodeInstallLock   errs.Code = "ATL.RUN.0022" // the environment's lock file cannot be taken
	CodeStart         errs.Code = "ATL.RUN.0023" // user code cannot be started
	CodeNoCgroup      errs.Code = "ATL.RUN.0024" // no cgroup for a sandboxed workload: it is not started without limits
	CodeUserFile      errs.Code = "ATL.RUN.0025" // a file user code made is refused (a symlink, not a regular file, another mount)
	CodeSync          errs.Code = "ATL.RUN.0030" // the outputs cannot be synced to OBS
	CodeRestore       errs.Code = "ATL.RUN.0031" // the outputs cannot be restored from OBS for a retry
	CodeLogBuffer     errs.Code = "ATL.RUN.0040" // the log buffer or job.log cannot be written
	CodeFinal         errs.Code = "ATL.RUN.0050" // final.json cannot be written
	CodeMetricLine    errs.Code = "ATL.RUN.0060" // a line of the metrics file is malformed
	CodeNvidiaSMI     errs.Code = "ATL.RUN.0061" // nvidia-smi failed or printed something unexpected
)
