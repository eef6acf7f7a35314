package job

import (
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

func TestTerminal(t *testing.T) {
	for _, p := range Phases() {
		want := p == api.PhaseCompleted || p == api.PhaseFailed || p == api.PhaseTerminated || p == api.PhaseAbnormal
		if Terminal(p) != want {
			t.Errorf("Terminal(%s) = %v", p, !want)
		}
	}
	if Terminal("") || Terminal("Bogus") {
		t.Error("unknown phases are not terminal")
	}
}

func TestCanTransition(t *testing.T) {
	const (
		cr = api.PhaseCreating
		pe = api.PhasePending
		ru = api.PhaseRunning
		co = api.PhaseCompleted
		fa = api.PhaseFailed
		ti = api.PhaseTerminating
		te = api.PhaseTerminated
		ab = api.PhaseAbnormal
	)
	allowed := map[[2]string]bool{
		{"", cr}: true,
		{cr, cr}: true, {cr, pe}: true, {cr, fa}: true, {cr, te}: true, {cr, ab}: true,
		{pe, pe}: true, {pe, ru}: true, {pe, ti}: true, {pe, te}: true, {pe, fa}: true, {pe, ab}: true,
		{ru, ru}: true, {ru, co}: true, {ru, fa}: true, {ru, pe}: true, {ru, ti}: true, {ru, te}: true, {ru, ab}: true,
		{ti, ti}: true, {ti, te}: true, {ti, co}: true, {ti, fa}: true, {ti, ab}: true,
	}
	all := append([]string{"", "Bogus"}, Phases()...)
	for _, from := range all {
		for _, to := range all {
			want := allowed[[2]string{from, to}]
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%q, %q) = %v, want %v", from, to, got, want)
			}
			err := CheckTransition(from, to)
			if (err == nil) != want {
				t.Errorf("CheckTransition(%q, %q) = %v", from, to, err)
			}
			if err != nil && (errs.CodeOf(err) != CodeBadTransition || !errs.Is(err, errs.Conflict) || errs.HintOf(err) == "") {
				t.Errorf("CheckTransition(%q, %q) error %v lacks code, kind or hint", from, to, err)
			}
		}
	}
}

func TestRetryPolicy(t *testing.T) {
	tests := []struct {
		ann  map[string]string
		want Retry
	}{
		{nil, Retry{}},
		{map[string]string{api.AnnotationRetryNum: "3"}, Retry{Max: 3}},
		{map[string]string{api.AnnotationRetryNum: "99", api.AnnotationUnconditionalRetry: "TRUE"}, Retry{Max: 10, Unconditional: true}},
		{map[string]string{api.AnnotationRetryNum: "-2", api.AnnotationHangRetry: "true"}, Retry{Hang: true}},
		{map[string]string{api.AnnotationRetryNum: "two", api.AnnotationHangRetry: "yes"}, Retry{}},
	}
	for _, tt := range tests {
		j := minimal()
		j.Metadata.Annotations = tt.ann
		if got := RetryPolicy(j); got != tt.want {
			t.Errorf("RetryPolicy(%v) = %+v, want %+v", tt.ann, got, tt.want)
		}
	}
	if RetryPolicy(nil) != (Retry{}) {
		t.Error("RetryPolicy(nil)")
	}
}

func TestShouldRetry(t *testing.T) {
	plain := Retry{Max: 2}
	uncond := Retry{Max: 2, Unconditional: true}
	hang := Retry{Max: 2, Hang: true}
	tests := []struct {
		r      Retry
		used   int
		reason string
		want   bool
	}{
		// Max alone: platform faults only.
		{plain, 0, api.FailurePlatform, true},
		{plain, 1, api.FailurePlatform, true},
		{plain, 2, api.FailurePlatform, false},
		{plain, 0, api.FailureUserError, false},
		{plain, 0, api.FailureOOM, false},
		{plain, 0, api.FailureHung, false},
		{Retry{}, 0, api.FailurePlatform, false},
		{plain, -1, api.FailurePlatform, false},
		// Outputs that did not reach OBS: a platform fault.
		{plain, 0, api.FailureOutputSync, true},
		{plain, 2, api.FailureOutputSync, false},
		{Retry{}, 0, api.FailureOutputSync, false},
		// Unconditional: failures of running user code too.
		{uncond, 0, api.FailureUserError, true},
		{uncond, 1, api.FailureOOM, true},
		{uncond, 0, api.FailureCUDAOOM, true},
		{uncond, 0, api.FailureDiskFull, true},
		{uncond, 0, api.FailureSignal, true},
		{uncond, 0, api.FailureHung, true},
		{uncond, 0, api.FailurePlatform, true},
		{uncond, 2, api.FailureUserError, false},
		// ...but not what fails the same way every time.
		{uncond, 0, api.FailureMissingModule, false},
		{uncond, 0, api.FailureOBSPath, false},
		{uncond, 0, api.FailureNoClasses, false},
		{uncond, 0, api.FailureStaging, false},
		{uncond, 0, api.FailureInstall, false},
		// Never: completed, stopped, max runtime, unknown.
		{uncond, 0, api.FailureCompleted, false},
		{uncond, 0, api.FailureStopped, false},
		{uncond, 0, api.FailureMaxRuntime, false},
		{uncond, 0, "", false},
		{uncond, 0, "bogus", false},
		// Hang retry.
		{hang, 0, api.FailureHung, true},
		{hang, 0, api.FailureUserError, false},
		{hang, 0, api.FailurePlatform, true},
		{hang, 2, api.FailureHung, false},
	}
	for _, tt := range tests {
		if got := ShouldRetry(tt.r, tt.used, tt.reason); got != tt.want {
			t.Errorf("ShouldRetry(%+v, %d, %q) = %v, want %v", tt.r, tt.used, tt.reason, got, tt.want)
		}
	}
}

func FuzzRetryPolicy(f *testing.F) {
	f.Add("3", "true", "TRUE", 1, api.FailureUserError)
	f.Add("-1", "", "x", 0, api.FailurePlatform)
	f.Fuzz(func(t *testing.T, num, uncond, hang string, used int, reason string) {
		j := minimal()
		j.Metadata.Annotations = map[string]string{
			api.AnnotationRetryNum: num, api.AnnotationUnconditionalRetry: uncond, api.AnnotationHangRetry: hang,
		}
		r := RetryPolicy(j)
		if r.Max < 0 || r.Max > MaxRetries {
			t.Fatalf("Max = %d", r.Max)
		}
		ok := ShouldRetry(r, used, reason)
		if ok && (used >= r.Max || used < 0) {
			t.Fatalf("retry beyond the limit: %+v used %d", r, used)
		}
		if ok && (reason == api.FailureStopped || reason == api.FailureMaxRuntime || reason == api.FailureCompleted) {
			t.Fatalf("retried %s", reason)
		}
		if ok && !r.Unconditional && reason != api.FailurePlatform && !(r.Hang && reason == api.FailureHung) {
			t.Fatalf("retried %s without unconditional retry", reason)
		}
	})
}

func TestEndOf(t *testing.T) {
	tests := []struct {
		name string
		in   api.RunnerExit
		want string // reason
	}{
		{"completed and synced", api.RunnerExit{Reason: api.FailureCompleted, OutputsSynced: true}, api.FailureCompleted},
		{"completed, outputs lost", api.RunnerExit{Reason: api.FailureCompleted}, api.FailureOutputSync},
		{"classified by the runner", api.RunnerExit{Reason: api.FailureOutputSync, Message: "m", Hint: "h"}, api.FailureOutputSync},
		{"a failure keeps its reason", api.RunnerExit{Reason: api.FailureOOM}, api.FailureOOM},
		{"a platform exit keeps its reason", api.RunnerExit{Reason: api.FailurePlatform}, api.FailurePlatform},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EndOf(tt.in)
			if got.Reason != tt.want {
				t.Fatalf("reason %q, want %q", got.Reason, tt.want)
			}
			if got.Reason == api.FailureOutputSync && (got.Message == "" || got.Hint == "") {
				t.Errorf("output_sync without message or hint: %+v", got)
			}
			if tt.in.Message != "" && got.Message != tt.in.Message {
				t.Errorf("message %q replaced by %q", tt.in.Message, got.Message)
			}
		})
	}
}
