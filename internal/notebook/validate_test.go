package notebook

import (
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
)

func TestValidate(t *testing.T) {
	c := capacity.Capacity{CPU: 2, Memory: 8 << 30, Overcommit: capacity.Overcommit{CPU: 2, Memory: 1}}
	env := Env{Flavors: []api.Flavor{{ID: "cpu.small", CPU: 1, Memory: 2 << 30}, {ID: "gpu.1", CPU: 1, Memory: 2 << 30, GPU: 1}},
		Engines: []api.Engine{{Name: "pytorch", Python: "/usr/bin/python3"}}, DefaultEngine: "pytorch", Capacity: &c,
		IdleStop: time.Hour, Volume: 5 << 30, MaxVolume: 100 << 30}
	tests := []struct {
		name string
		req  api.CreateNotebookRequest
		code errs.Code
		msg  string
		want func(s spec) bool
	}{
		{name: "defaults", req: api.CreateNotebookRequest{Name: "nb-1", Flavor: "cpu.small"},
			want: func(s spec) bool {
				return s.Engine == "pytorch" && s.VolumeBytes == 5<<30 && s.IdleStop == time.Hour.Milliseconds() && s.MaxRuntime == 0
			}},
		{name: "size string and idle off", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", Volume: &api.NotebookVolumeRequest{Capacity: "10GiB"}, IdleStop: "off"},
			want: func(s spec) bool { return s.VolumeBytes == 10<<30 && s.IdleStop == 0 }},
		{name: "ModelArts GB and lease", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", Volume: &api.NotebookVolumeRequest{Category: "EVS", Capacity: float64(50)},
			Lease: &api.NotebookLeaseRequest{Duration: 3600000, Type: "timing"}},
			want: func(s spec) bool { return s.VolumeBytes == 50<<30 && s.MaxRuntime == 3600000 }},
		{name: "no name", req: api.CreateNotebookRequest{Flavor: "cpu.small"}, code: CodeInvalid, msg: "needs a name"},
		{name: "bad name", req: api.CreateNotebookRequest{Name: "../x", Flavor: "cpu.small"}, code: CodeInvalid, msg: "is not 1-64"},
		{name: "html name", req: api.CreateNotebookRequest{Name: "<img src=x>", Flavor: "cpu.small"}, code: CodeInvalid},
		{name: "unknown flavor", req: api.CreateNotebookRequest{Name: "a", Flavor: "huge"}, code: CodeFlavor, msg: `"huge" is not a flavor`},
		{name: "flavor never fits", req: api.CreateNotebookRequest{Name: "a", Flavor: "gpu.1"}, code: CodeFlavor, msg: "can never start here"},
		{name: "unknown engine", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", Engine: "tf"}, code: CodeEngine},
		{name: "volume too big", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", Volume: &api.NotebookVolumeRequest{Capacity: "1TiB"}}, code: CodeInvalid, msg: "outside"},
		{name: "volume too small", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", Volume: &api.NotebookVolumeRequest{Capacity: "1MiB"}}, code: CodeInvalid},
		{name: "volume garbage", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", Volume: &api.NotebookVolumeRequest{Capacity: "lots"}}, code: CodeInvalid},
		{name: "volume negative GB", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", Volume: &api.NotebookVolumeRequest{Capacity: float64(-3)}}, code: CodeInvalid},
		{name: "idle too short", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", IdleStop: "10s"}, code: CodeInvalid, msg: "shorter"},
		{name: "idle garbage", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", IdleStop: "soon"}, code: CodeInvalid},
		{name: "lease idle type", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", Lease: &api.NotebookLeaseRequest{Duration: 1, Type: "idle"}}, code: CodeInvalid},
		{name: "max runtime too long", req: api.CreateNotebookRequest{Name: "a", Flavor: "cpu.small", MaxRuntime: "10000h"}, code: CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := validate(&tt.req, env)
			if tt.code != "" {
				if errs.CodeOf(err) != tt.code || !strings.Contains(errs.UserMessage(err), tt.msg) {
					t.Fatalf("err = %v (code %s); want code %s containing %q", err, errs.CodeOf(err), tt.code, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(s) {
				t.Errorf("spec = %+v", s)
			}
		})
	}
}
