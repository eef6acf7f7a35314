package failure

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

func FuzzClassify(f *testing.F) {
	for _, l := range [][]string{valueErrorLog, mmcvLog, cudaOOMLog2, killedLog, enospcLog, obsPathLog, imageFolderLog, kerasLog, rankPrefixLog, pipLog} {
		f.Add(strings.Join(l, "\n"), 1, "", uint16(0), "run")
	}
	f.Add("Killed", 137, "SIGKILL", uint16(1), "")
	f.Add("", 0, "", uint16(0xffff), "staging")
	f.Add("\r\r\x1b[", -1, "x", uint16(0x40), "install")
	f.Fuzz(func(t *testing.T, log string, exit int, sig string, flags uint16, stage string) {
		facts := Facts{
			ExitCode: exit, Signal: sig, Log: strings.Split(log, "\n"), Stage: stage, StageErr: log,
			OOMKilled: flags&1 != 0, DiskFull: flags&2 != 0, MaxRuntimeHit: flags&4 != 0, StoppedByUser: flags&8 != 0,
			Hung: flags&16 != 0, HasRequirements: flags&32 != 0, Flavor: "cpu.1", MemoryLimit: int64(flags) << 20,
			DiskUsed: int64(flags&0xf0) << 20, DiskSize: int64(flags&0xf00) << 20, MaxRuntime: time.Duration(flags) * time.Second,
			Engine: "pytorch",
		}
		r := Classify(facts)
		if !slices.Contains(reasons, r.Reason) {
			t.Fatalf("unknown reason %q", r.Reason)
		}
		if r.Reason == api.FailureCompleted {
			if r.Message != "" {
				t.Fatalf("completed with message %q", r.Message)
			}
			return
		}
		if r.Message == "" || strings.ContainsAny(r.Message, "\n\r\x00") || strings.ContainsAny(r.Hint, "\n\r\x00") {
			t.Fatalf("bad message %q / hint %q", r.Message, r.Hint)
		}
		if len(r.Message) > 2000 {
			t.Fatalf("message of %d bytes", len(r.Message))
		}
	})
}
