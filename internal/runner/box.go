package runner

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/guest"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

// Addresses user code reaches inside the sandbox (its init relays them to
// the runner's sockets in the guest dir).
const (
	GuestOBS   = "127.0.0.1:9000"
	GuestProxy = "127.0.0.1:3128"
	obsSocket  = "obs.sock"
	proxySock  = "proxy.sock"
)

// Network modes of an engine or flavor (api.Engine.Network,
// api.Flavor.Network).
const (
	NetworkNone = "none"
	NetworkFull = "full"
)

// box is the sandbox of one workload: who its user code is, the guest dir
// with the runner's sockets (bound read-only at sandbox.GuestRunDir), and
// the relays serving them.
type box struct {
	mode  string // sandbox.ModeBubblewrap | sandbox.ModeNone
	sb    *sandbox.Sandbox
	id    sandbox.Identity
	self  string // the atelier binary, bound at sandbox.GuestBinary
	guest string // host dir of the sockets
	log   *slog.Logger
	note  func(string) // a line in the workload's log

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	serving []string // socket names served: obsSocket, proxySock
	proxy   *relay.Proxy
}

// openBox resolves user code's identity for mode (the sandbox user is the
// server's sandbox_user) and makes the guest dir; init is the binary the
// sandbox runs as its init ("": this one).
func openBox(ctx context.Context, mode, user, init, guestDir string, log *slog.Logger, note func(string)) (*box, error) {
	const op errs.Op = "runner.openBox"
	b := &box{mode: mode, guest: guestDir, log: log, note: note}
	b.ctx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	id := sandbox.Identity{Mode: sandbox.IdentityNone, UID: os.Getuid(), GID: os.Getgid()}
	if mode == sandbox.ModeBubblewrap {
		var err error
		if id, err = sandbox.ResolveIdentity(ctx, sandbox.ResolveOptions{User: user}); err != nil {
			b.cancel()
			return nil, errs.E(op, err)
		}
	}
	sb, err := sandbox.New(id)
	if err != nil {
		b.cancel()
		return nil, errs.E(op, err)
	}
	b.sb, b.id = sb, id
	if mode == sandbox.ModeBubblewrap {
		self, err := init, error(nil)
		if self == "" {
			self, err = os.Executable()
		}
		if err == nil {
			self, err = filepath.EvalSymlinks(self)
		}
		if err != nil {
			b.cancel()
			return nil, errs.E(op, errs.Internal, CodeJobTree, "cannot find the atelier binary for the sandbox's init", err)
		}
		b.self = self
		if err := os.RemoveAll(guestDir); err != nil {
			b.cancel()
			return nil, errs.E(op, errs.IO, CodeJobTree, because("cannot clear "+guestDir, err), err)
		}
		if err := os.MkdirAll(guestDir, 0o711); err != nil {
			b.cancel()
			return nil, errs.E(op, errs.IO, CodeJobTree, because("cannot create "+guestDir, err), err)
		}
		if err := sandbox.Traversable(guestDir); err != nil {
			b.cancel()
			return nil, errs.E(op, err)
		}
	}
	return b, nil
}

// sandboxed reports whether user code runs in bubblewrap.
func (b *box) sandboxed() bool { return b.mode == sandbox.ModeBubblewrap }

// serveOBS relays the guest's OBS socket to the S3 endpoint (a URL).
func (b *box) serveOBS(endpoint string) error {
	if !b.sandboxed() || endpoint == "" {
		return nil
	}
	dial, err := relay.DialURL(endpoint)
	if err != nil {
		return err
	}
	return b.serve(obsSocket, func(ln net.Listener) { relay.Serve(b.ctx, ln, dial, b.log) })
}

// serveProxy runs the egress proxy on the guest's proxy socket, refusing
// everything until setPolicy says otherwise.
func (b *box) serveProxy() error {
	if !b.sandboxed() {
		return nil
	}
	b.proxy = &relay.Proxy{Log: b.log, Note: b.note}
	return b.serve(proxySock, func(ln net.Listener) { b.proxy.Serve(b.ctx, ln) })
}

// setPolicy changes what the egress proxy reaches (the install's package
// indexes, then the job's network mode).
func (b *box) setPolicy(p relay.Policy) {
	if b.proxy != nil {
		b.proxy.SetPolicy(p)
	}
}

func (b *box) serve(name string, run func(net.Listener)) error {
	path := filepath.Join(b.guest, name)
	ln, err := relay.ListenUnix(path, 0o600)
	if err != nil {
		return err
	}
	if err := b.id.OwnSocket(path); err != nil {
		ln.Close()
		return err
	}
	b.serving = append(b.serving, name)
	b.wg.Go(func() { run(ln) })
	return nil
}

// close stops the relays.
func (b *box) close() {
	if b == nil {
		return
	}
	b.cancel()
	b.wg.Wait()
}

// wrap is the sandbox's command line for argv: the init relaying the
// sockets served, making mkdirs and passing pass descriptors.
func (b *box) wrap(argv []string, mkdirs []string, pass int) []string {
	return b.wrapWith(guest.Config{Mkdirs: mkdirs, PassFDs: pass, Argv: argv})
}

// wrapWith is the sandbox's command line for the init's configuration c,
// its forwards added.
func (b *box) wrapWith(c guest.Config) []string {
	if !b.sandboxed() {
		return c.Argv
	}
	for _, s := range b.serving {
		addr := map[string]string{obsSocket: GuestOBS, proxySock: GuestProxy}[s]
		c.Forwards = append(c.Forwards, guest.Forward{Listen: addr, Socket: sandbox.GuestRunDir + "/" + s})
	}
	return append([]string{sandbox.GuestBinary}, c.Args()...)
}

// spec completes s for this box: the mode, the init's binary and the
// guest dir.
func (b *box) spec(s sandbox.Spec) sandbox.Spec {
	s.Mode = b.mode
	if b.sandboxed() {
		s.Binds = append(s.Binds,
			sandbox.Bind{Src: b.self, Dst: sandbox.GuestBinary, ReadOnly: true},
			sandbox.Bind{Src: b.guest, Dst: sandbox.GuestRunDir, ReadOnly: true})
	}
	return s
}

// proxyEnv points user code's HTTP clients at the egress proxy; loopback
// (OBS) stays direct when direct is set.
func proxyEnv(env map[string]string, direct bool) {
	u := "http://" + GuestProxy
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		env[k] = u
	}
	if direct {
		env["NO_PROXY"] = "127.0.0.1,localhost,::1"
		env["no_proxy"] = env["NO_PROXY"]
	}
}

// networkOf is a workload's network mode: the flavor's when it sets one,
// else the engine's, else none.
func networkOf(e api.Engine, f api.Flavor) string {
	if f.Network != "" {
		return f.Network
	}
	if e.Network != "" {
		return e.Network
	}
	return NetworkNone
}

// guestCredentials are c as user code sees them: OBS at the init's
// loopback address when sandboxed.
func guestCredentials(c api.RunnerCredentials, sandboxed bool) api.RunnerCredentials {
	if sandboxed && c.S3Endpoint != "" {
		c.S3Endpoint = "http://" + GuestOBS
	}
	return c
}

// isInit reports whether pid runs the sandbox's init (the runner signals
// user code itself; the init ignores signals).
func isInit(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(b), "\x00")
	return len(args) > 1 && args[0] == sandbox.GuestBinary && args[1] == guest.Command
}
