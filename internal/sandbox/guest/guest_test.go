package guest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/testenv"
)

func TestParseArgsRoundTrip(t *testing.T) {
	c := Config{
		Forwards: []Forward{{Listen: "127.0.0.1:9000", Socket: "/run/atelier/obs.sock"}, {Listen: "127.0.0.1:3128", Socket: "/run/atelier/proxy.sock"}},
		Mkdirs:   []string{"/cache/tmp"},
		PassFDs:  2,
		Argv:     []string{"/usr/bin/python3", "-m", "x", "--", "--forward"},
	}
	a := c.Args()
	if a[0] != Command {
		t.Fatalf("args %q", a)
	}
	got, err := Parse(a[1:])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Forwards, c.Forwards) || !slices.Equal(got.Mkdirs, c.Mkdirs) || got.PassFDs != 2 || !slices.Equal(got.Argv, c.Argv) {
		t.Errorf("round trip %+v, want %+v", got, c)
	}
}

func TestParseErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--"},
		{"--forward"},
		{"--forward", "127.0.0.1:9000", "--", "x"},
		{"--forward", "nohost=/s", "--", "x"},
		{"--forward", "127.0.0.1:9000=relative.sock", "--", "x"},
		{"--mkdir", "relative", "--", "x"},
		{"--pass-fds", "-1", "--", "x"},
		{"--pass-fds", "1000", "--", "x"},
		{"--bogus", "1", "--", "x"},
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("Parse(%q) accepted", args)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("--forward", "127.0.0.1:9000=/run/a.sock", "--", "prog")
	f.Add("--pass-fds", "3", "--mkdir", "/x")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		cfg, err := Parse([]string{a, b, c, d})
		if err != nil {
			return
		}
		if len(cfg.Argv) == 0 || cfg.Argv[0] == "" || cfg.PassFDs < 0 || cfg.PassFDs > 64 {
			t.Fatalf("accepted %+v", cfg)
		}
		for _, fw := range cfg.Forwards {
			if !strings.HasPrefix(fw.Socket, "/") {
				t.Fatalf("relative socket %+v", fw)
			}
		}
	})
}

// unixEcho serves lines on a Unix socket, answering "relayed: line".
func unixEcho(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintf(c, "relayed: %s\n", sc.Text())
				}
			}()
		}
	}()
	return sock
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestRunForwardsAndExitStatus(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Need(t, "no python3")
	}
	sock := unixEcho(t)
	addr := freePort(t)
	dir := filepath.Join(t.TempDir(), "made", "tmp")
	host, port, _ := net.SplitHostPort(addr)
	client := fmt.Sprintf(`import socket, sys, os
s = socket.create_connection((%q, %s))
s.sendall(b"ping\n")
print(s.makefile().readline().strip(), os.path.isdir(%q))
sys.exit(7)
`, host, port, dir)
	var stderr bytes.Buffer
	code := run(Config{Forwards: []Forward{{Listen: addr, Socket: sock}}, Mkdirs: []string{dir},
		Argv: []string{py, "-c", client}}, nil, &stderr)
	if code != 7 {
		t.Errorf("exit %d, want the program's 7 (%s)", code, stderr.String())
	}
	// A program killed by a signal: 128+N, as a shell reports it.
	if code := run(Config{Argv: []string{"/bin/sh", "-c", "kill -TERM $$"}}, nil, &stderr); code != 128+15 {
		t.Errorf("killed by SIGTERM: exit %d", code)
	}
	// A program that does not exist: 127 and a message.
	stderr.Reset()
	if code := run(Config{Argv: []string{"/nonexistent/prog"}}, nil, &stderr); code != 127 || !strings.Contains(stderr.String(), "cannot start /nonexistent/prog") {
		t.Errorf("missing program: exit %d %q", code, stderr.String())
	}
	// A forward address in use: 126, before the program starts.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	stderr.Reset()
	marker := filepath.Join(t.TempDir(), "ran")
	if code := run(Config{Forwards: []Forward{{Listen: ln.Addr().String(), Socket: sock}}, Argv: []string{"/bin/touch", marker}}, nil, &stderr); code != 126 {
		t.Errorf("busy forward: exit %d %q", code, stderr.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program ran although the forward could not listen")
	}
	if code := Main([]string{"--bogus"}, &stderr); code != 126 {
		t.Errorf("bad command line: exit %d", code)
	}
}

// TestGate: a gated init starts the program only on GateOpen, with
// /dev/null for its standard input; a gate closed (or anything else
// written) ends it with GateClosed and the program never runs.
func TestGate(t *testing.T) {
	for _, c := range []struct {
		name  string
		write string
		ran   bool
	}{
		{"open", string(rune(GateOpen)), true},
		{"open, more written after it", string(rune(GateOpen)) + "rest of stdin", true},
		{"closed", "", false},
		{"another byte", "x", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			done := make(chan int, 1)
			var stderr bytes.Buffer
			go func() {
				// The program records what it reads on stdin: nothing.
				done <- run(Config{Gate: true, Argv: []string{"/bin/sh", "-c", "cat > " + marker}}, r, &stderr)
			}()
			if c.write != "" {
				if _, err := w.Write([]byte(c.write)); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			code := <-done
			got, err := os.ReadFile(marker)
			switch {
			case c.ran && (code != 0 || err != nil || len(got) != 0):
				t.Errorf("exit %d, read %q (%v), stderr %q; want the program run with an empty stdin", code, got, err, stderr.String())
			case !c.ran && (code != GateClosed || err == nil):
				t.Errorf("exit %d, program ran: %v; want %d and no run", code, err == nil, GateClosed)
			}
		})
	}
	a := Config{Gate: true, Argv: []string{"x"}}.Args()
	if got, err := Parse(a[1:]); err != nil || !got.Gate {
		t.Errorf("round trip of a gate: %+v %v", got, err)
	}
	if _, err := Parse([]string{"--gate", "fd3", "--", "x"}); err == nil {
		t.Error("--gate fd3 accepted")
	}
}
