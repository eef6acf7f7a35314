package capacity

import (
	"context"
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/executor"
)

// CgroupMeter measures holders through their cgroups, which runners make
// under one parent and name after what runs there: a job attempt's
// executor.JobGroup, an instance's executor.InstanceGroup, a notebook's
// executor.NotebookGroup. It implements
// Meter.
type CgroupMeter struct {
	o     cgroup.Options
	meter *cgroup.Meter
}

// NewCgroupMeter measures the groups of o (cgroup.Options{} on a real
// machine).
func NewCgroupMeter(o cgroup.Options) *CgroupMeter {
	return &CgroupMeter{o: o, meter: cgroup.NewMeter(o)}
}

// Measure implements Meter: each holder's groups added up.
func (m *CgroupMeter) Measure(ctx context.Context, holders []Holder) Measured {
	const gpus = "GPUs are not measured"
	v := m.o.Detect()
	if v == 0 {
		return Measured{Note: "not measured: no cgroup hierarchy is readable here, so what workloads use is unknown (workloads run without limits: " +
			"docs/security.md); " + gpus}
	}
	names, err := m.o.Names()
	if err != nil {
		return Measured{Note: "not measured: " + err.Error() + "; " + gpus}
	}
	groups := map[HolderKey][]string{}
	var all []string
	for _, n := range names {
		var k HolderKey
		if id, ok := executor.JobOfGroup(n); ok {
			k = HolderKey{Kind: Job, ID: id}
		} else if id, ok := strings.CutPrefix(n, executor.InstanceGroup("")); ok {
			k = HolderKey{Kind: Instance, ID: id}
		} else if id, ok := strings.CutPrefix(n, executor.NotebookGroup("")); ok {
			k = HolderKey{Kind: Notebook, ID: id}
		} else {
			continue
		}
		groups[k] = append(groups[k], n)
	}
	// Only the holders' groups are read: others (being swept, of ended
	// instances) would cost a read, and a second one a window later.
	for _, h := range holders {
		all = append(all, groups[HolderKey{Kind: h.Kind, ID: h.ID}]...)
	}
	use, err := m.meter.Measure(ctx, all)
	out := Measured{Available: true, ByHolder: map[HolderKey]Usage{}}
	var missing []string
	for _, h := range holders {
		k := HolderKey{Kind: h.Kind, ID: h.ID}
		var u Usage
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
