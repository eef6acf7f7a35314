package userfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// needs names a root-only entry of the fixture a case depends on.
type needs uint8

const (
	needNothing needs = iota
	needDev
	needTmpfs
	needBind // and, in the fallback, a mount id from statx
)

func (f *fixture) has(n needs, d *Dir) bool {
	switch n {
	case needDev:
		return f.dev
	case needTmpfs:
		return f.tmpfs
	case needBind:
		return f.bind && (d.fast || d.hasMnt)
	}
	return true
}

func TestOpen(t *testing.T) {
	fx := newFixture(t)
	tests := []struct {
		rel      string
		want     string // content, when it opens
		sentinel error
		kind     errs.Kind
		msg      string
		needs    needs
	}{
		{rel: "file.txt", want: "hello"},
		{rel: "a/b/nested.txt", want: "nested"},
		{rel: "./a//b/nested.txt/", want: "nested"},
		{rel: "a/./z.txt", want: "zed"},

		{rel: "link-abs", sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing link-abs: it is a symbolic link"},
		{rel: "link-rel", sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing link-rel: it is a symbolic link"},
		{rel: "link-in", sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing link-in: it is a symbolic link"},
		{rel: "a/link-up", sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing a/link-up: it is a symbolic link"},
		{rel: "sp ace", sentinel: ErrLink, kind: errs.PermissionDenied, msg: `refusing "sp ace": it is a symbolic link`},
		{rel: "linkdir/b/nested.txt", sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing linkdir/b/nested.txt: linkdir is a symbolic link"},
		{rel: "linkdir-out/secret", sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing linkdir-out/secret: linkdir-out is a symbolic link"},

		{rel: "../canary/secret", sentinel: ErrBadPath, kind: errs.Invalid, msg: `invalid path ../canary/secret: it must not contain ".."`},
		{rel: "a/../file.txt", sentinel: ErrBadPath, kind: errs.Invalid, msg: `invalid path a/../file.txt: it must not contain ".."`},
		{rel: "/etc/passwd", sentinel: ErrBadPath, kind: errs.Invalid, msg: "invalid path /etc/passwd: it must be relative"},
		{rel: "", sentinel: ErrBadPath, kind: errs.Invalid, msg: `invalid path "": it is empty`},
		{rel: ".", sentinel: ErrBadPath, kind: errs.Invalid, msg: "invalid path .: it names the directory itself"},
		{rel: "file.txt\x00", sentinel: ErrBadPath, kind: errs.Invalid, msg: `invalid path "file.txt\x00": it contains a NUL byte`},
		{rel: strings.Repeat("n", 256), sentinel: ErrBadPath, kind: errs.Invalid},

		{rel: "fifo", sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing fifo: it is a named pipe (FIFO), not a regular file"},
		{rel: "sock", sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing sock: it is a socket, not a regular file"},
		{rel: "empty", sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing empty: it is a directory, not a regular file"},
		{rel: "a/b", sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing a/b: it is a directory, not a regular file"},
		{rel: "file.txt/x", sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing file.txt/x: file.txt is not a directory"},
		{rel: "fifo/x", sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing fifo/x: fifo is not a directory"},
		{rel: "dev", sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing dev: it is a device, not a regular file", needs: needDev},

		{rel: "missing", kind: errs.NotFound, msg: "missing does not exist"},
		{rel: "a/missing/x", kind: errs.NotFound, msg: "a/missing/x does not exist"},

		{rel: "tmpfs/inner.txt", sentinel: ErrOtherDevice, kind: errs.PermissionDenied, msg: "refusing tmpfs/inner.txt: tmpfs is on another file system", needs: needTmpfs},
		{rel: "bind/inner.txt", sentinel: ErrOtherDevice, kind: errs.PermissionDenied, msg: "refusing bind/inner.txt: bind is on another file system", needs: needBind},
	}
	forEachMode(t, func(t *testing.T, fast bool) {
		d := openDir(t, fx.out, fast)
		for _, tt := range tests {
			t.Run(strings.ReplaceAll(tt.rel, "/", "|"), func(t *testing.T) {
				if !fx.has(tt.needs, d) {
					testenv.Need(t, "needs root (mknod, mount) or statx mount ids")
				}
				var (
					f   *os.File
					err error
				)
				within(t, "Open", func() { f, err = d.Open(tt.rel) })
				if tt.kind != errs.Other {
					if f != nil {
						f.Close()
					}
					checkErr(t, err, tt.sentinel, tt.kind, tt.msg, fx.root)
					return
				}
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer f.Close()
				b, err := io.ReadAll(f)
				if err != nil || string(b) != tt.want {
					t.Fatalf("read %q, %v; want %q", b, err, tt.want)
				}
				buf := make([]byte, 2)
				if n, err := f.ReadAt(buf, 1); n != 2 || err != nil || string(buf) != tt.want[1:3] {
					t.Errorf("ReadAt = %d, %v, %q", n, err, buf)
				}
				fi, err := f.Stat()
				if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(tt.want)) {
					t.Errorf("Stat = %v, %v", fi, err)
				}
				if clean, _, _ := cleanRel(tt.rel); f.Name() != filepath.Join(fx.out, clean) {
					t.Errorf("Name = %q", f.Name())
				}
			})
		}
	})
}

func TestSub(t *testing.T) {
	fx := newFixture(t)
	tests := []struct {
		rel      string
		sentinel error
		kind     errs.Kind
		msg      string
		needs    needs
	}{
		{rel: "a"},
		{rel: "a/b/"},
		{rel: "linkdir", sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing linkdir: it is a symbolic link"},
		{rel: "linkdir-out", sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing linkdir-out: it is a symbolic link"},
		{rel: "linkdir/b", sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing linkdir/b: linkdir is a symbolic link"},
		{rel: "file.txt", sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing file.txt: it is not a directory"},
		{rel: "fifo", sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing fifo: it is not a directory"},
		{rel: "..", sentinel: ErrBadPath, kind: errs.Invalid, msg: `invalid path ..: it must not contain ".."`},
		{rel: "missing", kind: errs.NotFound, msg: "missing does not exist"},
		{rel: "tmpfs", sentinel: ErrOtherDevice, kind: errs.PermissionDenied, msg: "refusing tmpfs: it is on another file system", needs: needTmpfs},
		{rel: "bind", sentinel: ErrOtherDevice, kind: errs.PermissionDenied, msg: "refusing bind: it is on another file system", needs: needBind},
	}
	forEachMode(t, func(t *testing.T, fast bool) {
		d := openDir(t, fx.out, fast)
		for _, tt := range tests {
			t.Run(strings.ReplaceAll(tt.rel, "/", "|"), func(t *testing.T) {
				if !fx.has(tt.needs, d) {
					testenv.Need(t, "needs root (mount) or statx mount ids")
				}
				var (
					s   *Dir
					err error
				)
				within(t, "Sub", func() { s, err = d.Sub(tt.rel) })
				if tt.kind != errs.Other {
					if s != nil {
						s.Close()
					}
					checkErr(t, err, tt.sentinel, tt.kind, tt.msg, fx.root)
					return
				}
				if err != nil {
					t.Fatalf("Sub: %v", err)
				}
				defer s.Close()
				if want := filepath.Join(fx.out, tt.rel); s.Path() != want {
					t.Errorf("Path = %q, want %q", s.Path(), want)
				}
				if s.fast != d.fast {
					t.Errorf("Sub does not resolve as its parent does")
				}
				if _, err := s.ReadFile("../file.txt", 100); !errors.Is(err, ErrBadPath) {
					t.Errorf("Sub lets .. out: %v", err)
				}
			})
		}
		s, err := d.Sub("a")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if b, err := s.ReadFile("b/nested.txt", 100); err != nil || string(b) != "nested" {
			t.Errorf("Sub(a).ReadFile(b/nested.txt) = %q, %v", b, err)
		}
		_, err = s.Open("link-up")
		checkErr(t, err, ErrLink, errs.PermissionDenied, "refusing link-up: it is a symbolic link", fx.root)
	})
}

func TestOpenDir(t *testing.T) {
	fx := newFixture(t)
	tests := []struct {
		path     string
		sentinel error
		kind     errs.Kind
		msg      string
	}{
		{path: fx.out},
		{path: filepath.Join(fx.out, "linkdir"), sentinel: ErrLink, kind: errs.PermissionDenied, msg: "refusing linkdir: it is a symbolic link"},
		{path: filepath.Join(fx.out, "file.txt"), sentinel: ErrNotRegular, kind: errs.PermissionDenied, msg: "refusing file.txt: it is not a directory"},
		{path: filepath.Join(fx.out, "missing"), kind: errs.NotFound, msg: "missing does not exist"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			d, err := OpenDir(tt.path)
			if tt.kind != errs.Other {
				checkErr(t, err, tt.sentinel, tt.kind, tt.msg, fx.root)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Path() != tt.path {
				t.Errorf("Path = %q", d.Path())
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err == nil {
				t.Error("second Close succeeded")
			}
			if _, err := d.Open("file.txt"); !errs.Is(err, errs.Invalid) {
				t.Errorf("Open after Close: %v", err)
			}
			if err := d.Walk(nil); !errs.Is(err, errs.Invalid) {
				t.Errorf("Walk after Close: %v", err)
			}
		})
	}
	t.Logf("openat2 fast path available: %v", openat2Probe.ok)
}

func TestReadFile(t *testing.T) {
	fx := newFixture(t)
	writeFile(t, filepath.Join(fx.out, "empty.txt"), "")
	forEachMode(t, func(t *testing.T, fast bool) {
		d := openDir(t, fx.out, fast)
		tests := []struct {
			rel  string
			max  int64
			want string
			kind errs.Kind
			msg  string
		}{
			{rel: "file.txt", max: 5, want: "hello"},
			{rel: "file.txt", max: 1 << 62, want: "hello"},
			{rel: "empty.txt", max: 0, want: ""},
			{rel: "file.txt", max: 4, kind: errs.TooLarge, msg: "file.txt is larger than 4 bytes"},
			{rel: "file.txt", max: -1, kind: errs.Invalid},
			{rel: "link-abs", max: 100, kind: errs.PermissionDenied, msg: "refusing link-abs: it is a symbolic link"},
			{rel: "fifo", max: 100, kind: errs.PermissionDenied, msg: "refusing fifo: it is a named pipe (FIFO), not a regular file"},
		}
		for _, tt := range tests {
			var (
				b   []byte
				err error
			)
			within(t, "ReadFile", func() { b, err = d.ReadFile(tt.rel, tt.max) })
			if tt.kind != errs.Other {
				checkErr(t, err, nil, tt.kind, tt.msg, fx.root)
				continue
			}
			if err != nil || string(b) != tt.want {
				t.Errorf("ReadFile(%q, %d) = %q, %v; want %q", tt.rel, tt.max, b, err, tt.want)
			}
		}
	})
}
