package cgroup

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// TestUsageAndNames reads groups by name alone, as the server reads the
// groups runners made: v2 and v1 (cpu and cpuacct co-mounted).
func TestUsageAndNames(t *testing.T) {
	t.Run("v2", func(t *testing.T) {
		root := t.TempDir()
		o := Options{Root: root, Version: 2}
		if names, err := o.Names(); err != nil || len(names) != 0 {
			t.Fatalf("no parent: %v %v", names, err)
		}
		mkfiles(t, filepath.Join(root, "atelier", "job-a-1"), map[string]string{"memory.current": "1000\n", "cpu.stat": "usage_usec 2000000\n"})
		mkfiles(t, filepath.Join(root, "atelier", "instance-b"), map[string]string{"memory.current": "3000\n", "cpu.stat": "usage_usec 1\n"})
		names, err := o.Names()
		if err != nil || !slices.Equal(names, []string{"instance-b", "job-a-1"}) {
			t.Fatalf("names %q %v", names, err)
		}
		s, err := o.Usage("job-a-1")
		if err != nil || s.MemoryBytes != 1000 || s.CPUUsage != 2*time.Second {
			t.Fatalf("usage %+v %v", s, err)
		}
		if _, err := o.Usage("job-gone-1"); !errs.Is(err, errs.NotFound) {
			t.Errorf("a missing group: %v", err)
		}
		if _, err := o.Usage("../x"); errs.CodeOf(err) != CodeBadName {
			t.Errorf("a bad name: %v", err)
		}
	})
	t.Run("v1", func(t *testing.T) {
		root := t.TempDir()
		mkfiles(t, filepath.Join(root, "memory", "atelier", "job-a-1"), map[string]string{"memory.usage_in_bytes": "4096\n"})
		mkfiles(t, filepath.Join(root, "cpu,cpuacct", "atelier", "job-a-1"), map[string]string{"cpuacct.usage": "3000000000\n"})
		for _, l := range []string{"cpu", "cpuacct"} {
			if err := os.Symlink("cpu,cpuacct", filepath.Join(root, l)); err != nil {
				t.Fatal(err)
			}
		}
		o := Options{Root: root, Version: 1}
		if names, err := o.Names(); err != nil || !slices.Equal(names, []string{"job-a-1"}) {
			t.Fatalf("names %q %v", names, err)
		}
		s, err := o.Usage("job-a-1")
		if err != nil || s.MemoryBytes != 4096 || s.CPUUsage != 3*time.Second {
			t.Fatalf("usage %+v %v", s, err)
		}
	})
}

// TestMeter: CPU use is the CPU time between two readings over the wall
// time between them: a first look reads twice, MinWindow apart; a look a
// second later averages over that second; a group that ended is left out.
func TestMeter(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "atelier", "job-a-1")
	mkfiles(t, dir, map[string]string{"memory.current": "1000\n", "cpu.stat": "usage_usec 0\n"})
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMeter(Options{Root: root, Version: 2})
	m.now = func() time.Time { return now }
	slept := 0
	m.sleep = func(_ context.Context, d time.Duration) error {
		slept++
		now = now.Add(d)
		// Half a core over the window.
		mkfiles(t, dir, map[string]string{"cpu.stat": "usage_usec 100000\n"})
		return nil
	}
	use, err := m.Measure(context.Background(), []string{"job-a-1", "job-gone-1"})
	if err != nil || slept != 1 {
		t.Fatalf("first look: %v, slept %d", err, slept)
	}
	if u, ok := use["job-a-1"]; !ok || math.Abs(u.CPU-0.5) > 1e-9 || u.Memory != 1000 {
		t.Errorf("first look %+v", use)
	}
	if _, ok := use["job-gone-1"]; ok {
		t.Errorf("a missing group was measured: %+v", use)
	}

	now = now.Add(time.Second)
	mkfiles(t, dir, map[string]string{"cpu.stat": "usage_usec 1600000\n", "memory.current": "2000\n"})
	use, err = m.Measure(context.Background(), []string{"job-a-1"})
	if err != nil || slept != 1 {
		t.Fatalf("second look: %v, slept %d", err, slept)
	}
	if u := use["job-a-1"]; math.Abs(u.CPU-1.5) > 1e-9 || u.Memory != 2000 {
		t.Errorf("second look %+v, want 1.5 cores", u)
	}

	// Too soon after the last look: read again after the window.
	use, _ = m.Measure(context.Background(), []string{"job-a-1"})
	if slept != 2 {
		t.Errorf("a look right after the last did not wait for a window (slept %d)", slept)
	}
	if u := use["job-a-1"]; u.CPU < 0 {
		t.Errorf("third look %+v", u)
	}
}
