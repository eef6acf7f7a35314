package runner

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/testenv"
)

func TestDiskFull(t *testing.T) {
	testenv.Root(t, "mounting the job's tmpfs")
	e := newEnv(t)
	j := e.job("j-disk", "fill.sh")
	j.Flavor.Disk = 4 << 20
	fs := newFakeServer(t, j, map[string]string{"fill.sh": `df -k "$TMPDIR" | tail -1; dd if=/dev/zero of="$TMPDIR/big" bs=1M count=10`})
	cfg := e.config(fs)
	e.run(context.Background(), cfg)
	ex := fs.exit()
	if strings.Contains(strings.Join(fs.texts(StreamRunner), "\n"), "cannot mount") {
		testenv.Need(t, "no tmpfs here: %q", fs.texts(StreamRunner))
	}
	if ex.Reason != api.FailureDiskFull {
		t.Fatalf("exit %+v\n%q", ex, fs.texts(""))
	}
	cache := filepath.Join(e.work, "jobs", "j-disk", "cache")
	if isMountPoint(cache) {
		t.Errorf("%s is still mounted", cache)
	}
}

func TestMemoryLimit(t *testing.T) {
	g, err := cgroup.New("atelier-runner-probe", cgroup.Limits{MemoryBytes: 64 << 20})
	if err != nil {
		testenv.Need(t, "%v", err)
	}
	g.Close()
	e := newEnv(t)
	j := e.job("j-oom", "hog.py")
	j.Flavor.Memory = 64 << 20
	fs := newFakeServer(t, j, map[string]string{"hog.py": "x = []\nwhile True:\n    x.append(bytearray(8 << 20))\n"})
	e.run(context.Background(), e.config(fs))
	ex := fs.exit()
	if ex.Reason != api.FailureOOM || !strings.Contains(ex.Message, "cpu.1") {
		t.Fatalf("exit %+v\n%q", ex, fs.texts(""))
	}
}

// TestFullLogLimit: what user code prints past the full log's limit is
// not written to the file (it would fill the work dir's disk); the file
// says where it stops.
func TestFullLogLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.log")
	f, err := openJobLog(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	k := newLogSink(1, nil, f, slog.New(slog.DiscardHandler))
	k.fullLimit = 1000
	line := strings.Repeat("y", 99)
	for range 100 {
		k.add(StreamStdout, []string{line})
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 1200 || !strings.Contains(string(b), "this log file stops here") || strings.Count(string(b), line) != 10 {
		t.Fatalf("log of %d bytes:\n%s", len(b), b)
	}
	if got := k.Tail(); len(got) == 0 || got[len(got)-1] != line {
		t.Fatalf("the tail is still kept: %v", got)
	}
}
