package job

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
)

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{"name":"j"},"algorithm":{"command":"echo hi"}}`,
		`{"kind":"job","metadata":{"name":"resnet","annotations":{"fault-tolerance/job-retry-num":"3","fault-tolerance/hang-retry":"TRUE"}},
		  "algorithm":{"code_dir":"/b00/code","boot_file":"/b00/code/src/train.py","engine":{"engine_name":"PyTorch"},
		  "parameters":[{"name":"lr","value":"0.1"}],
		  "inputs":[{"name":"data_url","remote":{"obs":{"obs_url":"s3://b00/data"}}}],
		  "outputs":[{"name":"train_url","access_method":"env","local_dir":"/home/ma-user/out","remote":{"obs":{"obs_url":"obs://b00/out"}}}],
		  "environments":{"NCCL_DEBUG":"INFO"}},
		  "spec":{"resource":{"flavor_id":"gpu.1"},"auto_stop":{"time_unit":"minutes","duration":30},
		  "log_export_path":{"obs_url":"/b00/logs"},"schedule_policy":{"priority":2}}}`,
		`{"metadata":{"name":"x"},"algorithm":{"code_dir":"obs://b00/c/","boot_file":"./a/../b.py"}}`,
		`{"metadata":{"name":"x"},"algorithm":{"code_dir":"obs://b00/c/","boot_file":"python t.py"}}`,
		`{"metadata":{"name":"x"},"algorithm":{"command":"x","inputs":[{"name":"a","local_dir":"/home/ma-user/a/./b//","remote":{"obs":{"obs_url":"obs://b00/"}}}]}}`,
		`{"metadata":{"name":"x"},"algorithm":{"command":"x","inputs":[{"name":"a","remote":{"dataset":{"id":"d"}}}]},"spec":{"resource":{"node_count":3}}}`,
		`{"metadata":{"name":"x"},"spec":{"log_export_path":{"obs_url":""},"schedule_policy":{}}}`,
		`null`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j := new(api.Job)
		if err := json.Unmarshal(data, j); err != nil {
			return
		}
		before := *clonePtr(j)
		if err := Normalize(j, testEnv); err != nil {
			if !reflect.DeepEqual(*j, before) {
				t.Fatalf("job changed on error %v", err)
			}
			return
		}
		again := clonePtr(j)
		if err := Normalize(again, testEnv); err != nil {
			t.Fatalf("a normalised job does not normalise: %v\n%+v", err, *j)
		}
		if !reflect.DeepEqual(*again, *j) {
			t.Fatalf("not idempotent:\n%+v\n%+v", *j, *again)
		}
		// The canonical form survives a JSON round trip.
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		rt := new(api.Job)
		if err := json.Unmarshal(b, rt); err != nil {
			t.Fatal(err)
		}
		if err := Normalize(rt, testEnv); err != nil {
			t.Fatalf("round-tripped job fails: %v", err)
		}
	})
}

func FuzzParseOBSURL(f *testing.F) {
	for _, s := range []string{"obs://b00/k", "s3://b00/", "/b00/k/", "obs:/x", "", "//", "obs://B/k", "HTTP://x/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, k, err := ParseOBSURL(s)
		if err != nil {
			return
		}
		b2, k2, err := ParseOBSURL("obs://" + b + "/" + k)
		if err != nil || b2 != b || k2 != k {
			t.Fatalf("%q → %q %q does not re-parse: %q %q %v", s, b, k, b2, k2, err)
		}
	})
}

// FuzzNormalizeFields fuzzes the strings of a job directly, which reaches
// the URL, path and name rules faster than JSON bytes.
func FuzzNormalizeFields(f *testing.F) {
	f.Add("j", "/b00/code", "/b00/code/train.py", "", "data_url", "s3://b00/d", "", "env", "K", "v", "GPU.1", "PyTorch", " 3", 0, 0)
	f.Add("j", "obs://b00/c/", "a/./b.sh", "", "x.y", "obs://b00/", "/home/ma-user/x/../y", "", "MA_X", "$", "", "", "x", 2, 4)
	f.Add("j", "", "", "python t.py", "-", "", "/home/ma-user/modelarts/", "parameter", "", "", "cpu.2", "python3", "", 1, 3)
	f.Add("j", "obs://b00/c", "s3://b00/c/t.py", "", "in", "/b00/d/", "/home/ma-user/in", "PARAMETER", "P", "1", "", "", "10", 1, 1)
	f.Fuzz(func(t *testing.T, name, codeDir, boot, command, chName, chURL, localDir, access, envK, envV, flavor, engine, retry string, nodes, prio int) {
		j := &api.Job{
			Metadata: api.JobMetadata{Name: name, Annotations: map[string]string{api.AnnotationRetryNum: retry}},
			Algorithm: api.JobAlgorithm{
				CodeDir: codeDir, BootFile: boot, Command: command, Engine: api.JobEngine{EngineName: engine},
				Parameters:   []api.JobParameter{{Name: envK, Value: envV}},
				Inputs:       []api.JobChannel{{Name: chName, LocalDir: localDir, AccessMethod: access, Remote: obsRemote(chURL)}},
				Outputs:      []api.JobChannel{{Name: chName + "_out", Remote: obsRemote(codeDir)}},
				Environments: map[string]string{envK: envV},
			},
			Spec: api.JobSpec{
				Resource:       api.JobResource{FlavorID: flavor, NodeCount: nodes},
				LogExportPath:  &api.OBSLocation{OBSURL: chURL},
				SchedulePolicy: &api.JobSchedulePolicy{Priority: prio},
			},
		}
		before := *clonePtr(j)
		if err := Normalize(j, testEnv); err != nil {
			if !reflect.DeepEqual(*j, before) {
				t.Fatalf("job changed on error %v", err)
			}
			return
		}
		again := clonePtr(j)
		if err := Normalize(again, testEnv); err != nil {
			t.Fatalf("a normalised job does not normalise: %v\n%+v", err, *j)
		}
		if !reflect.DeepEqual(*again, *j) {
			t.Fatalf("not idempotent:\n%+v\n%+v", *j, *again)
		}
	})
}
