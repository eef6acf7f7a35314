// Package local is the executor that runs runners as detached processes on
// this machine.
//
// Start launches the runner in its own session (setsid), with stdin from
// /dev/null and stdout and stderr appended to runner.log in the attempt
// dir, and writes its pid to runner.pid there. The runner is not tied to
// the server: it keeps running when the server exits, and a new Executor
// (after a restart) re-adopts it from its handle,
//
//	pid:<pid>:<start time>:<attempt dir>
//
// where the start time (field 22 of /proc/<pid>/stat, in clock ticks since
// boot) tells the runner apart from a later process that got the same pid.
// The Executor that started a runner reaps it and remembers its exit code;
// another one reports -1.
//
// Stop sends SIGTERM to the runner and gives it the grace period to stop
// its user code, sync outputs and write final.json; then it SIGKILLs the
// runner's process group, the process group the runner recorded in
// user.pgid (the user code's) and whatever else is left in the runner's
// session.
package local
