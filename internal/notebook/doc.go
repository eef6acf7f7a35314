// Package notebook runs Jupyter notebooks for users: the REST operations
// (Notebooks: create, list, get, start, stop, extend, login links,
// delete), the controller that starts each notebook's runner through the
// executor once the capacity ledger has room and stops it when asked, when
// idle or at its max runtime (Controller), and the notebook side of the
// runner protocol (Runners: the runner fetches what it needs and reports
// Jupyter's phase, kernels, CPU and volume use).
//
// A notebook is a record (meta.NotebookRecord) whose Spec is what the
// user asked (engine, flavor, volume, lease), whose State is what was
// observed (status, activity, reasons) and whose Runtime is server-private
// (executor handle, runner token hash, Jupyter token, credentials key). Its
// dir <work_dir>/notebooks/<id> holds the volume and home and lives as long
// as the record; delete removes both.
//
// Idle stop is a pure decision (judge): a notebook is active while a
// kernel is busy or starting, a cell was executed or a terminal typed in
// (the proxy notes those, package proxy) within its idle-stop time, or its
// CPU is above its share of the request; websocket heartbeats and the
// frontend's polling do not count. A warning event comes before every
// stop; a start resets the clock; extend pushes the idle stop; max runtime
// stops a busy notebook too.
//
// Snapshot copies a notebook's work dir into an immutable code dir for a
// training job (job create --from-notebook), through package userfs only,
// with a requirements.txt frozen from the metadata of the packages in the
// notebook's venv; nothing of the volume is run. A stopped notebook's
// image is mounted read-only for it, and its runner does not start (nor
// its dir go) until the snapshot is done.
//
// The proxy (package proxy) reaches a running notebook through Target:
// its owner, its Unix socket and Jupyter's token, which never leaves the
// server.
package notebook
