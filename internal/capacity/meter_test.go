package capacity

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/cgroup"
)

// TestCgroupMeter: holders are measured through the groups their runners
// made (a job's attempt group, an instance's group); a holder without a
// group is named as not measured; without a cgroup hierarchy nothing is.
func TestCgroupMeter(t *testing.T) {
	root := t.TempDir()
	for name, files := range map[string]map[string]string{
		"job-j1-2":    {"memory.current": "1000\n", "cpu.stat": "usage_usec 5\n"},
		"instance-i1": {"memory.current": "3000\n", "cpu.stat": "usage_usec 7\n"},
		"other":       {"memory.current": "9\n", "cpu.stat": "usage_usec 9\n"},
	} {
		dir := filepath.Join(root, "atelier", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, b := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := NewCgroupMeter(cgroup.Options{Root: root, Version: 2})
	got := m.Measure(context.Background(), []Holder{
		{Kind: Job, ID: "j1", Name: "train"}, {Kind: Instance, ID: "i1", Name: "svc"}, {Kind: Job, ID: "j2", Name: "late"}})
	if !got.Available || len(got.ByHolder) != 2 || got.ByHolder[HolderKey{Kind: Job, ID: "j1"}].Memory != 1000 ||
		got.ByHolder[HolderKey{Kind: Instance, ID: "i1"}].Memory != 3000 {
		t.Errorf("measured %+v", got)
	}
	if !strings.Contains(got.Note, "cgroups (v2)") || !strings.Contains(got.Note, "not measured (no cgroup yet, or it ended): job late") ||
		!strings.Contains(got.Note, "GPUs are not measured") {
		t.Errorf("note %q", got.Note)
	}
	none := NewCgroupMeter(cgroup.Options{Root: t.TempDir()}).Measure(context.Background(), nil)
	if none.Available || !strings.HasPrefix(none.Note, "not measured: no cgroup hierarchy") {
		t.Errorf("without cgroups: %+v", none)
	}
}
