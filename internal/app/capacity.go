package app

import (
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/config"
)

// newLedger is the capacity ledger that training jobs and service
// instances share (internal/capacity): the job controller admits and the
// service controller starts instances through it, and each rebuilds its
// part from its records on every pass.
func newLedger(cfg *config.Server) *capacity.Ledger {
	return capacity.New(machineCapacity(cfg, config.LocalMachine()), capacity.Job, capacity.Instance)
}

// machineCapacity is what jobs and instances may hold at once: each key of
// the config's capacity that is set, else the machine's cores and memory,
// raised to the largest flavor's (as many GPUs as the largest flavor has),
// so that by default every flavor can run.
func machineCapacity(cfg *config.Server, m config.Machine) capacity.Capacity {
	c := capacity.Capacity{CPU: float64(m.CPUs), Memory: m.MemoryBytes}
	for _, f := range cfg.Flavors {
		c.CPU = max(c.CPU, f.CPU)
		c.Memory = max(c.Memory, int64(f.Memory))
		c.GPU = max(c.GPU, f.GPU)
	}
	if cfg.Capacity.CPU > 0 {
		c.CPU = cfg.Capacity.CPU
	}
	if cfg.Capacity.Memory > 0 {
		c.Memory = int64(cfg.Capacity.Memory)
	}
	if cfg.Capacity.GPU > 0 {
		c.GPU = cfg.Capacity.GPU
	}
	return c
}
