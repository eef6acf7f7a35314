package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/seccomp"
)

// Modes of a Spec.
const (
	ModeBubblewrap = "bubblewrap"
	ModeNone       = "none"
)

// Error codes of the sandbox (ATL.EXE.000N).
const (
	// CodeUnavailable: bubblewrap is not installed or does not work here.
	CodeUnavailable errs.Code = "ATL.EXE.0001"
	// CodeBadSpec: the sandbox spec is invalid (mode, paths, argv).
	CodeBadSpec errs.Code = "ATL.EXE.0002"
	// CodeHostPath: a host path named in the spec could not be inspected.
	CodeHostPath errs.Code = "ATL.EXE.0003"
	// CodeIdentity: there is no account or subordinate uid for user code.
	CodeIdentity errs.Code = "ATL.EXE.0004"
	// CodeSetup: the sandbox could not be set up (its descriptors, the
	// user namespace's maps, the cgroup move).
	CodeSetup errs.Code = "ATL.EXE.0005"
	// CodeEngine: an engine's interpreter cannot run in the sandbox.
	CodeEngine errs.Code = "ATL.EXE.0006"
)

const hintInstall errs.Hint = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or set `sandbox: none` in the server config"

// setupTimeout bounds how long Start waits for bwrap to report its child.
const setupTimeout = 30 * time.Second

// Bind makes the host path Src visible at Dst inside the sandbox.
type Bind struct {
	Src, Dst string
	ReadOnly bool
}

// Tmpfs is an empty tmpfs at Dst inside the sandbox.
type Tmpfs struct {
	Dst  string
	Size int64 // bytes; 0 = unlimited (the memory cgroup bounds it)
}

// File is a synthetic read-only file at Dst inside the sandbox.
type File struct {
	Dst  string
	Data []byte
}

// Spec describes the process to run and what it may see. With
// bubblewrap the process sees only the system allow-list (see the
// package comment), System, and the spec's own mounts and files.
type Spec struct {
	Mode   string // "bubblewrap" | "none"
	Binds  []Bind // parents before children, else in order
	Tmpfs  []Tmpfs
	Files  []File   // besides EtcFiles
	System []string // extra host dirs seen read-only at their own path (an engine's sys.prefix)
	// Devices are host device nodes made available in the sandbox's /dev
	// (e.g. GPUDevices()); the sandbox's /dev has only the basic nodes
	// otherwise.
	Devices []string
	Dir     string   // working directory (path as seen by the process)
	Env     []string // the complete environment (bwrap adds PWD=Dir)
	Argv    []string // program and args (path as seen inside)
	// ExtraFiles are inherited by the program as descriptors 3, 4, …
	ExtraFiles []*os.File
	// Stdin is the standard input of the first process (bwrap passes it
	// on); nil is /dev/null.
	Stdin *os.File
}

// Sandbox starts sandboxed commands as one Identity.
type Sandbox struct {
	id      Identity
	bwrap   string
	seccomp []byte
}

// New is a sandbox for user code running as id. With an identity other
// than IdentityNone it needs bubblewrap and the seccomp filter of this
// architecture.
func New(id Identity) (*Sandbox, error) {
	const op errs.Op = "sandbox.New"
	sb := &Sandbox{id: id}
	if id.Mode == IdentityNone {
		return sb, nil
	}
	if id.Mode != IdentityDrop && id.Mode != IdentitySubUID {
		return nil, errs.E(op, errs.Invalid, CodeIdentity, "unknown identity mode "+quote(id.Mode))
	}
	if id.UID <= 0 || id.GID <= 0 || id.UID == os.Geteuid() {
		return nil, errs.E(op, errs.Invalid, CodeIdentity,
			fmt.Sprintf("user code would run as uid %d gid %d, which is root or the server itself", id.UID, id.GID))
	}
	p, err := bwrapPath()
	if err != nil {
		return nil, errs.E(op, err)
	}
	prog, err := seccomp.Program()
	if err != nil {
		return nil, errs.E(op, errs.Unavailable, CodeUnavailable, "no seccomp filter for this machine: "+errs.UserMessage(err), err)
	}
	sb.bwrap, sb.seccomp = p, seccomp.Encode(prog)
	return sb, nil
}

// Identity is who user code runs as.
func (sb *Sandbox) Identity() Identity { return sb.id }

// Args is the bwrap command line of s, with placeholder descriptor
// numbers as Command would pass them (for tests and `--dry-run` output).
func (sb *Sandbox) Args(s Spec) ([]string, error) {
	return buildArgs(s, sb.plan(s), hostFS())
}

func (sb *Sandbox) plan(s Spec) plan {
	base := 3 + len(s.ExtraFiles)
	p := plan{identity: sb.id.Mode, seccompFD: base, infoFD: base + 1, blockFD: base + 2}
	for i := range files(s) {
		p.dataFDs = append(p.dataFDs, base+3+i)
	}
	return p
}

// Cmd is a command Command built. Start it with Cmd.Start, not with the
// embedded exec.Cmd's.
type Cmd struct {
	*exec.Cmd
	sb *Sandbox
	// In bubblewrap mode: the runner's ends of bwrap's info and block
	// pipes, and the child's ends to close after the start.
	info, block *os.File
	childEnds   []*os.File
	// Pids are the host pids of bwrap and of the sandbox's first process
	// once Start returned (bubblewrap), or of the process (none).
	Pids []int
}

// Command builds the command for s. The process starts in its own process
// group. With Mode "none" it is a plain command with Dir and Env; with
// "bubblewrap" it is bwrap with Args(s), run as the sandbox's identity.
// When ctx is done the whole process group is killed.
func (sb *Sandbox) Command(ctx context.Context, s Spec) (*Cmd, error) {
	const op errs.Op = "sandbox.Command"
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return nil, errs.E(op, errs.Invalid, CodeBadSpec, "no program to run")
	}
	c := &Cmd{sb: sb}
	switch s.Mode {
	case ModeNone:
		c.Cmd = exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
		c.Cmd.Dir = s.Dir
		c.Cmd.ExtraFiles = s.ExtraFiles
	case ModeBubblewrap:
		if sb.id.Mode == IdentityNone {
			return nil, errs.E(op, errs.Invalid, CodeBadSpec, "this sandbox has no identity for bubblewrap")
		}
		args, err := buildArgs(s, sb.plan(s), hostFS())
		if err != nil {
			return nil, errs.E(op, err)
		}
		c.Cmd = exec.CommandContext(ctx, sb.bwrap, args...)
		// bwrap changes into Dir inside the sandbox; its own working
		// directory must exist on the host.
		c.Cmd.Dir = "/"
		if err := c.pipes(s); err != nil {
			return nil, errs.E(op, err)
		}
		if sb.id.Mode == IdentitySubUID {
			// unshare makes a user namespace whose uid 0 is the
			// subordinate uid and whose gid 0 the server's gid (through
			// newuidmap/newgidmap), becomes that uid 0 and execs bwrap,
			// which maps ma-user onto it.
			c.Cmd.Path = sb.id.Unshare
			c.Cmd.Args = append([]string{sb.id.Unshare, "--user",
				"--map-users=" + strconv.Itoa(sb.id.UID) + ",0,1", "--map-groups=" + strconv.Itoa(sb.id.GID) + ",0,1",
				"--setuid", "0", "--", sb.bwrap}, args...)
		}
	default:
		return nil, errs.E(op, errs.Invalid, CodeBadSpec, "unknown sandbox mode "+quote(s.Mode),
			errs.Hint(`use "bubblewrap" or "none"`))
	}
	if s.Stdin != nil {
		c.Cmd.Stdin = s.Stdin
	}
	// A nil Env would mean "inherit the server's environment".
	c.Cmd.Env = append([]string{}, s.Env...)
	c.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.Mode == ModeNone {
		// The process dies with its starter (a runner killed with SIGKILL
		// leaves no user code behind); bwrap does the same for a sandbox
		// (--die-with-parent), whose pid namespace ends with it. The
		// kernel sends the signal when the thread that started the process
		// ends: Go's runtime keeps its threads unless a goroutine locked to
		// one exits, which the runner never does.
		c.Cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if s.Mode == ModeBubblewrap && sb.id.Mode == IdentityDrop {
		c.Cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(sb.id.UID), Gid: uint32(sb.id.GID), Groups: []uint32{}}
	}
	cmd := c.Cmd
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// The process leads its group (Setpgid), so -pid is the group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return cmd.Process.Kill()
	}
	return c, nil
}

// pipes makes bwrap's descriptors in plan order: the seccomp program, the
// info and block pipes, one pipe per synthetic file (all written and
// closed before the start: they are small).
func (c *Cmd) pipes(s Spec) (err error) {
	defer func() {
		if err != nil {
			c.closeAll()
		}
	}()
	feed := func(b []byte) error {
		r, w, err := os.Pipe()
		if err != nil {
			return errs.E("sandbox.pipes", errs.IO, CodeSetup, "cannot make a pipe", err)
		}
		c.childEnds = append(c.childEnds, r)
		_, err = w.Write(b)
		w.Close()
		if err != nil {
			return errs.E("sandbox.pipes", errs.IO, CodeSetup, "cannot fill a pipe", err)
		}
		return nil
	}
	extra := append([]*os.File{}, s.ExtraFiles...)
	if err := feed(c.sb.seccomp); err != nil {
		return err
	}
	ir, iw, err := os.Pipe()
	if err != nil {
		return errs.E("sandbox.pipes", errs.IO, CodeSetup, "cannot make a pipe", err)
	}
	c.info = ir
	c.childEnds = append(c.childEnds, iw)
	br, bw, err := os.Pipe()
	if err != nil {
		return errs.E("sandbox.pipes", errs.IO, CodeSetup, "cannot make a pipe", err)
	}
	c.block = bw
	c.childEnds = append(c.childEnds, br)
	for _, f := range files(s) {
		if err := feed(f.Data); err != nil {
			return err
		}
	}
	// childEnds: seccomp, info, block, data… — the plan's order.
	c.Cmd.ExtraFiles = append(extra, c.childEnds...)
	return nil
}

func (c *Cmd) closeAll() {
	for _, f := range c.childEnds {
		f.Close()
	}
	c.childEnds = nil
	for _, f := range []*os.File{c.info, c.block} {
		if f != nil {
			f.Close()
		}
	}
	c.info, c.block = nil, nil
}

// Start starts the command. In a bubblewrap sandbox it waits until bwrap
// has made the sandbox's first process, writes the user namespace's maps
// (IdentitySubUID), calls enter with the host pids of bwrap and that
// process — to put them into a cgroup before any user code runs; nil
// for none — and only then lets it run. When enter or a step fails, the
// sandbox is killed and waited for and the error returned.
func (c *Cmd) Start(enter func(pids []int) error) error {
	const op errs.Op = "sandbox.Start"
	if c.info == nil { // none
		if err := c.Cmd.Start(); err != nil {
			return err
		}
		c.Pids = []int{c.Process.Pid}
		if enter != nil {
			if err := enter(c.Pids); err != nil {
				c.abort()
				return errs.E(op, err)
			}
		}
		return nil
	}
	err := c.Cmd.Start()
	for _, f := range c.childEnds {
		f.Close()
	}
	c.childEnds = nil
	if err != nil {
		c.closeAll()
		return err
	}
	fail := func(err error) error {
		c.abort()
		c.closeAll()
		return errs.E(op, err)
	}
	child, err := readChildPid(c.info)
	c.info.Close()
	c.info = nil
	if err != nil {
		return fail(err)
	}
	c.Pids = []int{c.Process.Pid, child}
	if enter != nil {
		if err := enter(c.Pids); err != nil {
			return fail(err)
		}
	}
	// A sandbox that died meanwhile makes this write fail; Wait reports it.
	_, _ = c.block.Write([]byte{1})
	c.block.Close()
	c.block = nil
	return nil
}

// Group is a control group a command runs in (a *cgroup.Group).
type Group interface {
	// Prepare makes cmd start inside the group (at clone time, or through
	// a shell wrapper that moves itself first).
	Prepare(cmd *exec.Cmd)
	// PrepareClone makes cmd start inside the group where the kernel can
	// do that at clone time, and changes nothing elsewhere.
	PrepareClone(cmd *exec.Cmd)
	// Enter moves processes into the group.
	Enter(pids []int) error
}

// StartIn starts the command inside g (nil: none), before any user code
// runs: a plain process and a subordinate-uid sandbox through Prepare (the
// wrapper moves itself while it still is the server's uid, as cgroup v1
// requires of a server that is not root); a root server's sandbox, whose
// processes are the sandbox user's from the start, through Start's hook.
func (c *Cmd) StartIn(g Group) error {
	if g == nil {
		return c.Start(nil)
	}
	if c.info != nil && c.sb.id.Mode == IdentityDrop {
		g.PrepareClone(c.Cmd)
		return c.Start(g.Enter)
	}
	g.Prepare(c.Cmd)
	return c.Start(nil)
}

// abort kills the process group and waits for it.
func (c *Cmd) abort() {
	if c.Process != nil {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		_ = c.Process.Kill()
		_ = c.Cmd.Wait()
	}
}

// readChildPid reads bwrap's --info-fd report ({"child-pid": N, …}) until
// bwrap closes it; an early EOF means bwrap failed (its stderr says why).
func readChildPid(r *os.File) (int, error) {
	_ = r.SetReadDeadline(time.Now().Add(setupTimeout))
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil && len(b) == 0 {
		return 0, errs.E("sandbox.Start", errs.IO, CodeSetup, "bubblewrap did not report its sandbox", err)
	}
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &info); err != nil || info.ChildPid <= 0 {
		return 0, errs.E("sandbox.Start", errs.IO, CodeSetup, "bubblewrap ended before it made the sandbox")
	}
	return info.ChildPid, nil
}

// Check reports whether this sandbox works here: it runs `true` in a
// sandbox like the ones Command builds. The error has a hint.
func (sb *Sandbox) Check(ctx context.Context) error {
	const op errs.Op = "sandbox.Check"
	if sb.id.Mode == IdentityNone {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd, err := sb.Command(ctx, Spec{Mode: ModeBubblewrap, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}, Argv: []string{"true"}})
	if err != nil {
		return errs.E(op, err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Start(nil)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		msg := "bubblewrap cannot create a sandbox here"
		if o := strings.TrimSpace(out.String()); o != "" {
			msg += " (" + firstLine(o) + ")"
		} else if m := errs.UserMessage(err); m != "" {
			msg += " (" + m + ")"
		}
		return errs.E(op, errs.Unavailable, CodeUnavailable, msg, hintInstall, err)
	}
	return nil
}

// GPUDevices lists the host's NVIDIA device nodes (/dev/nvidia*,
// /dev/nvidia-caps/*), for Spec.Devices of a job that uses GPUs.
func GPUDevices() []string {
	var out []string
	for _, pat := range []string{"/dev/nvidia*", "/dev/nvidia-caps/*"} {
		m, _ := filepath.Glob(pat)
		for _, p := range m {
			if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeDevice != 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

func bwrapPath() (string, error) {
	for _, p := range []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("bwrap"); err == nil && filepath.IsAbs(p) {
		return p, nil
	}
	return "", errs.E("sandbox.bwrap", errs.Unavailable, CodeUnavailable, "bubblewrap (bwrap) is not installed", hintInstall)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func quote(s string) string { return `"` + s + `"` }

// CloseInheritedOnExec marks every descriptor from 3 up close-on-exec, so
// that none this process inherited (from a shell, a service manager)
// reaches user code; what a Spec passes in ExtraFiles is passed all the
// same. The server and the runner call it first thing.
func CloseInheritedOnExec() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= 3 {
			unix.CloseOnExec(fd)
		}
	}
}
