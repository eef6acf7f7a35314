// Package executor defines how the platform starts, observes and stops
// runners (`atelier runner`, the in-instance agent) on a compute backend.
// The local executor (package local) runs them as detached processes on this
// machine; exectest is the conformance suite every executor passes.
// JobGroup names the cgroup of an attempt's user code, shared by the
// runner that makes it and the server that sweeps it (and measures it);
// InstanceGroup names a service instance's, NotebookGroup a notebook's.
package executor
