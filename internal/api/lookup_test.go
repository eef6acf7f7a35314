package api

import "testing"

func TestLookups(t *testing.T) {
	fs := []Flavor{{ID: "cpu.1", CPU: 1}, {ID: "gpu.1", GPU: 1}}
	for _, tt := range []struct {
		id string
		ok bool
	}{{"cpu.1", true}, {"gpu.1", true}, {"CPU.1", false}, {"", false}} {
		if f, ok := FlavorByID(fs, tt.id); ok != tt.ok || (ok && f.ID != tt.id) {
			t.Errorf("FlavorByID(%q) = %+v, %v", tt.id, f, ok)
		}
	}
	es := []Engine{{Name: "PyTorch"}, {Name: "python3"}}
	for _, tt := range []struct {
		name, want string
	}{{"pytorch", "PyTorch"}, {"PYTHON3", "python3"}, {"tensorflow", ""}, {"", ""}} {
		e, ok := EngineByName(es, tt.name)
		if ok != (tt.want != "") || e.Name != tt.want {
			t.Errorf("EngineByName(%q) = %+v, %v; want %q", tt.name, e, ok, tt.want)
		}
	}
}
