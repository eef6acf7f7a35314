// Command layers measures what each layer of the job sandbox adds to the
// start of user code: it runs the same trivial program (`python3 -c pass`
// by default) through bubblewrap command lines that add one layer at a
// time, from the sandbox of the committed run before the isolation issue
// (the host root read-only, three namespaces) to the full sandbox the
// runner starts (internal/sandbox, with the cgroup and the init relaying
// OBS), interleaving the variants round by round so a drifting machine
// affects them alike, and prints a Markdown table of medians and of each
// layer's added cost.
//
//	go run ./bench/jobs/layers [-n 30] [-atelier bin/atelier] [-python /usr/bin/python3]
//
// It needs root (the sandbox account is created as the server would, and
// cgroups are written) and bubblewrap.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/guest"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
	"github.com/atelier-dev/atelier/internal/seccomp"
)

type variant struct {
	name, what string
	run        func() error
}

func main() {
	n := flag.Int("n", 30, "rounds")
	atl := flag.String("atelier", "bin/atelier", "the atelier binary (the sandbox's init)")
	py := flag.String("python", "/usr/bin/python3", "the program's interpreter")
	flag.Parse()
	if err := run(*n, *atl, *py); err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(1)
	}
}

func run(n int, atl, py string) error {
	ctx := context.Background()
	atl, err := filepath.Abs(atl)
	if err != nil {
		return err
	}
	id, err := sandbox.ResolveIdentity(ctx, sandbox.ResolveOptions{Create: true})
	if err != nil {
		return err
	}
	sb, err := sandbox.New(id)
	if err != nil {
		return err
	}
	prog, err := seccomp.Program()
	if err != nil {
		return err
	}
	filter := seccomp.Encode(prog)
	work, err := os.MkdirTemp("", "layers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	home := filepath.Join(work, "home")
	guestDir := filepath.Join(work, "guest")
	for _, d := range []string{home, guestDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := sandbox.Traversable(work, guestDir); err != nil {
		return err
	}
	if err := id.OwnDir(home); err != nil {
		return err
	}
	sock := filepath.Join(guestDir, "obs.sock")
	ln, err := relay.ListenUnix(sock, 0o600)
	if err != nil {
		return err
	}
	defer ln.Close()
	if err := id.OwnSocket(sock); err != nil {
		return err
	}
	argv := []string{py, "-c", "pass"}
	bwrap := "/usr/bin/bwrap"
	drop := &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: uint32(id.UID), Gid: uint32(id.GID), Groups: []uint32{}}}
	exe := func(attr *syscall.SysProcAttr, seccompFD bool, args ...string) func() error {
		return func() error {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.SysProcAttr = attr
			if seccompFD {
				r, w, err := os.Pipe()
				if err != nil {
					return err
				}
				w.Write(filter)
				w.Close()
				defer r.Close()
				cmd.ExtraFiles = []*os.File{r}
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}
	}
	hostRoot := []string{"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"}
	allow := []string{"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin", "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/tmp", "--bind", home, "/home/ma-user", "--remount-ro", "/"}
	ns := []string{"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"}
	user := []string{"--unshare-user", "--uid", "1000", "--gid", "100"}
	bw := func(parts ...[]string) []string {
		a := []string{bwrap}
		for _, p := range parts {
			a = append(a, p...)
		}
		return append(append(a, "--"), argv...)
	}
	w := func(s ...string) []string { return s }

	full := func() error {
		g, err := cgroup.New("layers-"+strconv.Itoa(os.Getpid()), cgroup.Limits{MemoryBytes: 1 << 30, CPUs: 1})
		if err != nil {
			return err
		}
		defer g.Close()
		init := guest.Config{Forwards: []guest.Forward{{Listen: "127.0.0.1:9000", Socket: sandbox.GuestRunDir + "/obs.sock"}}, Argv: argv}
		spec := sandbox.Spec{Mode: sandbox.ModeBubblewrap, Dir: sandbox.GuestHome, Env: []string{"PATH=/usr/bin:/bin"},
			Binds: []sandbox.Bind{{Src: home, Dst: sandbox.GuestHome}, {Src: atl, Dst: sandbox.GuestBinary, ReadOnly: true},
				{Src: guestDir, Dst: sandbox.GuestRunDir, ReadOnly: true}},
			Argv: append([]string{sandbox.GuestBinary}, init.Args()...)}
		cmd, err := sb.Command(ctx, spec)
		if err != nil {
			return err
		}
		if err := cmd.StartIn(g); err != nil {
			return err
		}
		return cmd.Wait()
	}
	noInit := func() error {
		g, err := cgroup.New("layers-"+strconv.Itoa(os.Getpid()), cgroup.Limits{MemoryBytes: 1 << 30, CPUs: 1})
		if err != nil {
			return err
		}
		defer g.Close()
		cmd, err := sb.Command(ctx, sandbox.Spec{Mode: sandbox.ModeBubblewrap, Dir: sandbox.GuestHome, Env: []string{"PATH=/usr/bin:/bin"},
			Binds: []sandbox.Bind{{Src: home, Dst: sandbox.GuestHome}}, Argv: argv})
		if err != nil {
			return err
		}
		if err := cmd.StartIn(g); err != nil {
			return err
		}
		return cmd.Wait()
	}
	vs := []variant{
		{"plain", "the program alone, no sandbox", exe(&syscall.SysProcAttr{Setpgid: true}, false, argv...)},
		{"before", "the committed run's sandbox: host root read-only, pid/ipc/uts namespaces, as root", exe(&syscall.SysProcAttr{Setpgid: true}, false, bw(hostRoot, ns)...)},
		{"+user", "+ the sandbox account (uid drop) and a user namespace", exe(drop, false, bw(user, hostRoot, ns)...)},
		{"+disable-userns", "+ --disable-userns (a second, locked user namespace)", exe(drop, false, bw(user, w("--disable-userns"), hostRoot, ns)...)},
		{"+caps+seccomp", "+ --cap-drop ALL and the seccomp filter", exe(drop, true, bw(user, w("--disable-userns", "--cap-drop", "ALL", "--seccomp", "3"), hostRoot, ns)...)},
		{"+netns", "+ a network namespace (loopback only)", exe(drop, true, bw(user, w("--disable-userns", "--cap-drop", "ALL", "--seccomp", "3", "--unshare-net", "--unshare-cgroup-try"), hostRoot, ns)...)},
		{"+allow-list", "+ the allow-listed root instead of the host's", exe(drop, true, bw(user, w("--disable-userns", "--cap-drop", "ALL", "--seccomp", "3", "--unshare-net", "--unshare-cgroup-try"), allow, ns)...)},
		{"+handshake+cgroup", "+ synthetic /etc files, bwrap's info/block handshake, the cgroup entered before user code (internal/sandbox)", noInit},
		{"full", "+ the init relaying OBS (atelier sandbox-init): what the runner starts", full},
	}
	times := make([][]time.Duration, len(vs))
	for _, v := range vs { // warm up
		if err := v.run(); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
	}
	for r := range n {
		order := make([]int, len(vs))
		for i := range order {
			order[i] = i
		}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			start := time.Now()
			if err := vs[i].run(); err != nil {
				return fmt.Errorf("%s: %w", vs[i].name, err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	fmt.Printf("| layer | what it adds | median | added by this layer | added over the committed run |\n|---|---|---:|---:|---:|\n")
	med := make([]time.Duration, len(vs))
	for i := range vs {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
	}
	for i, v := range vs {
		added, over := "", ""
		if i > 0 {
			added = ms(med[i] - med[i-1])
		}
		if i > 1 {
			over = ms(med[i] - med[1])
		}
		fmt.Printf("| %s | %s | %.1f ms | %s | %s |\n", v.name, v.what, float64(med[i].Microseconds())/1000, added, over)
	}
	fmt.Printf("\n%d interleaved rounds (order reversed every other round), medians; program: `%s`.\n", n, strings.Join(argv, " "))
	return nil
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%+.1f ms", float64(d.Microseconds())/1000)
}
