package sandbox

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/atelier-dev/atelier/internal/errs"
)

// fakeHost is a small merged-/usr host root: /bin, /lib and /lib64 are
// symlinks, /sbin is a directory (as on an old layout), /etc has a few of
// the allow-listed files (localtime a symlink), secrets beside them, and a
// work dir.
func fakeHost() fstest.MapFS {
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	file := &fstest.MapFile{Mode: 0o644}
	link := func(target string) *fstest.MapFile {
		return &fstest.MapFile{Mode: fs.ModeSymlink | 0o777, Data: []byte(target)}
	}
	return fstest.MapFS{
		"bin":                        link("usr/bin"),
		"lib":                        link("usr/lib"),
		"lib64":                      link("usr/lib64"),
		"sbin":                       dir,
		"usr/bin/sh":                 file,
		"usr/local/bin/python3":      file,
		"etc/passwd":                 file,
		"etc/shadow":                 file,
		"etc/pip.conf":               file,
		"etc/ld.so.cache":            file,
		"etc/ssl/certs":              dir,
		"etc/localtime":              link("/usr/share/zoneinfo/Etc/UTC"),
		"etc/nsswitch.conf":          file,
		"etc/python3.11/site.py":     file,
		"opt/conda/bin/python":       file,
		"root/.pyenv":                dir,
		"data/meta.db":               file,
		"work/jobs/j1/home":          dir,
		"work/jobs/j1/home/in_0":     dir,
		"work/jobs/j1/in":            dir,
		"work/python/h1":             dir,
		"work/cache/venvs/u/py-abc":  dir,
		"work/jobs/j1/guest":         dir,
		"srv/ro":                     dir,
		"srv/ro/sub":                 dir,
		"work/services/s/i/model":    dir,
		"work/services/s/i/home":     dir,
		"work/services/s/i/home/inf": dir,
	}
}

// dropPlan is the plan of a spec without ExtraFiles and Files.
var dropPlan = plan{identity: IdentityDrop, seccompFD: 3, infoFD: 4, blockFD: 5, dataFDs: []int{6, 7, 8, 9}}

func TestArgs(t *testing.T) {
	head := []string{"--unshare-user", "--uid", "1000", "--gid", "100", "--disable-userns", "--info-fd", "4", "--block-fd", "5",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
		"--hostname", "atelier", "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--seccomp", "3"}
	system := []string{"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--ro-bind", "/sbin", "/sbin",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache", "--ro-bind", "/etc/ssl", "/etc/ssl",
		"--symlink", "/usr/share/zoneinfo/Etc/UTC", "/etc/localtime", "--ro-bind", "/etc/nsswitch.conf", "/etc/nsswitch.conf",
		"--ro-bind", "/etc/python3.11", "/etc/python3.11"}
	procDev := []string{"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"}
	etc := []string{"--ro-bind-data", "6", "/etc/passwd", "--ro-bind-data", "7", "/etc/group",
		"--ro-bind-data", "8", "/etc/hosts", "--ro-bind-data", "9", "/etc/hostname"}
	tail := func(dir string, argv ...string) []string {
		return append([]string{"--remount-ro", "/", "--chdir", dir, "--"}, argv...)
	}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	w := func(s ...string) []string { return s }

	tests := []struct {
		name string
		spec Spec
		plan plan
		want []string
	}{
		{
			name: "minimal: the allow-list, a private /tmp, synthetic /etc files",
			spec: Spec{Mode: ModeBubblewrap, Dir: "/", Argv: []string{"/bin/sh", "-c", "true"}},
			plan: dropPlan,
			want: cat(head, system, procDev, w("--tmpfs", "/tmp"), etc, tail("/", "/bin/sh", "-c", "true")),
		},
		{
			name: "job layout: parents before children, engine prefix, devices",
			spec: Spec{
				Mode:   ModeBubblewrap,
				System: []string{"/opt/conda", "/usr/local"},
				Binds: []Bind{
					{Src: "/work/jobs/j1/in", Dst: "/home/ma-user/modelarts/inputs/in_0", ReadOnly: true},
					{Src: "/work/jobs/j1/home", Dst: "/home/ma-user"},
					{Src: "/work/python/h1", Dst: "/opt/atelier/python", ReadOnly: true},
					{Src: "/work/jobs/j1/guest", Dst: "/run/atelier", ReadOnly: true},
				},
				Tmpfs:   []Tmpfs{{Dst: "/cache", Size: 1 << 30}},
				Devices: []string{"/dev/nvidia0"},
				Dir:     "/home/ma-user/modelarts/user-job-dir/code",
				Env:     []string{"SECRET=x"},
				Argv:    []string{"/usr/bin/python3", "train.py"},
			},
			plan: dropPlan,
			want: cat(head, system,
				// /usr/local is inside /usr already.
				w("--ro-bind", "/opt/conda", "/opt/conda"), procDev,
				w("--size", "1073741824", "--tmpfs", "/cache", "--tmpfs", "/tmp",
					"--bind", "/work/jobs/j1/home", "/home/ma-user",
					"--ro-bind", "/work/jobs/j1/guest", "/run/atelier",
					"--ro-bind", "/work/python/h1", "/opt/atelier/python",
					"--ro-bind", "/work/jobs/j1/in", "/home/ma-user/modelarts/inputs/in_0"),
				etc, w("--dev-bind", "/dev/nvidia0", "/dev/nvidia0"),
				tail("/home/ma-user/modelarts/user-job-dir/code", "/usr/bin/python3", "train.py")),
		},
		{
			name: "own /tmp, spec files after the synthetic ones and replacing one",
			spec: Spec{
				Mode:  ModeBubblewrap,
				Tmpfs: []Tmpfs{{Dst: "/tmp", Size: 4096}},
				Files: []File{{Dst: "/etc/hosts", Data: []byte("x")}, {Dst: "/home/ma-user/.config/x", Data: []byte("y")}},
				Dir:   "/", Argv: []string{"p"},
			},
			plan: plan{identity: IdentityDrop, seccompFD: 3, infoFD: 4, blockFD: 5, dataFDs: []int{6, 7, 8, 9, 10}},
			want: cat(head, system, procDev, w("--size", "4096", "--tmpfs", "/tmp"),
				w("--ro-bind-data", "6", "/etc/passwd", "--ro-bind-data", "7", "/etc/group", "--ro-bind-data", "8", "/etc/hostname",
					"--ro-bind-data", "9", "/etc/hosts", "--ro-bind-data", "10", "/home/ma-user/.config/x"),
				tail("/", "p")),
		},
		{
			name: "subordinate uids: the same, after ExtraFiles",
			spec: Spec{Mode: ModeBubblewrap, Dir: "/", Argv: []string{"p"}},
			plan: plan{identity: IdentitySubUID, seccompFD: 7, infoFD: 8, blockFD: 9, dataFDs: []int{10, 11, 12, 13}},
			want: cat(w("--unshare-user", "--uid", "1000", "--gid", "100", "--disable-userns", "--info-fd", "8", "--block-fd", "9",
				"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
				"--hostname", "atelier", "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--seccomp", "7"),
				system, procDev, w("--tmpfs", "/tmp"),
				w("--ro-bind-data", "10", "/etc/passwd", "--ro-bind-data", "11", "/etc/group",
					"--ro-bind-data", "12", "/etc/hosts", "--ro-bind-data", "13", "/etc/hostname"),
				tail("/", "p")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildArgs(tt.spec, tt.plan, fakeHost())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("args\n got: %s\nwant: %s", strings.Join(got, " "), strings.Join(tt.want, " "))
			}
			joined := strings.Join(got, " ")
			for _, e := range tt.spec.Env {
				if strings.Contains(joined, e) {
					t.Errorf("environment %q is on the command line", e)
				}
			}
			// Never the host's root, its secrets or the platform's dirs.
			for _, p := range []string{" / /", "/etc/shadow", "/etc/pip.conf", "/data", "/root", " /work "} {
				if strings.Contains(" "+joined+" ", p) {
					t.Errorf("the command line exposes %q: %s", p, joined)
				}
			}
		})
	}
}

func TestArgsErrors(t *testing.T) {
	ok := Spec{Mode: ModeBubblewrap, Dir: "/", Argv: []string{"p"}}
	tests := []struct {
		name string
		mod  func(s *Spec)
		plan *plan
		kind errs.Kind
		msg  string
	}{
		{"mode none", func(s *Spec) { s.Mode = ModeNone }, nil, errs.Invalid, "no bwrap"},
		{"unknown mode", func(s *Spec) { s.Mode = "docker" }, nil, errs.Invalid, "docker"},
		{"no argv", func(s *Spec) { s.Argv = nil }, nil, errs.Invalid, "no program"},
		{"relative dir", func(s *Spec) { s.Dir = "home" }, nil, errs.Invalid, "not an absolute path"},
		{"empty dir", func(s *Spec) { s.Dir = "" }, nil, errs.Invalid, "empty working directory"},
		{"relative system path", func(s *Spec) { s.System = []string{"opt"} }, nil, errs.Invalid, "system path"},
		{"system root", func(s *Spec) { s.System = []string{"/"} }, nil, errs.Invalid, "root directory"},
		{"missing bind source", func(s *Spec) { s.Binds = []Bind{{Src: "/nope", Dst: "/x"}} }, nil, errs.Invalid, "does not exist"},
		{"bind onto root", func(s *Spec) { s.Binds = []Bind{{Src: "/srv", Dst: "/"}} }, nil, errs.Invalid, "root directory"},
		{"bind into /proc", func(s *Spec) { s.Binds = []Bind{{Src: "/srv/ro", Dst: "/proc/1"}} }, nil, errs.Invalid, "/proc or /dev"},
		{"tmpfs over /dev", func(s *Spec) { s.Tmpfs = []Tmpfs{{Dst: "/dev/x"}} }, nil, errs.Invalid, "/proc or /dev"},
		{"negative tmpfs", func(s *Spec) { s.Tmpfs = []Tmpfs{{Dst: "/cache", Size: -1}} }, nil, errs.Invalid, "negative"},
		{"device outside /dev", func(s *Spec) { s.Devices = []string{"/etc/passwd"} }, nil, errs.Invalid, "not under /dev"},
		{"relative file", func(s *Spec) { s.Files = []File{{Dst: "etc/x"}} }, &plan{identity: IdentityDrop, dataFDs: []int{1, 2, 3, 4, 5}}, errs.Invalid, "not an absolute path"},
		{"missing mount point in a read-only bind", func(s *Spec) {
			s.Binds = []Bind{{Src: "/srv/ro", Dst: "/mnt/ro", ReadOnly: true}, {Src: "/srv/ro", Dst: "/mnt/ro/nope"}}
		}, nil, errs.Invalid, "read-only bind"},
		{"missing mount point in /usr", func(s *Spec) { s.Binds = []Bind{{Src: "/srv/ro", Dst: "/usr/nope"}} }, nil, errs.Invalid, "read-only bind"},
		{"identity none", func(s *Spec) {}, &plan{identity: IdentityNone, dataFDs: []int{1, 2, 3, 4}}, errs.Invalid, "cannot run a sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.mod(&s)
			p := dropPlan
			if tt.plan != nil {
				p = *tt.plan
			}
			_, err := buildArgs(s, p, fakeHost())
			if err == nil {
				t.Fatal("no error")
			}
			if errs.KindOf(err) != tt.kind || errs.CodeOf(err) != CodeBadSpec {
				t.Errorf("kind %v code %v, want %v %v (%v)", errs.KindOf(err), errs.CodeOf(err), tt.kind, CodeBadSpec, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
		})
	}
	// A mount point that exists inside a read-only bind is fine.
	s := ok
	s.Binds = []Bind{{Src: "/srv/ro", Dst: "/mnt/ro", ReadOnly: true}, {Src: "/work/python/h1", Dst: "/mnt/ro/sub", ReadOnly: true}}
	if _, err := buildArgs(s, dropPlan, fakeHost()); err != nil {
		t.Errorf("existing mount point: %v", err)
	}
}

func TestParseSubIDs(t *testing.T) {
	text := []byte("# comment\nbob:200000:65536\nalice:0:65536\nalice:100000:0\n1001:300000:10\nalice:100000:65536\n")
	tests := []struct {
		name      string
		id        int
		wantStart int
		ok        bool
	}{
		{"alice", 1000, 100000, true}, // zero start and zero count skipped
		{"bob", 1002, 200000, true},
		{"carol", 1001, 300000, true}, // by uid
		{"dave", 1003, 0, false},
	}
	for _, tt := range tests {
		r, ok := ParseSubIDs(text, tt.name, tt.id)
		if ok != tt.ok || (ok && r.Start != tt.wantStart) {
			t.Errorf("%s: %+v %v, want start %d %v", tt.name, r, ok, tt.wantStart, tt.ok)
		}
	}
}

func FuzzParseSubIDs(f *testing.F) {
	f.Add([]byte("alice:100000:65536\n"), "alice", 1000)
	f.Add([]byte("::\n:1:\nalice:-5:3\nalice:99999999999999999999:1"), "alice", 0)
	f.Fuzz(func(t *testing.T, b []byte, name string, id int) {
		r, ok := ParseSubIDs(b, name, id)
		if ok && (r.Start <= 0 || r.Count < 1) {
			t.Fatalf("accepted a range that is not usable: %+v", r)
		}
	})
}

func TestEtcFiles(t *testing.T) {
	got := map[string]string{}
	for _, f := range EtcFiles() {
		got[f.Dst] = string(f.Data)
	}
	if !strings.Contains(got["/etc/passwd"], "ma-user:x:1000:100:ma-user:/home/ma-user:/bin/bash\n") ||
		strings.Contains(got["/etc/passwd"], "atelier") {
		t.Errorf("passwd %q", got["/etc/passwd"])
	}
	if !strings.Contains(got["/etc/group"], "users:x:100:ma-user") || !strings.Contains(got["/etc/hosts"], "127.0.0.1\tlocalhost atelier") {
		t.Errorf("group %q hosts %q", got["/etc/group"], got["/etc/hosts"])
	}
}

func TestInstallDir(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/python3.11":                         "",
		"/usr/local/bin/python3":                      "",
		"/opt/conda/bin/python3.10":                   "/opt/conda",
		"/root/.pyenv/versions/3.11.7/bin/python3.11": "/root/.pyenv/versions/3.11.7",
		"/bin/python3":                                "",
		"/srv/py/python3":                             "",
	} {
		if got := installDir(in); got != want {
			t.Errorf("installDir(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestMountsBeneath(t *testing.T) {
	info := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
90 22 0:50 / /w/jobs/j1/cache rw,nosuid,nodev - tmpfs tmpfs rw,size=24576k
91 22 0:51 / /w/jobs/j1/home/in\040put rw - tmpfs tmpfs rw
92 90 0:52 / /w/jobs/j1/cache/deeper rw - tmpfs tmpfs rw
93 22 0:53 / /w/jobs/j10/cache rw - tmpfs tmpfs rw
94 22 0:54 / /w/jobs/j1 rw - tmpfs tmpfs rw
95 90 0:55 / /w/jobs/j1/cache rw - tmpfs tmpfs rw
`
	got := mountsBeneath(info, "/w/jobs/j1")
	// Deepest first; at one depth the later mount (on top) first.
	want := []string{"/w/jobs/j1/cache/deeper", "/w/jobs/j1/home/in put", "/w/jobs/j1/cache", "/w/jobs/j1/cache", "/w/jobs/j1"}
	if !slices.Equal(got, want) {
		t.Errorf("mountsBeneath = %q\nwant %q", got, want)
	}
	if got := mountsBeneath(info, "/w/other"); len(got) != 0 {
		t.Errorf("mounts beneath an unrelated dir: %q", got)
	}
	for in, want := range map[string]string{`a\040b`: "a b", `a\011b\012c\134d`: "a\tb\nc\\d", `plain`: "plain", `trail\04`: `trail\04`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
