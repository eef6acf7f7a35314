package app

import (
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/config"
)

// TestMachineCapacity: the ledger's machine is the config's (declared or
// detected, config.Server.Machine), each key not declared raised to the
// largest flavor; the booking rules are the config's requests and
// overcommit.
func TestMachineCapacity(t *testing.T) {
	const gib = 1 << 30
	detected := config.Machine{CPUs: 4, MemoryBytes: 16 * gib}
	flavors := []config.Flavor{{ID: "cpu.1", CPU: 1, Memory: gib}, {ID: "gpu.2", CPU: 2, Memory: 8 * gib, GPU: 2}}
	rules := func(c capacity.Capacity) capacity.Capacity {
		c.Overcommit = capacity.Overcommit{CPU: 2, Memory: 1}
		share := capacity.Resources{CPU: 0.25, Memory: 512 << 20}
		c.Shares = capacity.Shares{Instance: share, Notebook: share}
		return c
	}
	det, dec, fl := api.SourceDetected, api.SourceDeclared, api.SourceFlavor
	srcs := func(cpu, mem, gpu string) capacity.Sources { return capacity.Sources{CPU: cpu, Memory: mem, GPU: gpu} }
	tests := []struct {
		name string
		cfg  config.Server
		want capacity.Capacity
		src  capacity.Sources
	}{
		{"the machine, GPUs from the largest flavor", config.Server{Flavors: flavors}, rules(capacity.Capacity{CPU: 4, Memory: 16 * gib, GPU: 2}), srcs(det, det, fl)},
		{"raised to the largest flavor", config.Server{Flavors: []config.Flavor{{ID: "huge", CPU: 8, Memory: 32 * gib, GPU: 1}}},
			rules(capacity.Capacity{CPU: 8, Memory: 32 * gib, GPU: 1}), srcs(fl, fl, fl)},
		{"declared, smaller than the machine and a flavor", config.Server{Flavors: flavors, Capacity: config.Capacity{CPU: 1, Memory: 2 * gib}},
			rules(capacity.Capacity{CPU: 1, Memory: 2 * gib, GPU: 2}), srcs(dec, dec, fl)},
		{"declared GPUs", config.Server{Flavors: flavors, Capacity: config.Capacity{GPU: 8}}, rules(capacity.Capacity{CPU: 4, Memory: 16 * gib, GPU: 8}), srcs(det, det, dec)},
		{"a laptop declared, default flavors", config.Server{Capacity: config.Capacity{CPU: 2, Memory: 8 * gib}},
			rules(capacity.Capacity{CPU: 2, Memory: 8 * gib}), srcs(dec, dec, det)},
		{"booking rules", config.Server{Flavors: flavors, Requests: config.Requests{Service: config.Request{CPU: 0.5, Memory: gib}}, Overcommit: config.Overcommit{CPU: 3, Memory: 1.5}},
			capacity.Capacity{CPU: 4, Memory: 16 * gib, GPU: 2, Overcommit: capacity.Overcommit{CPU: 3, Memory: 1.5},
				Shares: capacity.Shares{Instance: capacity.Resources{CPU: 0.5, Memory: gib}, Notebook: capacity.Resources{CPU: 0.25, Memory: 512 << 20}}},
			srcs(det, det, fl)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.DataDir, cfg.Listen, cfg.S3Listen = "/d", config.DefaultListen, config.DefaultS3Listen
			cfg.ApplyDefaults(detected)
			got, src := machineCapacity(&cfg)
			if got != tt.want || src != tt.src {
				t.Errorf("%+v %+v\nwant %+v %+v", got, src, tt.want, tt.src)
			}
		})
	}
}
