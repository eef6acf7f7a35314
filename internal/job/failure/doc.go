// Package failure explains why a job attempt ended.
//
// Classify is a pure function from Facts — what the runner observed: the
// exit code or signal, whether the cgroup OOM-killed the process, the job
// disk's usage, the last lines of the log, whether the platform stopped the
// job, and in which stage it ended — to a Result: one of the api.Failure*
// reasons, a one-line message that says what happened with the numbers that
// matter (flavor and memory limit, disk used and size, the module name, the
// OBS path, the exception line) and a hint that says what to do.
//
// Precedence, first match wins:
//
//  1. stopped by the user, killed by max runtime, hung (facts from the runner)
//  2. staging and install stage errors (user code never ran)
//  3. exit 0 without a signal: completed
//  4. memory limit exceeded (cgroup OOM kill; or exit 137/SIGKILL with a
//     "Killed" line; or a Python MemoryError; or a DataLoader worker killed)
//  5. CUDA out of memory
//  6. job disk full (the DiskFull fact, or ENOSPC / "[Errno 28]" in the log)
//  7. missing module (ModuleNotFoundError, ImportError: cannot import name,
//     a missing shared library)
//  8. FileNotFoundError and the like on an obs:// or s3:// path
//  9. no classes in an image-folder dataset ("Found 0 classes", …)
//  10. a signal the platform did not send (exit code 128+N without a traceback)
//  11. any other non-zero exit: user_error, quoting the exception line
//
// A final sync of the outputs that failed (the OutputSyncErr fact) turns
// an attempt that would have completed into output_sync, with the store's
// last answer and a hint; any other end keeps its reason and its message
// says that the outputs were not synced either.
//
// Log evidence is read from the end. The "final block" is the log from the
// last Python traceback to the end (the whole log when there is no
// traceback): the exception that ended the program decides, and the order
// above breaks ties. Only when the final block matches no class are a few
// patterns that cannot be harmless searched in the whole log: a "Killed"
// line with exit 137, a killed DataLoader worker, "No space left on device"
// and the image-folder "Found 0 …" messages. Other patterns (a handled
// ModuleNotFoundError, a CUDA OOM that a framework caught and retried) are
// not trusted outside the final block, so a warning printed early does not
// mask the real error.
package failure
