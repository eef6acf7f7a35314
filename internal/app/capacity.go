package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/executor"
)

// newLedger is the capacity ledger that training jobs and service
// instances share (internal/capacity): the job controller admits and the
// service controller starts instances through it, and each rebuilds its
// part from its records on every pass.
func newLedger(cfg *config.Server) (*capacity.Ledger, capacity.Sources) {
	c, src := machineCapacity(cfg)
	return capacity.New(c, capacity.Job, capacity.Instance), src
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

// cgroupMeter measures holders through their cgroups, which runners make
// under one parent and name after what runs there: a job attempt's
// executor.JobGroup, an instance's executor.InstanceGroup.
type cgroupMeter struct {
	o     cgroup.Options
	meter *cgroup.Meter
}

func newCgroupMeter(o cgroup.Options) *cgroupMeter {
	return &cgroupMeter{o: o, meter: cgroup.NewMeter(o)}
}

// Measure implements capacity.Meter.
func (m *cgroupMeter) Measure(ctx context.Context, holders []capacity.Holder) capacity.Measured {
	const gpus = "GPUs are not measured"
	v := m.o.Detect()
	if v == 0 {
		return capacity.Measured{Note: "not measured: no cgroup hierarchy is readable here, so what workloads use is unknown (workloads run without limits: " +
			"docs/security.md); " + gpus}
	}
	names, err := m.o.Names()
	if err != nil {
		return capacity.Measured{Note: "not measured: " + err.Error() + "; " + gpus}
	}
	groups := map[capacity.HolderKey][]string{}
	var all []string
	for _, n := range names {
		var k capacity.HolderKey
		if id, ok := executor.JobOfGroup(n); ok {
			k = capacity.HolderKey{Kind: capacity.Job, ID: id}
		} else if id, ok := strings.CutPrefix(n, executor.InstanceGroup("")); ok {
			k = capacity.HolderKey{Kind: capacity.Instance, ID: id}
		} else {
			continue
		}
		groups[k] = append(groups[k], n)
		all = append(all, n)
	}
	use, err := m.meter.Measure(ctx, all)
	out := capacity.Measured{Available: true, ByHolder: map[capacity.HolderKey]capacity.Usage{}}
	var missing []string
	for _, h := range holders {
		k := capacity.HolderKey{Kind: h.Kind, ID: h.ID}
		var u capacity.Usage
		found := false
		for _, n := range groups[k] {
			if g, ok := use[n]; ok {
				u.CPU += g.CPU
				u.Memory += g.Memory
				found = true
			}
		}
		if found {
			out.ByHolder[k] = u
		} else {
			missing = append(missing, string(h.Kind)+" "+h.Name)
		}
	}
	out.Note = fmt.Sprintf("measured from the workloads' cgroups (v%d): memory in use, CPU averaged over the time since the last look (at least %s); %s",
		v, cgroup.MinWindow, gpus)
	if len(missing) > 0 {
		out.Note += fmt.Sprintf("; not measured (no cgroup yet, or it ended): %s", strings.Join(missing, ", "))
	}
	if err != nil {
		out.Note += "; " + err.Error()
	}
	return out
}
