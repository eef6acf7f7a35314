package runner

import (
	"os"
	"path/filepath"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox/guest"
)

// A job's sandbox takes tens of milliseconds to start before user code
// does: bubblewrap builds the namespaces and mounts, the runner puts the
// first process into the job's cgroup, and the init (the atelier binary)
// starts and opens its forwards. prestart does all that while the inputs
// are still staging, with the init waiting at its gate
// (guest.Config.Gate); runUser then only opens the gate. Nothing of user
// code runs before: the init starts the program only on GateOpen, which
// runUser writes after staging, the hand-over of the job tree and the
// opening of its roots — the order user code meets is the same as
// without a prestart. A sandbox prestarted and not needed (staging
// failed, a stop) is withdrawn: the gate closed, the sandbox killed and
// waited for.

// prestarted is user code's sandbox, started ahead, its init at the gate.
type prestarted struct {
	proc *userProc
	gate *os.File // the write end of the init's standard input
	argv []string // user code's command line, for the log
}

// open lets the init start user code.
func (p *prestarted) open() error {
	_, err := p.gate.Write([]byte{guest.GateOpen})
	if cerr := p.gate.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errs.E("runner.open", errs.IO, CodeStart, because("the sandbox ended before user code could start", err), err)
	}
	return nil
}

// prestart starts user code's sandbox with its init at the gate, when the
// job qualifies: a sandbox (only it has an init), and no requirements.txt
// (user code's interpreter is then known before staging ends). It is
// called once the code is staged and its boot file found. Any failure
// leaves r.pre nil: runUser starts the sandbox as it would have, and
// meets the same error there if there is one.
func (r *run) prestart() {
	if r.cfg.NoPrestart || !r.box.sandboxed() || r.stopping() {
		return
	}
	if _, has, err := readRequirements(r.layout.CodeDir); has || err != nil {
		return
	}
	spec, argv, err := r.userSpec(true)
	if err != nil {
		return
	}
	gr, gw, err := os.Pipe()
	if err != nil {
		return
	}
	spec.Stdin = gr
	p, err := r.start(spec)
	gr.Close()
	if err != nil {
		gw.Close()
		r.log.Warn("cannot start the sandbox ahead; it starts once staging is done", "err", err)
		return
	}
	r.pre = &prestarted{proc: p, gate: gw, argv: argv}
	r.log.Info("user code's sandbox started ahead; its init waits at the gate", "pid", p.pid)
}

// withdrawPrestarted ends a prestarted sandbox whose user code is not to
// run: it closes the gate (the init ends without starting anything) and
// kills and waits for what is left.
func (r *run) withdrawPrestarted(p *prestarted) {
	if p == nil {
		return
	}
	r.log.Info("withdrawing the sandbox started ahead: user code is not to run", "pid", p.proc.pid)
	p.gate.Close()
	r.kill(p.proc)
	<-p.proc.exited
	r.drain(p.proc)
	os.Remove(filepath.Join(r.cfg.Dir, PgidFile))
}
