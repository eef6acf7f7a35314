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
