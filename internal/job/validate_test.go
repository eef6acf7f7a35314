package job

import (
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// TestValidateStoresNothing: the dry run of a create checks what Create
// checks — with code_upload, all but the code dir the client uploads next
// — and stores no job.
func TestValidateStoresNothing(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 1, Memory: gib})
	svc := New(e.store, e.obs, fakeCreds{}, allowAll{}, e.exec, e.principal("admin"), Options{
		Flavors: ledgerFlavors, Engines: []api.Engine{{Name: "python3", Python: "/usr/bin/python3"}}, Capacity: e.ledger.Capacity(),
		Sandbox: "none", WorkDir: e.work})
	alice := e.principal("alice")
	job := func(mod func(*api.Job)) *api.Job {
		j := &api.Job{Kind: "job", Metadata: api.JobMetadata{Name: "dry"},
			Algorithm: api.JobAlgorithm{BootFile: "train.py", Engine: api.JobEngine{EngineName: "python3"},
				Outputs: []api.JobChannel{{Name: "train_url", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://data/out/"}}}}},
			Spec: api.JobSpec{Resource: api.JobResource{FlavorID: "cpu.1"}}}
		if mod != nil {
			mod(j)
		}
		return j
	}
	got, err := svc.Jobs.Validate(e.ctx, alice, job(nil), true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Algorithm.CodeDir != "" || got.Algorithm.BootFile != "train.py" || got.Metadata.ID != "" {
		t.Errorf("validated job %+v", got.Algorithm)
	}
	for _, tt := range []struct {
		name string
		mod  func(*api.Job)
		code errs.Code
	}{
		{"unknown flavor", func(j *api.Job) { j.Spec.Resource.FlavorID = "gpu.8" }, CodeInvalidSpec},
		{"output not writable", func(j *api.Job) { j.Algorithm.Outputs[0].Remote.OBS.OBSURL = "obs://nope/out/" }, CodeOutput},
		{"code_dir given with an upload", func(j *api.Job) { j.Algorithm.CodeDir = "obs://data/code/" }, CodeInvalidSpec},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := svc.Jobs.Validate(e.ctx, alice, job(tt.mod), true); errs.CodeOf(err) != tt.code {
				t.Errorf("error %v, want code %s", err, tt.code)
			}
		})
	}
	// Without an upload the code dir is checked as Create checks it.
	if _, err := svc.Jobs.Validate(e.ctx, alice, job(func(j *api.Job) { j.Algorithm.CodeDir = "obs://data/ds/" }), false); errs.CodeOf(err) != CodeBootFile {
		t.Errorf("boot file missing from the code dir: %v", err)
	}
	if _, total, err := e.store.ListJobs(e.ctx, meta.JobFilter{}, meta.ListOptions{Limit: 10}); err != nil || total != 0 {
		t.Errorf("%d jobs stored by dry runs (%v)", total, err)
	}
}
