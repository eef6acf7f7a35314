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
		Argv: []string{py, "-c", client}}, &stderr)
	if code != 7 {
		t.Errorf("exit %d, want the program's 7 (%s)", code, stderr.String())
	}
	// A program killed by a signal: 128+N, as a shell reports it.
	if code := run(Config{Argv: []string{"/bin/sh", "-c", "kill -TERM $$"}}, &stderr); code != 128+15 {
		t.Errorf("killed by SIGTERM: exit %d", code)
	}
	// A program that does not exist: 127 and a message.
	stderr.Reset()
	if code := run(Config{Argv: []string{"/nonexistent/prog"}}, &stderr); code != 127 || !strings.Contains(stderr.String(), "cannot start /nonexistent/prog") {
		t.Errorf("missing program: exit %d %q", code, stderr.String())
	}
	// A forward address in use: 126, before the program starts.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	stderr.Reset()
	marker := filepath.Join(t.TempDir(), "ran")
	if code := run(Config{Forwards: []Forward{{Listen: ln.Addr().String(), Socket: sock}}, Argv: []string{"/bin/touch", marker}}, &stderr); code != 126 {
		t.Errorf("busy forward: exit %d %q", code, stderr.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program ran although the forward could not listen")
	}
	if code := Main([]string{"--bogus"}, &stderr); code != 126 {
		t.Errorf("bad command line: exit %d", code)
	}
}
