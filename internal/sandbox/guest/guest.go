package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/atelier-dev/atelier/internal/sandbox"
)

// Command is the subcommand of the atelier binary that runs Main.
const Command = "sandbox-init"

// Forward is one loopback listener relayed to a Unix socket.
type Forward struct {
	Listen string // "127.0.0.1:9000"
	Socket string // "/run/atelier/obs.sock"
}

// Config is the command line of `atelier sandbox-init`.
type Config struct {
	Forwards []Forward
	Mkdirs   []string
	PassFDs  int // descriptors 3 … 3+PassFDs-1 go to the program
	// Gate makes the init wait, its forwards listening, until it reads
	// GateOpen from its standard input: the runner starts the sandbox
	// while it still stages the job, and lets user code start once all is
	// in place. Anything else (the runner closing the pipe) ends the init
	// with GateClosed, the program never started. The program's standard
	// input is then /dev/null.
	Gate bool
	Argv []string
}

// GateOpen is the byte that lets a gated init start the program;
// GateClosed is the init's status when it did not.
const (
	GateOpen   = 'g'
	GateClosed = 125
)

// Args is the command line of cfg after the binary's path, the inverse of
// Parse: ["sandbox-init", "--forward", "ADDR=SOCK", …, "--", argv…].
func (c Config) Args() []string {
	a := []string{Command}
	for _, f := range c.Forwards {
		a = append(a, "--forward", f.Listen+"="+f.Socket)
	}
	for _, d := range c.Mkdirs {
		a = append(a, "--mkdir", d)
	}
	if c.PassFDs > 0 {
		a = append(a, "--pass-fds", strconv.Itoa(c.PassFDs))
	}
	if c.Gate {
		a = append(a, "--gate", "stdin")
	}
	return append(append(a, "--"), c.Argv...)
}

// Parse reads the arguments after "sandbox-init".
func Parse(args []string) (Config, error) {
	var c Config
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			c.Argv = args[i+1:]
			break
		}
		if i+1 >= len(args) {
			return Config{}, fmt.Errorf("%s needs a value", a)
		}
		v := args[i+1]
		i++
		switch a {
		case "--forward":
			addr, sock, ok := strings.Cut(v, "=")
			if !ok || addr == "" || !strings.HasPrefix(sock, "/") {
				return Config{}, fmt.Errorf("--forward %q is not HOST:PORT=/path/to.sock", v)
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return Config{}, fmt.Errorf("--forward %q: %v", v, err)
			}
			c.Forwards = append(c.Forwards, Forward{Listen: addr, Socket: sock})
		case "--mkdir":
			if !strings.HasPrefix(v, "/") {
				return Config{}, fmt.Errorf("--mkdir %q is not an absolute path", v)
			}
			c.Mkdirs = append(c.Mkdirs, v)
		case "--pass-fds":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 64 {
				return Config{}, fmt.Errorf("--pass-fds %q is not a number of descriptors", v)
			}
			c.PassFDs = n
		case "--gate":
			if v != "stdin" {
				return Config{}, fmt.Errorf("--gate %q: the only gate is stdin", v)
			}
			c.Gate = true
		default:
			return Config{}, fmt.Errorf("unknown option %q", a)
		}
	}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return Config{}, errors.New("no program to run after --")
	}
	return c, nil
}

// Main runs the sandbox's init with the arguments after "sandbox-init" and
// returns the exit status: the program's, or 128+N when signal N killed
// it; 127 when it cannot start, 126 on a bad command line or set-up.
func Main(args []string, stderr io.Writer) int {
	c, err := Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "atelier sandbox-init: %v\n", err)
		return 126
	}
	return run(c, os.Stdin, stderr)
}

func run(c Config, stdin *os.File, stderr io.Writer) int {
	// Nothing but the declared descriptors reaches the program.
	sandbox.CloseInheritedOnExec()
	for _, d := range c.Mkdirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fmt.Fprintf(stderr, "atelier sandbox-init: cannot create %s: %v\n", d, err)
			return 126
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, f := range c.Forwards {
		ln, err := net.Listen("tcp", f.Listen)
		if err != nil {
			fmt.Fprintf(stderr, "atelier sandbox-init: cannot listen on %s: %v\n", f.Listen, err)
			return 126
		}
		defer ln.Close()
		wg.Go(func() { serve(ctx, ln, f.Socket) })
	}
	// The runner signals user code itself; the init only outlives it.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for range sigs {
		}
	}()

	if c.Gate {
		var b [1]byte
		if n, _ := io.ReadFull(stdin, b[:]); n != 1 || b[0] != GateOpen {
			return GateClosed
		}
		null, err := os.Open(os.DevNull)
		if err != nil {
			fmt.Fprintf(stderr, "atelier sandbox-init: cannot open %s: %v\n", os.DevNull, err)
			return 126
		}
		defer null.Close()
		stdin = null
	}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	for i := range c.PassFDs {
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(3+i), "fd"+strconv.Itoa(3+i)))
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "atelier sandbox-init: cannot start %s: %v\n", c.Argv[0], startErr(err))
		return 127
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	err := cmd.Wait()
	signal.Stop(sigs)
	close(sigs)
	cancel()
	st := cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && st.ExitCode() < 0 {
		return 127
	}
	return st.ExitCode()
}

func startErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// serve relays every connection on ln to the Unix socket sock.
func serve(ctx context.Context, ln net.Listener, sock string) {
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		go relay(c, sock)
	}
}

// relay copies between c and a new connection to sock, each direction
// half-closed when its reader ends.
func relay(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(u, c)
		_ = u.(*net.UnixConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, u)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	<-done
}
