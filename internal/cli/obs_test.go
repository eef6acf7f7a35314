package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
)

// runObs runs the CLI in process as Run does, with `atelier obs` talking
// to store instead of an S3 endpoint.
func runObs(t *testing.T, store obsclient.S3, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
	root := newRootCmd(a)
	for _, c := range root.Commands() {
		if c.Name() == "obs" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newObsGroup(a, func(*config.ClientConfig, int) (obsclient.S3, error) { return store, nil }))
	root.SetArgs(args)
	ctx := context.Background()
	code := ExitOK
	if cmd, err := root.ExecuteContextC(ctx); err != nil {
		if cmd == nil {
			cmd = root
		}
		code = a.report(ctx, cmd, err)
	}
	return result{code, out.String(), errb.String()}
}

// obsEnv is a client environment with HOME in a fresh directory.
func obsEnv(t *testing.T) map[string]string {
	return map[string]string{
		"HOME":                t.TempDir(),
		"ATELIER_ENDPOINT":    "http://127.0.0.1:8080",
		"ATELIER_S3_ENDPOINT": "http://127.0.0.1:9000",
		"ATELIER_ACCESS_KEY":  "AKTEST",
		"ATELIER_SECRET_KEY":  "SKTEST",
	}
}

// obsStore is a store with bucket bkt holding ds/a.txt and ds/b/c.txt.
func obsStore() *obsmem.Store {
	s := obsmem.New()
	mod := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	s.PutObject("bkt", "ds/a.txt", []byte("alpha"), mod)
	s.PutObject("bkt", "ds/b/c.txt", []byte("charlie"), mod)
	return s
}

func TestObsCommands(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "hello.txt", "hello", 0o644)
	if err := os.MkdirAll(filepath.Join(dir, "data", "cat"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "data", "cat"), "1.jpg", "meow", 0o644)
	data := filepath.Join(dir, "data")

	tests := []struct {
		name    string
		args    []string
		code    int
		out     []string // substrings of stdout
		noOut   bool     // stdout must be empty
		errOut  []string // substrings of stderr
		keys    []string // keys of bkt afterwards, when set
		content map[string]string
	}{
		{name: "mb", args: []string{"obs", "mb", "obs://newbkt"}, out: []string{"created bucket obs://newbkt"}},
		{name: "mb bad name", args: []string{"obs", "mb", "obs://Bad_Name"}, code: ExitUsage,
			errOut: []string{`invalid bucket name "Bad_Name": it contains the upper-case letter`, "Run 'atelier obs mb --help' for usage."}},
		{name: "mb with a key", args: []string{"obs", "mb", "obs://bkt/x"}, code: ExitUsage, errOut: []string{"names an object"}},
		{name: "mb exists", args: []string{"obs", "mb", "obs://bkt"}, code: ExitFailure,
			errOut: []string{`atelier: bucket "bkt" already exists and is yours (BucketAlreadyOwnedByYou)`}},
		{name: "rb not empty", args: []string{"obs", "rb", "obs://bkt"}, code: ExitFailure,
			errOut: []string{`bucket "bkt" is not empty (BucketNotEmpty); hint: delete its objects first, or use ` + "`atelier obs rb --force obs://bkt`"}},
		{name: "rb force", args: []string{"obs", "rb", "obs://bkt", "--force"}, out: []string{"deleted bucket obs://bkt and 2 objects"}},
		{name: "ls buckets", args: []string{"obs", "ls"}, out: []string{"obs://bkt\n"}},
		{name: "ls buckets long", args: []string{"obs", "ls", "-l"}, out: []string{"CREATED", "BUCKET", "obs://bkt"}},
		{name: "ls prefix without slash", args: []string{"obs", "ls", "obs://bkt/ds"}, out: []string{"obs://bkt/ds/a.txt\nobs://bkt/ds/b/\n"}},
		{name: "ls recursive long", args: []string{"obs", "ls", "-r", "-l", "s3://bkt/ds/"},
			out: []string{"SIZE", "LAST MODIFIED", "5 B", "obs://bkt/ds/b/c.txt", "2 entries, 12 B"}},
		{name: "ls near miss", args: []string{"obs", "ls", "obs://bkt/DS/"}, code: ExitFailure,
			errOut: []string{"atelier: nothing found at obs://bkt/DS/; hint: keys are case-sensitive: did you mean obs://bkt/ds/?"}},
		{name: "ls local path", args: []string{"obs", "ls", "data"}, code: ExitUsage, errOut: []string{`"data" is not an OBS URL`}},
		{name: "ls two args", args: []string{"obs", "ls", "obs://bkt", "obs://x"}, code: ExitUsage, errOut: []string{`unexpected argument "obs://x"`}},
		{name: "stat", args: []string{"obs", "stat", "obs://bkt/ds/a.txt"},
			out: []string{"URL:", "obs://bkt/ds/a.txt", "Size:", "5 (5 B)", "ETag:", "Last modified:"}},
		{name: "stat prefix", args: []string{"obs", "stat", "obs://bkt/ds"}, code: ExitFailure,
			errOut: []string{"obs://bkt/ds is a directory, not an object; hint: list it with `atelier obs ls obs://bkt/ds/`"}},
		{name: "stat missing", args: []string{"obs", "stat", "obs://bkt/ds/x"}, code: ExitFailure,
			errOut: []string{"atelier: obs://bkt/ds/x does not exist (NoSuchKey)"}},
		{name: "cat", args: []string{"obs", "cat", "obs://bkt/ds/b/c.txt"}, out: []string{"charlie"}},
		{name: "presign", args: []string{"obs", "presign", "obs://bkt/ds/a.txt", "--expires", "2h"}, out: []string{"X-Amz-Expires=7200"}},
		{name: "presign post", args: []string{"obs", "presign", "--post", "obs://bkt/up/", "--max-size", "1KiB"},
			out: []string{`"url": "http://127.0.0.1:9000/bkt"`, `"key": "up/${filename}"`, `"x-amz-credential": "AKTEST/`, `"policy": "`, `"x-amz-signature": "`}},
		{name: "presign post exact key", args: []string{"obs", "presign", "--post", "obs://bkt/up/a.txt", "--content-type", "text/"},
			out: []string{`"key": "up/a.txt"`, `"Content-Type": "text/"`}},
		{name: "presign post bad size", args: []string{"obs", "presign", "--post", "obs://bkt/up/", "--max-size", "lots"}, code: ExitUsage,
			errOut: []string{`--max-size "lots" is not a size`}},
		{name: "presign max-size without post", args: []string{"obs", "presign", "obs://bkt/ds/a.txt", "--max-size", "1KiB"}, code: ExitUsage,
			errOut: []string{"--max-size and --content-type go with --post"}},
		{name: "presign too long", args: []string{"obs", "presign", "obs://bkt/ds/a.txt", "--expires", "200h"}, code: ExitUsage,
			errOut: []string{"--expires must be between 1s and 168h"}},
		{name: "rm prefix without -r", args: []string{"obs", "rm", "obs://bkt/ds"}, code: ExitFailure,
			errOut: []string{"obs://bkt/ds is a directory; use -r to delete its contents"}},
		{name: "rm -r", args: []string{"obs", "rm", "-r", "obs://bkt/ds"}, out: []string{"deleted 2 objects under obs://bkt/ds/"}, keys: []string{}},
		{name: "rm", args: []string{"obs", "rm", "obs://bkt/ds/a.txt"}, out: []string{"deleted obs://bkt/ds/a.txt"}, keys: []string{"ds/b/c.txt"}},
		{name: "cp file", args: []string{"obs", "cp", file, "obs://bkt/in/"}, out: []string{"uploaded 1 file, 5 B in "},
			content: map[string]string{"in/hello.txt": "hello"}},
		{name: "cp -r contents", args: []string{"obs", "cp", "-r", data, "obs://bkt/up", "-j", "2", "-p", "2", "--part-size", "8MiB"},
			out: []string{"uploaded 1 file"}, content: map[string]string{"up/cat/1.jpg": "meow"}},
		{name: "cp quiet", args: []string{"obs", "cp", "-q", file, "obs://bkt/q.txt"}, noOut: true, content: map[string]string{"q.txt": "hello"}},
		{name: "cp -o json prints no summary", args: []string{"obs", "cp", "-o", "json", file, "obs://bkt/j.txt"}, noOut: true},
		{name: "cp dir without -r", args: []string{"obs", "cp", data, "obs://bkt/"}, code: ExitFailure,
			errOut: []string{"atelier: " + data + " is a directory; use -r to copy its contents"}},
		{name: "cp missing source", args: []string{"obs", "cp", filepath.Join(dir, "nope.txt"), "obs://bkt/"}, code: ExitFailure,
			errOut: []string{"atelier: local source " + filepath.Join(dir, "nope.txt") + " does not exist"}},
		{name: "cp prefix near miss", args: []string{"obs", "cp", "-r", "obs://bkt/DS/", dir}, code: ExitFailure,
			errOut: []string{"did you mean obs://bkt/ds/?"}},
		{name: "cp download exists", args: []string{"obs", "cp", "obs://bkt/ds/a.txt", file}, code: ExitFailure,
			errOut: []string{file + " already exists; hint: use -f (--force) to replace it"}},
		{name: "cp both local", args: []string{"obs", "cp", file, "x"}, code: ExitUsage, errOut: []string{"both local paths"}},
		{name: "cp missing DST", args: []string{"obs", "cp", file}, code: ExitUsage, errOut: []string{"missing argument DST"}},
		{name: "cp bad URL", args: []string{"obs", "cp", file, "obs:/bkt/x"}, code: ExitUsage,
			errOut: []string{`"obs:/bkt/x" is a malformed OBS URL; write obs://BUCKET/PATH`}},
		{name: "cp bad jobs", args: []string{"obs", "cp", "-j", "0", file, "obs://bkt/"}, code: ExitUsage, errOut: []string{"-j/--jobs must be between 1 and 256"}},
		{name: "cp bad part size", args: []string{"obs", "cp", "--part-size", "1MiB", file, "obs://bkt/"}, code: ExitUsage,
			errOut: []string{"--part-size must be between 5MiB and 5GiB"}},
		{name: "cp unknown flag", args: []string{"obs", "cp", "--bogus", file, "obs://bkt/"}, code: ExitUsage, errOut: []string{"unknown flag: --bogus"}},
		{name: "cp to missing bucket", args: []string{"obs", "cp", file, "obs://nobkt/"}, code: ExitFailure,
			errOut: []string{`atelier: bucket "nobkt" does not exist (NoSuchBucket); hint: list your buckets with`}},
		{name: "mv object", args: []string{"obs", "mv", "obs://bkt/ds/a.txt", "obs://bkt/moved/"}, out: []string{"moved 1 file"},
			keys: []string{"ds/b/c.txt", "moved/a.txt"}},
		{name: "sync", args: []string{"obs", "sync", data, "obs://bkt/ds", "--delete"}, out: []string{"synced 1 file", "2 deleted"},
			keys: []string{"ds/cat/1.jpg"}},
		{name: "sync a file", args: []string{"obs", "sync", file, "obs://bkt/ds"}, code: ExitFailure, errOut: []string{"sync works on directories"}},
		{name: "unknown obs command", args: []string{"obs", "copy"}, code: ExitUsage, errOut: []string{`unknown command "copy" for "atelier obs"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := obsStore()
			r := runObs(t, store, obsEnv(t), tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, s := range tt.out {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout %q lacks %q", r.stdout, s)
				}
			}
			if tt.noOut && r.stdout != "" {
				t.Errorf("stdout %q, want none", r.stdout)
			}
			for _, s := range tt.errOut {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr %q lacks %q", r.stderr, s)
				}
			}
			lines := strings.Count(r.stderr, "\n")
			switch tt.code {
			case ExitFailure:
				if lines != 1 || !strings.HasPrefix(r.stderr, "atelier: ") {
					t.Errorf("error is not one line: %q", r.stderr)
				}
			case ExitUsage:
				if lines != 2 {
					t.Errorf("usage error is not two lines: %q", r.stderr)
				}
			}
			if tt.keys != nil {
				if got := store.Keys("bkt"); strings.Join(got, ",") != strings.Join(tt.keys, ",") {
					t.Errorf("keys %q, want %q", got, tt.keys)
				}
			}
			for k, want := range tt.content {
				if got, ok := store.Object("bkt", k); !ok || string(got) != want {
					t.Errorf("object %s = %q, %v; want %q", k, got, ok, want)
				}
			}
		})
	}
}

func TestObsOutputFormats(t *testing.T) {
	store := obsStore()
	r := runObs(t, store, obsEnv(t), "obs", "ls", "obs://bkt/ds/", "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var list struct {
		Total int         `json:"total"`
		Count int         `json:"count"`
		Items []obsObject `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if list.Total != 2 || list.Items[0].URL != "obs://bkt/ds/a.txt" || list.Items[0].Size != 5 ||
		list.Items[1].Key != "ds/b/" || !list.Items[1].Dir {
		t.Errorf("list %+v", list)
	}

	r = runObs(t, store, obsEnv(t), "obs", "stat", "obs://bkt/ds/a.txt", "-o", "yaml")
	var obj obsObject
	if err := yaml.Unmarshal([]byte(r.stdout), &obj); err != nil || obj.Key != "ds/a.txt" || obj.ETag == "" || obj.LastModified == 0 {
		t.Errorf("stat yaml %q: %+v %v", r.stdout, obj, err)
	}

	r = runObs(t, store, obsEnv(t), "obs", "ls", "-o", "json")
	if !strings.Contains(r.stdout, `"name": "bkt"`) || !strings.Contains(r.stdout, `"create_time"`) {
		t.Errorf("buckets json %s", r.stdout)
	}
}

func TestObsDownloadAndSync(t *testing.T) {
	store := obsStore()
	env := obsEnv(t)
	out := filepath.Join(t.TempDir(), "out")
	r := runObs(t, store, env, "obs", "cp", "-r", "obs://bkt/ds", out)
	if r.code != ExitOK || !strings.Contains(r.stdout, "downloaded 2 files, 12 B") {
		t.Fatalf("exit %d: %q %q", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "b", "c.txt")); string(b) != "charlie" {
		t.Errorf("c.txt = %q", b)
	}
	r = runObs(t, store, env, "obs", "cp", "-r", "obs://bkt/ds", out)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "2 local files already exist") {
		t.Errorf("second cp: %d %q", r.code, r.stderr)
	}
	r = runObs(t, store, env, "obs", "cp", "-rf", "obs://bkt/ds", out)
	if r.code != ExitOK {
		t.Errorf("cp -f: %d %q", r.code, r.stderr)
	}
	r = runObs(t, store, env, "obs", "sync", "obs://bkt/ds/", out)
	if r.code != ExitOK || !strings.Contains(r.stdout, "synced 0 files, 0 B in ") || !strings.Contains(r.stdout, "2 unchanged") {
		t.Errorf("sync: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestObsResumeCheckpointNextToConfig(t *testing.T) {
	store := obsStore()
	env := obsEnv(t)
	cfgDir := t.TempDir()
	env["ATELIER_CONFIG"] = filepath.Join(cfgDir, "admin.yaml")
	big := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(big, bytes.Repeat([]byte("0123456789abcdef"), 12<<16), 0o644); err != nil { // 12 MiB
		t.Fatal(err)
	}
	fail := true
	store.SetFault(func(c obsmem.Call) error {
		if c.Op == "UploadPart" && c.Part == 2 && fail {
			return obsclient.S3Error("InternalError", "injected", c.Bucket, c.Key)
		}
		return nil
	})
	r := runObs(t, store, env, "obs", "cp", big, "obs://bkt/big.bin", "--part-size", "5MiB", "-p", "1")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "(InternalError); hint: run the command again; copies resume where they stopped") {
		t.Fatalf("first run: %d %q", r.code, r.stderr)
	}
	cps, _ := filepath.Glob(filepath.Join(cfgDir, "checkpoints", "*.json"))
	if len(cps) != 1 {
		t.Fatalf("checkpoints %v", cps)
	}
	fail = false
	r = runObs(t, store, env, "obs", "cp", big, "obs://bkt/big.bin", "--part-size", "5MiB", "-p", "1")
	if r.code != ExitOK || !strings.Contains(r.stderr, "atelier: warning: resuming the upload of "+big+": 1 of 3 parts") {
		t.Fatalf("second run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if n := store.Count("CreateMultipart"); n != 1 {
		t.Errorf("%d uploads created", n)
	}
	if cps, _ := filepath.Glob(filepath.Join(cfgDir, "checkpoints", "*.json")); len(cps) != 0 {
		t.Errorf("checkpoint left: %v", cps)
	}
}

func TestObsThroughRun(t *testing.T) {
	env := obsEnv(t)
	r := runCLI(t, env, "", "obs")
	if r.code != ExitOK || !strings.Contains(r.stdout, "mb") || !strings.Contains(r.stdout, "presign") {
		t.Errorf("obs help: %d %q", r.code, r.stdout)
	}
	r = runCLI(t, env, "", "obs", "cp", "only-one")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "missing argument DST") {
		t.Errorf("usage: %d %q", r.code, r.stderr)
	}

	noS3 := obsEnv(t)
	delete(noS3, "ATELIER_S3_ENDPOINT")
	r = runCLI(t, noS3, "", "obs", "ls")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "atelier: no S3 endpoint is configured; hint: set s3_endpoint") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("no endpoint: %d %q", r.code, r.stderr)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env["ATELIER_S3_ENDPOINT"] = "http://" + l.Addr().String()
	l.Close()
	r = runCLI(t, env, "", "obs", "ls")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "atelier: cannot reach the S3 endpoint http://"+l.Addr().String()) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("unreachable: %d %q", r.code, r.stderr)
	}
}
