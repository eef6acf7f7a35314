package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// stagingScript prints every file under --data_url with its size and
// sha256, sorted, then the directories.
const stagingScript = `import hashlib, os, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
root = args["data_url"]
out = []
for d, ds, fs in os.walk(root):
    for f in fs:
        p = os.path.join(d, f)
        out.append("FILE %s %d %s" % (os.path.relpath(p, root), os.path.getsize(p), hashlib.sha256(open(p, "rb").read()).hexdigest()))
    for x in ds:
        out.append("DIR %s" % os.path.relpath(os.path.join(d, x), root))
for l in sorted(out):
    print(l)
`

// TestJobStagesInputsThroughServer: a job's input is listed and its small
// objects sent through the runner protocol (tar streams), a large one over
// S3, into the same content cache; the second job on it downloads nothing.
func TestJobStagesInputsThroughServer(t *testing.T) {
	s := startJobServer(t)
	s.must(nil, "obs", "mb", "obs://stage")
	data := t.TempDir()
	var want []string
	put := func(rel string, b []byte) {
		p := filepath.Join(data, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		want = append(want, fmt.Sprintf("FILE %s %d %s", rel, len(b), hex.EncodeToString(sum[:])))
	}
	for i := range 120 {
		put(fmt.Sprintf("class_%d/img_%03d.bin", i%3, i), []byte(strings.Repeat(fmt.Sprint(i), 100+i*53)))
	}
	put("中文 dir/file with spaces.txt", []byte("unicode"))
	put("empty.bin", nil)
	put("large/weights.bin", []byte(strings.Repeat("w", 9<<20))) // over the runner's BulkMaxSize: S3
	for _, d := range []string{"class_0", "class_1", "class_2", "large", "中文 dir"} {
		want = append(want, "DIR "+d)
	}
	slices.Sort(want)
	s.must(nil, "obs", "cp", "-r", "-q", data+"/", "obs://stage/ds/")
	src := codeDir(t, map[string]string{"list.py": stagingScript})

	run := func(name string) (string, api.Job) {
		t.Helper()
		id := s.create(nil, "--name", name, "--code-dir", src, "--boot-file", "list.py", "--input", "data_url=obs://stage/ds/")
		j := s.wait(id, 2*time.Minute)
		s.expectPhase(j, api.PhaseCompleted, api.FailureCompleted)
		return s.logs(id), j
	}
	before := strings.Count(s.log.String(), "route=/api/v1/runner/jobs/{id}/inputs/{name}/objects")
	logs, _ := run("stage-1")
	var got []string
	for _, l := range strings.Split(logs, "\n") {
		if i := strings.Index(l, "FILE "); i >= 0 {
			got = append(got, l[i:])
		} else if i := strings.Index(l, "DIR "); i >= 0 && !strings.Contains(l, "[atelier]") {
			got = append(got, l[i:])
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the job saw\n%s\nwant\n%s\nlog:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), logs)
	}
	if !strings.Contains(logs, "staged the inputs: 123 files (0 from the cache") {
		t.Errorf("no first-run staging line:\n%s", logs)
	}
	streams := strings.Count(s.log.String(), "route=/api/v1/runner/jobs/{id}/inputs/{name}/objects") - before
	// (The listing comes with the runner's fetch of the job when the
	// server made it by then, else from the inputs call.)
	if streams < 1 {
		t.Errorf("the inputs did not come through the runner protocol (%d streams); server log:\n%s", streams, tail(s.log.String(), 3000))
	}
	logs, _ = run("stage-2")
	if !strings.Contains(logs, "staged the inputs: 123 files (123 from the cache, 0 B downloaded)") {
		t.Errorf("second job did not hit the cache:\n%s", logs)
	}
	if n := strings.Count(s.log.String(), "route=/api/v1/runner/jobs/{id}/inputs/{name}/objects") - before; n != streams {
		t.Errorf("the second job opened %d streams", n-streams)
	}
}
