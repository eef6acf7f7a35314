package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// Faults of training jobs, against a real server: nothing lost, nothing
// silent, nothing left behind.

func marker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	return "atelier-fault-" + hex.EncodeToString(b)
}

// TestFaultJobStoreFullAtFinalSync: the store's disk fills up while a job's
// outputs are synced at its end. The job is not Completed: it fails with
// output_sync, the store's answer and a hint, and no multipart upload of
// its outputs stays open.
func TestFaultJobStoreFullAtFinalSync(t *testing.T) {
	testenv.Root(t, "mounting a small tmpfs for the store")
	py := systemPython(t)
	dir := t.TempDir()
	objects := filepath.Join(dir, "objects")
	if err := os.MkdirAll(objects, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", objects, "tmpfs", 0, "size=12m,mode=0700"); err != nil {
		t.Fatalf("mounting a tmpfs at %s: %v", objects, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(objects, syscall.MNT_DETACH) })
	// A small reserve: the code upload fits, the outputs do not.
	cfg := writeJobConfig(t, t.TempDir(), py, "storage_reserve: 1MiB\n")
	s := &jobServer{server: startServer(t, dir, "--config", cfg), py: py}
	s.must(nil, "obs", "mb", "obs://bkt")
	// 40 MiB in two files of 20: multipart uploads (16 MiB parts), more
	// than the 12 MiB the store has.
	script := `import os, sys
out = [a.split('=', 1)[1] for a in sys.argv[1:] if a.startswith('--train_url=')][0]
for name in ('a.bin', 'b.bin'):
    with open(os.path.join(out, name), 'wb') as f:
        for _ in range(20):
            f.write(os.urandom(1 << 20))
print('wrote 40 MiB', flush=True)
`
	src := codeDir(t, map[string]string{"main.py": script})
	id := s.create(nil, "--name", "fills-store", "--code-dir", src, "--boot-file", "main.py", "--output", "train_url=obs://bkt/out/")
	j := s.wait(id, 4*time.Minute)
	st := j.Status
	if st.Phase == api.PhaseCompleted {
		t.Fatalf("the job is Completed although its outputs never reached the store: %+v\nlogs:\n%s", st.TaskStatuses, s.logs(id))
	}
	s.expectPhase(j, api.PhaseFailed, api.FailureOutputSync)
	ts := st.TaskStatuses[0]
	if !strings.Contains(ts.Message, "could not be synced") || !strings.Contains(ts.Hint, "store may be full") {
		t.Errorf("message %q hint %q: want what the store answered and a hint", ts.Message, ts.Hint)
	}
	logs := s.logs(id)
	wantLines(t, logs, "wrote 40 MiB", "error: the outputs could not be synced", "attempt 1 ended: output_sync")
	ups, err := sdkClient(s.server).ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		var keys []string
		for _, u := range ups.Uploads {
			keys = append(keys, aws.ToString(u.Key))
		}
		t.Errorf("multipart uploads left open: %q", keys)
	}
	// `job wait` says it too.
	if out, errOut, code := s.run(time.Minute, nil, "job", "wait", id); code != 1 || !strings.Contains(out+errOut, "outputs could not be synced") || !strings.Contains(out+errOut, "store may be full") {
		t.Errorf("job wait: exit %d\n%s%s", code, out, errOut)
	}
}

// markedProcs are the host's processes whose command line or environment
// holds mark, with the job attempt whose cgroup each is in (0: none).
func markedProcs(mark string) map[int]int {
	out := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		env, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if !bytes.Contains(cmd, []byte(mark)) && !bytes.Contains(env, []byte(mark)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue // ended, not reaped yet
			}
		}
		out[pid] = attemptOf(pid)
	}
	return out
}

var attemptGroupRE = regexp.MustCompile(`/atelier/job-[0-9a-f-]+-([0-9]+)$`)

// attemptOf is the attempt whose cgroup pid is in, 0 when none.
func attemptOf(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if m := attemptGroupRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return 0
}

// attemptGroups lists the cgroups of job id's attempts left on the host
// (v1 controllers and v2).
func attemptGroups(id string) []string {
	var out []string
	for _, root := range []string{"/sys/fs/cgroup/memory/atelier", "/sys/fs/cgroup/cpu/atelier", "/sys/fs/cgroup/cpuacct/atelier", "/sys/fs/cgroup/atelier"} {
		m, _ := filepath.Glob(filepath.Join(root, "job-"+id+"-*"))
		out = append(out, m...)
	}
	return out
}

// eventually polls cond until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool, explain func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s\n%s", what, d, explain())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killTheRunner sends SIGKILL to the runner of the job's attempt.
func (s *jobServer) killTheRunner(id string, attempt int) {
	s.t.Helper()
	p := filepath.Join(s.workDir(), "jobs", id, "attempt-"+strconv.Itoa(attempt), "runner.pid")
	b, err := os.ReadFile(p)
	if err != nil {
		s.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		s.t.Fatalf("killing runner %d: %v", pid, err)
	}
}

// TestFaultJobRunnerKilled: the runner of an attempt is killed with
// SIGKILL, with and without the sandbox. Its user code — also a child
// that left its process group and session — does not run on beside the
// retry; the retry runs alone; `job stop` after another kill ends
// everything at once; no attempt's cgroup is left.
func TestFaultJobRunnerKilled(t *testing.T) {
	testenv.Root(t, "watching every process of an attempt and its cgroups")
	for _, mode := range []string{"none", "bubblewrap"} {
		t.Run(mode, func(t *testing.T) {
			py := systemPython(t)
			extra := ""
			if mode == "none" {
				extra = "sandbox: none\n"
			}
			cfg := writeJobConfig(t, t.TempDir(), py, extra)
			s := &jobServer{server: startServer(t, t.TempDir(), "--config", cfg), py: py}
			mark := marker(t)
			// The user code starts a child in a session of its own (out of
			// reach of its process group and of a parent-death signal) and
			// both wait; the mark is in their command lines and in the
			// child's environment.
			script := `import os, subprocess, sys, time
mark = [a.split('=', 1)[1] for a in sys.argv[1:] if a.startswith('--mark=')][0]
env = dict(os.environ, FAULT_MARK=mark)
subprocess.Popen(['/bin/sleep', '100000'], env=env, start_new_session=True)
print('ready', flush=True)
time.sleep(100000)
`
			src := codeDir(t, map[string]string{"main.py": script})
			id := s.create(nil, "--name", "killed-"+mode, "--code-dir", src, "--boot-file", "main.py", "--param", "mark="+mark, "--retries", "3")
			explain := func() string {
				return fmt.Sprintf("processes (pid → attempt): %v\ncgroups: %q\njob log:\n%s\nserver log:\n%s",
					markedProcs(mark), attemptGroups(id), s.logs(id), tail(s.log.String(), 3000))
			}
			inAttempt := func(n int) func() bool {
				return func() bool {
					ps := markedProcs(mark)
					count := 0
					for _, a := range ps {
						if a == n {
							count++
						}
					}
					return count >= 2
				}
			}
			eventually(t, 2*time.Minute, "attempt 1's user code and its child run", inAttempt(1), explain)

			s.killTheRunner(id, 1)
			// The attempt is lost; it is retried once nothing of it runs.
			eventually(t, 2*time.Minute, "the retry's user code runs", inAttempt(2), explain)
			for pid, a := range markedProcs(mark) {
				if a != 2 {
					t.Errorf("process %d (attempt %d) runs beside the retry\n%s", pid, a, explain())
				}
			}
			for _, g := range attemptGroups(id) {
				if strings.HasSuffix(g, "-1") {
					t.Errorf("attempt 1's cgroup %s is left", g)
				}
			}
			if j := s.get(id); j.Status.Attempt != 2 || j.Status.Phase != api.PhaseRunning {
				t.Errorf("job %s attempt %d", j.Status.Phase, j.Status.Attempt)
			}

			// Kill the retry's runner too, and stop the job at once.
			s.killTheRunner(id, 2)
			s.must(nil, "job", "stop", id)
			j := s.wait(id, time.Minute)
			s.expectPhase(j, api.PhaseTerminated, api.FailureStopped)
			if ps := markedProcs(mark); len(ps) != 0 {
				t.Errorf("after job stop, processes of the job run on: %v\n%s", ps, explain())
			}
			if gs := attemptGroups(id); len(gs) != 0 {
				t.Errorf("after job stop, cgroups are left: %q", gs)
			}
		})
	}
}

// TestFaultJobWorkDirRemoved: the work dir of a job (staged inputs, local
// copies of the outputs) goes once the job has ended and its log is
// exported — the runner's own log is kept in the platform bucket — and at
// once when the job is deleted, even if its log could not be exported.
func TestFaultJobWorkDirRemoved(t *testing.T) {
	s := startJobServer(t)
	s.seedData("train")
	script := "import sys\nprint('args', sys.argv[1:])\n" +
		"out = [a.split('=', 1)[1] for a in sys.argv[1:] if a.startswith('--train_url=')][0]\n" +
		"open(out + 'model.bin', 'w').write('weights')\n"
	src := codeDir(t, map[string]string{"main.py": script})
	jobDir := func(id string) string { return filepath.Join(s.workDir(), "jobs", id) }
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	id := s.create(nil, "--name", "ends", "--code-dir", src, "--boot-file", "main.py",
		"--input", "data_url=obs://train/data/", "--output", "train_url=obs://train/out/")
	s.expectPhase(s.wait(id, 2*time.Minute), api.PhaseCompleted, api.FailureCompleted)
	eventually(t, time.Minute, "the ended job's work dir is removed", func() bool { return !exists(jobDir(id)) },
		func() string { return "server log:\n" + tail(s.log.String(), 3000) })
	if out := s.must(nil, "obs", "ls", "obs://atelier-system/logs/"+id+"/"); !strings.Contains(out, "attempt-1.runner.log") {
		t.Errorf("the runner's log is not kept: %s", out)
	}
	if out := s.must(nil, "obs", "cat", "obs://train/out/model.bin"); out != "weights" {
		t.Errorf("output %q", out)
	}

	// A job whose log cannot be exported keeps its dir until it is deleted.
	s.must(nil, "obs", "mb", "obs://explog")
	id2 := s.create(nil, "--name", "deleted", "--code-dir", src, "--boot-file", "main.py",
		"--input", "data_url=obs://train/data/", "--output", "train_url=obs://train/out2/", "--log-export", "obs://explog/logs/")
	s.must(nil, "obs", "rb", "obs://explog")
	s.expectPhase(s.wait(id2, 2*time.Minute), api.PhaseCompleted, api.FailureCompleted)
	// Once the export failed, the janitor has given up on the dir for now.
	eventually(t, time.Minute, "the failed log export is reported", func() bool {
		out, _, _ := s.run(time.Minute, nil, "job", "events", id2)
		return strings.Contains(out, "the log could not be exported")
	}, func() string { out, _, _ := s.run(time.Minute, nil, "job", "events", id2); return out })
	if !exists(jobDir(id2)) {
		t.Fatalf("the work dir of a job whose log was not exported is gone")
	}
	s.must(nil, "job", "delete", id2)
	if exists(jobDir(id2)) {
		t.Errorf("%s is still there after job delete", jobDir(id2))
	}
}

// TestFaultJobCreateInvalidSpecUploadsNothing: a job refused at create
// leaves no code in the platform bucket.
func TestFaultJobCreateInvalidSpecUploadsNothing(t *testing.T) {
	s := startJobServer(t)
	src := codeDir(t, map[string]string{"main.py": "print('hi')\n", "lib/util.py": "X = 1\n"})
	codeKeys := func() string {
		out, _, _ := s.run(time.Minute, nil, "obs", "ls", "-r", "obs://atelier-system/code/")
		return strings.TrimSpace(out)
	}
	for _, bad := range [][]string{
		{"--flavor", "gpu.64"},
		{"--input", "data_url=obs://nope/data/"},
		{"--param", "bad name=1"},
	} {
		args := append([]string{"job", "create", "--name", "bad", "--code-dir", src, "--boot-file", "main.py"}, bad...)
		_, errOut, code := s.run(time.Minute, nil, args...)
		if code == 0 || !strings.Contains(errOut, "ATL.") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal with its code", bad, code, errOut)
		}
		if keys := codeKeys(); keys != "" {
			t.Fatalf("%v: the refused job left code in atelier-system/code/:\n%s", bad, keys)
		}
	}
	// The same code dir with a valid spec is uploaded (the check above can
	// see an upload).
	s.create(nil, "--name", "good", "--code-dir", src, "--boot-file", "main.py")
	if keys := codeKeys(); !strings.Contains(keys, "main.py") {
		t.Errorf("a valid job's code is not in atelier-system/code/: %q", keys)
	}
}
