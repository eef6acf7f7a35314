package app

import (
	"testing"

	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/config"
)

func TestMachineCapacity(t *testing.T) {
	const gib = 1 << 30
	m := config.Machine{CPUs: 4, MemoryBytes: 16 * gib}
	flavors := []config.Flavor{{ID: "cpu.1", CPU: 1, Memory: gib}, {ID: "gpu.2", CPU: 2, Memory: 8 * gib, GPU: 2}}
	tests := []struct {
		name string
		cfg  config.Server
		want capacity.Capacity
	}{
		{"the machine", config.Server{Flavors: flavors}, capacity.Capacity{CPU: 4, Memory: 16 * gib, GPU: 2}},
		{"raised to the largest flavor", config.Server{Flavors: []config.Flavor{{ID: "huge", CPU: 8, Memory: 32 * gib, GPU: 1}}},
			capacity.Capacity{CPU: 8, Memory: 32 * gib, GPU: 1}},
		{"configured, smaller than the machine and a flavor", config.Server{Flavors: flavors, Capacity: config.Capacity{CPU: 1, Memory: 2 * gib}},
			capacity.Capacity{CPU: 1, Memory: 2 * gib, GPU: 2}},
		{"configured GPUs", config.Server{Flavors: flavors, Capacity: config.Capacity{GPU: 8}}, capacity.Capacity{CPU: 4, Memory: 16 * gib, GPU: 8}},
	}
	for _, tt := range tests {
		if got := machineCapacity(&tt.cfg, m); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
