package sandbox

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/atelier-dev/atelier/internal/errs"
)

// fakeHost is a small host root: /bin is a symlink, /home and /opt exist,
// /cache and /opt/atelier do not.
func fakeHost() fstest.MapFS {
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	file := &fstest.MapFile{Mode: 0o644}
	return fstest.MapFS{
		"bin":                     {Mode: fs.ModeSymlink | 0o777, Data: []byte("usr/bin")},
		"usr/bin/sh":              file,
		"etc/passwd":              file,
		"home/alice/notes":        file,
		"opt/conda":               dir,
		"proc":                    dir,
		"dev":                     dir,
		"tmp":                     dir,
		"data/meta.db":            file,
		"work/jobs/j1/home":       dir,
		"work/jobs/j1/cache":      dir,
		"work/jobs/j1/home/in_0":  dir,
		"work/python/h1":          dir,
		"work/cache/venvs/py-abc": dir,
		"srv/ro":                  dir,
	}
}

func TestArgs(t *testing.T) {
	tail := func(dir string, argv ...string) []string {
		return append([]string{"--unshare-pid", "--unshare-ipc", "--unshare-uts",
			"--die-with-parent", "--new-session", "--chdir", dir, "--"}, argv...)
	}
	procDev := []string{"--proc", "/proc", "--dev", "/dev"}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	w := func(s ...string) []string { return s }

	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{
			name: "minimal",
			spec: Spec{Mode: ModeBubblewrap, Dir: "/", Argv: []string{"/bin/sh", "-c", "true"}},
			want: cat(w("--ro-bind", "/", "/"), procDev, tail("/", "/bin/sh", "-c", "true")),
		},
		{
			name: "hides, existing mount points",
			spec: Spec{
				Mode:  ModeBubblewrap,
				Hide:  []string{"/data", "/work", "/tmp", "/work/jobs", "/nonexistent"},
				Binds: []Bind{{Src: "/work/jobs/j1/home", Dst: "/home/alice"}},
				Dir:   "/home/alice", Argv: []string{"prog"},
			},
			want: cat(w("--ro-bind", "/", "/", "--tmpfs", "/data", "--tmpfs", "/work", "--tmpfs", "/tmp",
				"--bind", "/work/jobs/j1/home", "/home/alice"), procDev, tail("/home/alice", "prog")),
		},
		{
			name: "bind under a hidden dir needs no shadow",
			spec: Spec{
				Mode:  ModeBubblewrap,
				Hide:  []string{"/work"},
				Binds: []Bind{{Src: "/work/cache/venvs/py-abc", Dst: "/work/cache/venvs/py-abc", ReadOnly: true}},
				Dir:   "/", Argv: []string{"prog"},
			},
			want: cat(w("--ro-bind", "/", "/", "--tmpfs", "/work",
				"--ro-bind", "/work/cache/venvs/py-abc", "/work/cache/venvs/py-abc"), procDev, tail("/", "prog")),
		},
		{
			name: "job layout: /home/ma-user, /opt/atelier/python and /cache are made",
			spec: Spec{
				Mode: ModeBubblewrap,
				Hide: []string{"/data", "/work", "/tmp"},
				Binds: []Bind{
					{Src: "/work/jobs/j1/home/in_0", Dst: "/home/ma-user/modelarts/inputs/in_0", ReadOnly: true},
					{Src: "/work/jobs/j1/home", Dst: "/home/ma-user"},
					{Src: "/work/python/h1", Dst: "/opt/atelier/python", ReadOnly: true},
				},
				Tmpfs: []Tmpfs{{Dst: "/cache", Size: 1 << 30}},
				Dir:   "/home/ma-user/modelarts/user-job-dir/code",
				Env:   []string{"SECRET=x"},
				Argv:  []string{"/usr/bin/python3", "train.py"},
			},
			want: cat(
				// "/" is shadowed for /cache: every entry but /proc, /dev and
				// the hidden ones is bound back, symlinks are re-made.
				w("--symlink", "usr/bin", "/bin", "--ro-bind", "/etc", "/etc", "--ro-bind", "/home", "/home",
					"--ro-bind", "/opt", "/opt", "--ro-bind", "/srv", "/srv", "--ro-bind", "/usr", "/usr"),
				// /home for /home/ma-user, /opt for /opt/atelier/python.
				w("--tmpfs", "/home", "--ro-bind", "/home/alice", "/home/alice"),
				w("--tmpfs", "/opt", "--ro-bind", "/opt/conda", "/opt/conda"),
				w("--tmpfs", "/data", "--tmpfs", "/work", "--tmpfs", "/tmp"),
				// parents before children, else the spec's order.
				w("--size", "1073741824", "--tmpfs", "/cache",
					"--bind", "/work/jobs/j1/home", "/home/ma-user",
					"--ro-bind", "/work/python/h1", "/opt/atelier/python",
					"--ro-bind", "/work/jobs/j1/home/in_0", "/home/ma-user/modelarts/inputs/in_0"),
				procDev,
				w("--remount-ro", "/", "--remount-ro", "/home", "--remount-ro", "/opt"),
				tail("/home/ma-user/modelarts/user-job-dir/code", "/usr/bin/python3", "train.py"),
			),
		},
		{
			name: "tmpfs inside a bind comes after it; mount points inside writable mounts need nothing",
			spec: Spec{
				Mode: ModeBubblewrap,
				Binds: []Bind{
					{Src: "/srv/ro", Dst: "/srv/ro/again", ReadOnly: false},
					{Src: "/work/jobs/j1/home", Dst: "/srv/ro"},
				},
				Tmpfs: []Tmpfs{{Dst: "/srv/ro/new/scratch"}},
				Dir:   "/", Argv: []string{"prog"},
			},
			want: cat(w("--ro-bind", "/", "/",
				"--bind", "/work/jobs/j1/home", "/srv/ro",
				"--bind", "/srv/ro", "/srv/ro/again",
				"--tmpfs", "/srv/ro/new/scratch"), procDev, tail("/", "prog")),
		},
		{
			name: "deep missing mount point under a dir that exists",
			spec: Spec{
				Mode:  ModeBubblewrap,
				Binds: []Bind{{Src: "/srv/ro", Dst: "/opt/conda/x/y", ReadOnly: true}},
				Dir:   "/", Argv: []string{"prog"},
			},
			want: cat(w("--ro-bind", "/", "/", "--tmpfs", "/opt/conda",
				"--ro-bind", "/srv/ro", "/opt/conda/x/y"), procDev,
				w("--remount-ro", "/opt/conda"), tail("/", "prog")),
		},
		{
			name: "devices",
			spec: Spec{Mode: ModeBubblewrap, Devices: []string{"/dev/nvidia0", "/dev/nvidiactl"}, Dir: "/", Argv: []string{"p"}},
			want: cat(w("--ro-bind", "/", "/"), procDev,
				w("--dev-bind", "/dev/nvidia0", "/dev/nvidia0", "--dev-bind", "/dev/nvidiactl", "/dev/nvidiactl"), tail("/", "p")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildArgs(tt.spec, fakeHost())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("args\n got: %s\nwant: %s", strings.Join(got, " "), strings.Join(tt.want, " "))
			}
			for _, e := range tt.spec.Env {
				if slices.Contains(got, e) {
					t.Errorf("environment %q is on the command line", e)
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
		kind errs.Kind
		msg  string
	}{
		{"mode none", func(s *Spec) { s.Mode = ModeNone }, errs.Invalid, "no bwrap"},
		{"unknown mode", func(s *Spec) { s.Mode = "docker" }, errs.Invalid, "docker"},
		{"no argv", func(s *Spec) { s.Argv = nil }, errs.Invalid, "no program"},
		{"relative dir", func(s *Spec) { s.Dir = "home" }, errs.Invalid, "not an absolute path"},
		{"empty dir", func(s *Spec) { s.Dir = "" }, errs.Invalid, "empty working directory"},
		{"relative hide", func(s *Spec) { s.Hide = []string{"tmp"} }, errs.Invalid, "hidden dir"},
		{"hide root", func(s *Spec) { s.Hide = []string{"/"} }, errs.Invalid, "root directory"},
		{"missing bind source", func(s *Spec) { s.Binds = []Bind{{Src: "/nope", Dst: "/x"}} }, errs.Invalid, "does not exist"},
		{"bind onto root", func(s *Spec) { s.Binds = []Bind{{Src: "/srv", Dst: "/"}} }, errs.Invalid, "root directory"},
		{"negative tmpfs", func(s *Spec) { s.Tmpfs = []Tmpfs{{Dst: "/cache", Size: -1}} }, errs.Invalid, "negative"},
		{"device outside /dev", func(s *Spec) { s.Devices = []string{"/etc/passwd"} }, errs.Invalid, "not under /dev"},
		{"mount point under a file", func(s *Spec) { s.Tmpfs = []Tmpfs{{Dst: "/etc/passwd/x"}} }, errs.Invalid, "not a directory"},
		{"missing mount point in a read-only bind", func(s *Spec) {
			s.Binds = []Bind{{Src: "/srv/ro", Dst: "/mnt/ro", ReadOnly: true}, {Src: "/srv/ro", Dst: "/mnt/ro/sub"}}
		}, errs.Invalid, "read-only bind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.mod(&s)
			_, err := buildArgs(s, fakeHost())
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
}

// FuzzArgs checks that any spec either fails cleanly or yields a command line
// that ends with the program, mounts only absolute paths and never puts a
// mount under a path it has not made reachable.
func FuzzArgs(f *testing.F) {
	f.Add("/work", "/work/jobs/j1/home", "/home/ma-user", "/cache", "/home/ma-user", int64(0), true)
	f.Add("/tmp", "/srv/ro", "/a/b/c", "/a/b", "/", int64(1), false)
	f.Add("", "/srv", "/srv/x", "/srv/x/y", "/srv", int64(5), true)
	f.Fuzz(func(t *testing.T, hide, src, dst, tmp, dir string, size int64, ro bool) {
		s := Spec{Mode: ModeBubblewrap, Dir: dir, Argv: []string{"p", "--x"}}
		if hide != "" {
			s.Hide = []string{hide}
		}
		s.Binds = []Bind{{Src: src, Dst: dst, ReadOnly: ro}}
		s.Tmpfs = []Tmpfs{{Dst: tmp, Size: size}}
		got, err := buildArgs(s, fakeHost())
		if err != nil {
			if errs.CodeOf(err) == "" {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		if len(got) < 3 || got[len(got)-3] != "--" || got[len(got)-2] != "p" || got[len(got)-1] != "--x" {
			t.Fatalf("argv does not end with -- p --x: %q", got)
		}
		for i, a := range got[:len(got)-3] {
			if i > 0 && strings.HasPrefix(got[i-1], "--") && got[i-1] != "--size" && got[i-1] != "--symlink" &&
				!strings.HasPrefix(a, "--") && !strings.HasPrefix(a, "/") {
				t.Fatalf("relative path %q after %q", a, got[i-1])
			}
		}
	})
}
