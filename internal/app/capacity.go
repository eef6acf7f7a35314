package app

import (
	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/config"
)

// newLedger is the capacity ledger that training jobs and service
// instances share (internal/capacity): the job controller admits and the
// service controller starts instances through it, and each rebuilds its
// part from its records on every pass.
func newLedger(cfg *config.Server) (*capacity.Ledger, capacity.Sources) {
	c, src := machineCapacity(cfg)
	return capacity.New(c, capacity.Job, capacity.Instance, capacity.Notebook), src
}

// machineCapacity is the machine jobs and instances share and how it is
// booked: the config's machine (each key `capacity` declares, else the
// detected one: cfg.Machine), a key not declared raised to the largest
// flavor's limit so that every flavor can run; the overcommit ratios; and
// the shares instances and notebooks request.
func machineCapacity(cfg *config.Server) (capacity.Capacity, capacity.Sources) {
	m := cfg.Machine
	c := capacity.Capacity{CPU: m.CPUs, Memory: m.MemoryBytes, GPU: m.GPUs,
		Overcommit: capacity.Overcommit{CPU: cfg.Overcommit.CPU, Memory: cfg.Overcommit.Memory},
		Shares: capacity.Shares{
			Instance: capacity.Resources{CPU: cfg.Requests.Service.CPU, Memory: int64(cfg.Requests.Service.Memory)},
			Notebook: capacity.Resources{CPU: cfg.Requests.Notebook.CPU, Memory: int64(cfg.Requests.Notebook.Memory)},
		}}
	src := capacity.Sources{CPU: api.SourceDetected, Memory: api.SourceDetected, GPU: api.SourceDetected}
	if cfg.Capacity.CPU > 0 {
		src.CPU = api.SourceDeclared
	}
	if cfg.Capacity.Memory > 0 {
		src.Memory = api.SourceDeclared
	}
	if cfg.Capacity.GPU > 0 {
		src.GPU = api.SourceDeclared
	}
	for _, f := range cfg.Flavors {
		if src.CPU != api.SourceDeclared && f.CPU > c.CPU {
			c.CPU, src.CPU = f.CPU, api.SourceFlavor
		}
		if src.Memory != api.SourceDeclared && int64(f.Memory) > c.Memory {
			c.Memory, src.Memory = int64(f.Memory), api.SourceFlavor
		}
		if src.GPU != api.SourceDeclared && f.GPU > c.GPU {
			c.GPU, src.GPU = f.GPU, api.SourceFlavor
		}
	}
	return c, src
}
