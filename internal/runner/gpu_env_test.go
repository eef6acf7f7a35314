package runner

import (
	"testing"
)

// TestGPUEnvIsExactlyTheGivenDevices: user code sees the devices the
// server gave its job or instance in both CUDA_VISIBLE_DEVICES and
// NVIDIA_VISIBLE_DEVICES, none when it was given none, and its own
// variables cannot widen that.
func TestGPUEnvIsExactlyTheGivenDevices(t *testing.T) {
	const work = "/w"
	for _, tc := range []struct {
		name string
		gpus []int
		own  map[string]string
		want string
	}{
		{"two devices", []int{1, 3}, nil, "1,3"},
		{"none", nil, nil, ""},
		{"own variables do not win", []int{2}, map[string]string{"CUDA_VISIBLE_DEVICES": "0,1,2,3", "NVIDIA_VISIBLE_DEVICES": "all"}, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rj := testJob("none")
			rj.GPUs = tc.gpus
			for k, v := range tc.own {
				rj.Job.Algorithm.Environments[k] = v
			}
			l, err := NewLayout(work, rj, nil)
			if err != nil {
				t.Fatal(err)
			}
			job := envMap(Invocation{Job: rj, Layout: l, Python: "/usr/bin/python3"}.Env())
			ri := testInstance("none")
			ri.GPUs = tc.gpus
			for k, v := range tc.own {
				ri.Envs[k] = v
			}
			inst := envMap(InstanceInvocation{Instance: ri, Layout: NewInstanceLayout(work, "/w/services/s-1/i-1", false), Python: "/usr/bin/python3"}.Env())
			for what, m := range map[string]map[string]string{"job": job, "instance": inst} {
				for _, k := range []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"} {
					if v, ok := m[k]; !ok || v != tc.want {
						t.Errorf("%s: %s=%q (set %v), want %q", what, k, v, ok, tc.want)
					}
				}
			}
		})
	}
}
