package userfs

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// forEachMode runs fn as two subtests: with the openat2 fast path (skipped
// where the kernel or a seccomp filter refuses openat2) and with the
// component-by-component fallback.
func forEachMode(t *testing.T, fn func(t *testing.T, fast bool)) {
	t.Helper()
	for _, m := range []struct {
		name string
		fast bool
	}{{"openat2", true}, {"fallback", false}} {
		t.Run(m.name, func(t *testing.T) { fn(t, m.fast) })
	}
}

// openDir opens path as a Dir that resolves the way fast says (the test
// hook: the Dir's fast field), closed at the end of the test.
func openDir(t *testing.T, path string, fast bool) *Dir {
	t.Helper()
	d, err := OpenDir(path)
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	if fast && !d.fast {
		testenv.Need(t, "openat2 with RESOLVE_ flags is not available here")
	}
	d.fast = fast
	return d
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// mountAt mounts a tmpfs (src == "") or binds src at dst, unmounted at the
// end of the test. It reports false, having logged why, when the test is
// not root or may not mount.
func mountAt(t *testing.T, src, dst string) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Logf("not root: no mount at %s", dst)
		return false
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	if src == "" {
		err = syscall.Mount("tmpfs", dst, "tmpfs", 0, "size=1m")
	} else {
		err = syscall.Mount(src, dst, "", syscall.MS_BIND, "")
	}
	if errors.Is(err, syscall.EPERM) {
		t.Logf("root without CAP_SYS_ADMIN: no mount at %s", dst)
		return false
	}
	if err != nil {
		t.Fatalf("mount %s: %v", dst, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dst, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dst, err)
		}
	})
	return true
}

// fixture is a tree with one of everything Open and Walk must handle.
//
//	root/canary/secret             canaryBytes, outside the Dir
//	root/bindsrc/inner.txt         bound at out/bind
//	root/out/                      the Dir
//	  file.txt, a/b/nested.txt, a/z.txt     regular files
//	  a/link-up -> ../file.txt              link to a file inside
//	  empty/                                a directory
//	  link-abs -> root/canary/secret, link-rel -> ../canary/secret,
//	  link-in -> file.txt, "sp ace" -> file.txt,
//	  linkdir -> a, linkdir-out -> root/canary
//	  fifo, sock, dev (char 1:3, root only)
//	  tmpfs/inner.txt (a tmpfs mount), bind/inner.txt (a bind mount), root only
type fixture struct {
	root, out, canary string
	dev, tmpfs, bind  bool // which root-only entries exist
}

const canaryBytes = "CANARY-SECRET-0123456789"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{root: root, out: filepath.Join(root, "out"), canary: filepath.Join(root, "canary")}
	writeFile(t, filepath.Join(f.canary, "secret"), canaryBytes)
	writeFile(t, filepath.Join(f.out, "file.txt"), "hello")
	writeFile(t, filepath.Join(f.out, "a/b/nested.txt"), "nested")
	writeFile(t, filepath.Join(f.out, "a/z.txt"), "zed")
	if err := os.Mkdir(filepath.Join(f.out, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../file.txt", filepath.Join(f.out, "a/link-up"))
	symlink(t, filepath.Join(f.canary, "secret"), filepath.Join(f.out, "link-abs"))
	symlink(t, "../canary/secret", filepath.Join(f.out, "link-rel"))
	symlink(t, "file.txt", filepath.Join(f.out, "link-in"))
	symlink(t, "file.txt", filepath.Join(f.out, "sp ace"))
	symlink(t, "a", filepath.Join(f.out, "linkdir"))
	symlink(t, f.canary, filepath.Join(f.out, "linkdir-out"))
	if err := unix.Mkfifo(filepath.Join(f.out, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(f.out, "sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if os.Geteuid() == 0 {
		if err := unix.Mknod(filepath.Join(f.out, "dev"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Logf("mknod: %v", err)
		} else {
			f.dev = true
		}
	}
	if f.tmpfs = mountAt(t, "", filepath.Join(f.out, "tmpfs")); f.tmpfs {
		writeFile(t, filepath.Join(f.out, "tmpfs/inner.txt"), "on tmpfs")
	}
	writeFile(t, filepath.Join(root, "bindsrc/inner.txt"), "bound")
	f.bind = mountAt(t, filepath.Join(root, "bindsrc"), filepath.Join(f.out, "bind"))
	return f
}

// within runs fn and fails the test if it has not returned in 10 seconds
// (an open blocked on a FIFO would never return).
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("%s did not return within 10s", what)
	}
}

// checkErr checks err against the wanted sentinel (nil: none), kind and
// user message, and that the message does not show the host path.
func checkErr(t *testing.T, err, sentinel error, kind errs.Kind, msg, host string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", msg)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("error %v is not %v", err, sentinel)
	}
	if got := errs.KindOf(err); got != kind {
		t.Errorf("kind %v, want %v (%v)", got, kind, err)
	}
	if kind == errs.NotFound && !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v is not fs.ErrNotExist", err)
	}
	um := errs.UserMessage(err)
	if msg != "" && um != msg {
		t.Errorf("user message %q, want %q", um, msg)
	}
	if strings.Contains(um, host) {
		t.Errorf("user message %q shows the host path %s", um, host)
	}
}
