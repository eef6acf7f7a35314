package executor

import "testing"

// TestJobGroupIsStable: the name is a contract between runners and the
// servers that sweep their groups (one of another version, after an
// upgrade): it must not change, and must differ per attempt.
func TestJobGroupIsStable(t *testing.T) {
	for _, tt := range []struct {
		id      string
		attempt int
		want    string
	}{
		{"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", 1, "job-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b-1"},
		{"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", 12, "job-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b-12"},
	} {
		if got := JobGroup(tt.id, tt.attempt); got != tt.want {
			t.Errorf("JobGroup(%q, %d) = %q, want %q", tt.id, tt.attempt, got, tt.want)
		}
	}
}

// TestGroupNames: a job's group is found back from its name (any attempt),
// and an instance's group is named by its id alone.
func TestGroupNames(t *testing.T) {
	id := "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	if got, ok := JobOfGroup(JobGroup(id, 3)); !ok || got != id {
		t.Errorf("JobOfGroup = %q, %v", got, ok)
	}
	for _, bad := range []string{"instance-" + id, "job-", "job-x", "job-x-", "job-x-y", "job--1"} {
		if got, ok := JobOfGroup(bad); ok {
			t.Errorf("JobOfGroup(%q) = %q", bad, got)
		}
	}
	if got := InstanceGroup(id); got != "instance-"+id {
		t.Errorf("InstanceGroup = %q", got)
	}
	if got := NotebookGroup(id); got != "notebook-"+id {
		t.Errorf("NotebookGroup = %q", got)
	}
	if _, ok := JobOfGroup(NotebookGroup(id)); ok {
		t.Errorf("JobOfGroup takes a notebook's group")
	}
}
