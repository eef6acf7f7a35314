package cgroup

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Detect is the cgroup version groups are made with here: 2, 1, or 0
// when no hierarchy with a memory controller is mounted at Root.
func (o Options) Detect() int {
	if o.Version != 0 {
		return o.Version
	}
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	return detect(o.Root)
}

// Names lists the groups under the parent (v1: in the memory hierarchy),
// sorted; none when there is no parent group yet.
func (o Options) Names() ([]string, error) {
	o = o.defaults()
	dir := filepath.Join(o.Root, o.Parent)
	if o.Detect() == 1 {
		dir = filepath.Join(o.Root, "memory", o.Parent)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, errs.E("cgroup.Names", errs.IO, CodeStats, "cannot list the cgroups under "+dir, err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && nameRE().MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// Usage reads the usage of the group name, which any process made (a
// runner): memory in use and CPU time. A group that does not exist is
// errs.NotFound.
func (o Options) Usage(name string) (Stats, error) {
	const op errs.Op = "cgroup.Usage"
	if !nameRE().MatchString(name) {
		return Stats{}, errs.E(op, errs.Invalid, CodeBadName, "bad cgroup name "+strconv.Quote(name))
	}
	o = o.defaults()
	v := o.Detect()
	dirs := groupDirs(o, v, name)
	if len(dirs) == 0 {
		return Stats{}, errs.E(op, errs.NotFound, CodeStats, "no cgroup "+name)
	}
	g := &Group{version: v, name: name, dirs: dirs, fd: -1}
	if v == 1 {
		for _, d := range dirs {
			if exists(filepath.Join(d, "cpuacct.usage")) {
				g.cpuacct = d
			}
		}
	}
	s, err := g.Stats()
	if err != nil {
		if _, serr := os.Stat(dirs[0]); os.IsNotExist(serr) {
			return Stats{}, errs.E(op, errs.NotFound, CodeStats, "no cgroup "+name, err)
		}
		return Stats{}, errs.E(op, err)
	}
	return s, nil
}

func (o Options) defaults() Options {
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	if o.Parent == "" {
		o.Parent = DefaultParent
	}
	return o
}

// Use is what a group uses now.
type Use struct {
	CPU    float64 // cores: CPU time per second of wall time, averaged over a window
	Memory int64   // bytes in use
}

// MinWindow is the shortest time CPU use is averaged over.
const MinWindow = 200 * time.Millisecond

// maxWindow: an earlier reading older than this is not used; the meter
// reads again after MinWindow instead.
const maxWindow = time.Minute

// Meter measures what groups use. CPU use is a rate: the CPU time a
// group used between two readings over the time between them. The meter
// remembers each group's last reading, so that a look shortly after the
// previous one (at least MinWindow, at most a minute) averages over the
// time between; for the others it reads twice, MinWindow apart. Safe for
// concurrent use.
type Meter struct {
	o     Options
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	mu   sync.Mutex
	last map[string]reading
}

type reading struct {
	at  time.Time
	cpu time.Duration
}

// NewMeter makes a meter of the groups of o.
func NewMeter(o Options) *Meter {
	return &Meter{o: o, now: time.Now, sleep: sleepCtx, last: map[string]reading{}}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Measure reads the groups names; a group that does not exist (or ended
// meanwhile) is left out of the answer. The error is of the first group
// that could not be read for another reason.
func (m *Meter) Measure(ctx context.Context, names []string) (map[string]Use, error) {
	out := map[string]Use{}
	var firstErr error
	first := map[string]reading{}
	read := func(name string) (Stats, time.Time, bool) {
		s, err := m.o.Usage(name)
		at := m.now()
		if err != nil {
			if !errs.Is(err, errs.NotFound) && firstErr == nil {
				firstErr = err
			}
			return Stats{}, at, false
		}
		return s, at, true
	}
	var again []string
	m.mu.Lock()
	// Forget the groups not asked for (ended).
	for name := range m.last {
		if !slices.Contains(names, name) {
			delete(m.last, name)
		}
	}
	for _, name := range names {
		s, at, ok := read(name)
		if !ok {
			delete(m.last, name)
			continue
		}
		out[name] = Use{Memory: s.MemoryBytes}
		prev, had := m.last[name]
		m.last[name] = reading{at, s.CPUUsage}
		if d := at.Sub(prev.at); had && d >= MinWindow && d <= maxWindow && s.CPUUsage >= prev.cpu {
			u := out[name]
			u.CPU = rate(s.CPUUsage-prev.cpu, d)
			out[name] = u
			continue
		}
		first[name] = reading{at, s.CPUUsage}
		again = append(again, name)
	}
	m.mu.Unlock()
	if len(again) == 0 {
		return out, firstErr
	}
	if err := m.sleep(ctx, MinWindow); err != nil {
		return out, firstErr
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range again {
		s, at, ok := read(name)
		if !ok {
			delete(m.last, name)
			delete(out, name)
			continue
		}
		p := first[name]
		m.last[name] = reading{at, s.CPUUsage}
		if d := at.Sub(p.at); d > 0 && s.CPUUsage >= p.cpu {
			out[name] = Use{CPU: rate(s.CPUUsage-p.cpu, d), Memory: s.MemoryBytes}
		}
	}
	return out, firstErr
}

func rate(cpu, wall time.Duration) float64 { return cpu.Seconds() / wall.Seconds() }
