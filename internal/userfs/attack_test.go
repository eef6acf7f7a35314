package userfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// Bounds of one attack: whichever comes first.
const (
	attackSwaps = 10_000
	attackTime  = 3 * time.Second
)

// swapper replaces target by a symlink to canary and back, as fast as it
// can, until stop is closed or the bounds are reached. With exchange it
// swaps target with the ready-made symlink target+".link" atomically
// (renameat2 RENAME_EXCHANGE), so each state holds half the time; else it
// does the rename dance rename(target, tmp); symlink(canary, target);
// remove(target); rename(tmp, target).
func swapper(target, canary string, exchange bool, stop <-chan struct{}) (int, error) {
	deadline := time.Now().Add(attackTime)
	link, tmp := target+".link", target+".tmp"
	swaps := 0
	for ; swaps < attackSwaps && time.Now().Before(deadline); swaps++ {
		select {
		case <-stop:
			return swaps, nil
		default:
		}
		if exchange {
			if err := unix.Renameat2(unix.AT_FDCWD, target, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
				return swaps, err
			}
			continue
		}
		if err := os.Rename(target, tmp); err != nil {
			return swaps, err
		}
		if err := os.Symlink(canary, target); err != nil {
			return swaps, err
		}
		if err := os.Remove(target); err != nil {
			return swaps, err
		}
		if err := os.Rename(tmp, target); err != nil {
			return swaps, err
		}
	}
	return swaps, nil
}

// attack runs swapper on target (a symlink to canary in its swapped state)
// while the test goroutine walks d and reads everything it can, by the
// walk and by the fixed paths rels, and by Sub on subs. It fails the test
// if any read returns anything but the real content "REAL".
func attack(t *testing.T, d *Dir, target, canary string, exchange bool, rels, subs []string) {
	if exchange {
		if err := os.Symlink(canary, target+".link"); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		swaps int
		err   error
	}
	stop := make(chan struct{})
	done := make(chan result, 1)
	go func() {
		n, err := swapper(target, canary, exchange, stop)
		done <- result{n, err}
	}()
	finished := false
	defer func() {
		if !finished {
			close(stop)
			<-done
		}
	}()

	var reads, refusals int
	check := func(what string, b []byte, err error) {
		t.Helper()
		if err == nil {
			if string(b) != "REAL" {
				t.Fatalf("%s read %q: the canary leaked", what, b)
			}
			reads++
			return
		}
		// What a race may legitimately end in: the name is missing
		// between two renames, a link, or a component that is no longer
		// a directory when its type is looked at.
		if !errs.Is(err, errs.NotFound) && !errors.Is(err, ErrLink) && !errors.Is(err, ErrNotRegular) {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		refusals++
	}
	walk := func(d *Dir, prefix string) {
		t.Helper()
		err := d.Walk(func(rel string, fi fs.FileInfo) error {
			b, err := d.ReadFile(rel, 1<<10)
			check(prefix+rel+" (walked)", b, err)
			return nil
		})
		if err != nil {
			t.Fatalf("Walk: %v", err)
		}
	}
	for rounds := 0; ; rounds++ {
		select {
		case r := <-done:
			finished = true
			if r.err != nil {
				t.Fatalf("swapper: %v", r.err)
			}
			t.Logf("%d swaps, %d rounds: %d reads, %d refusals", r.swaps, rounds, reads, refusals)
			return
		default:
		}
		walk(d, "")
		for _, rel := range rels {
			b, err := d.ReadFile(rel, 1<<10)
			check(rel, b, err)
			if f, err := d.Open(rel); err == nil {
				buf := make([]byte, 64)
				n, _ := f.ReadAt(buf, 0)
				f.Close()
				check(rel+" (ReadAt)", buf[:n], nil)
			}
		}
		for _, rel := range subs {
			s, err := d.Sub(rel)
			if err != nil {
				check("Sub "+rel, nil, err)
				continue
			}
			walk(s, rel+"/")
			b, err := s.ReadFile("data", 1<<10)
			check(rel+"/data (Sub)", b, err)
			s.Close()
		}
	}
}

// attackTree is root/out (the Dir) with out/data and out/sub/{data,secret}
// holding "REAL", and root/canary/{data,secret} holding the canary.
func attackTree(t *testing.T) (out, canary string) {
	root := t.TempDir()
	out, canary = filepath.Join(root, "out"), filepath.Join(root, "canary")
	for _, p := range []string{"out/data", "out/sub/data", "out/sub/secret", "out/sub/deeper/data"} {
		writeFile(t, filepath.Join(root, p), "REAL")
	}
	for _, p := range []string{"canary/data", "canary/secret", "canary/deeper/data"} {
		writeFile(t, filepath.Join(root, p), canaryBytes)
	}
	return out, canary
}

func TestSwapDirForLink(t *testing.T) {
	for _, exchange := range []bool{false, true} {
		t.Run(map[bool]string{false: "rename", true: "exchange"}[exchange], func(t *testing.T) {
			forEachMode(t, func(t *testing.T, fast bool) {
				out, canary := attackTree(t)
				d := openDir(t, out, fast)
				attack(t, d, filepath.Join(out, "sub"), canary, exchange,
					[]string{"sub/data", "sub/secret", "sub/deeper/data"}, []string{"sub", "sub/deeper"})
			})
		})
	}
}

func TestSwapFileForLink(t *testing.T) {
	for _, exchange := range []bool{false, true} {
		t.Run(map[bool]string{false: "rename", true: "exchange"}[exchange], func(t *testing.T) {
			forEachMode(t, func(t *testing.T, fast bool) {
				out, canary := attackTree(t)
				d := openDir(t, out, fast)
				attack(t, d, filepath.Join(out, "data"), filepath.Join(canary, "secret"), exchange,
					[]string{"data", "data.link", "data.tmp"}, nil)
			})
		})
	}
}

// TestNoFDLeak counts the process's descriptors before and after every
// operation, succeeding and failing, in both modes.
func TestNoFDLeak(t *testing.T) {
	fx := newFixture(t)
	rels := []string{"file.txt", "a/b/nested.txt", "link-abs", "linkdir/b/nested.txt", "linkdir-out/secret", "fifo", "sock",
		"dev", "empty", "file.txt/x", "missing", "a/missing/x", "tmpfs/inner.txt", "bind/inner.txt", "../x", ""}
	exercise := func() {
		for _, fast := range []bool{true, false} {
			d, err := OpenDir(fx.out)
			if err != nil {
				t.Fatal(err)
			}
			d.fast = fast && d.fast
			for _, rel := range rels {
				if f, err := d.Open(rel); err == nil {
					f.Close()
				}
				d.ReadFile(rel, 1)
				d.ReadFile(rel, 100)
				if s, err := d.Sub(rel); err == nil {
					s.Walk(func(string, fs.FileInfo) error { return nil })
					s.Close()
				}
			}
			for _, rel := range []string{"a", "a/b", "linkdir", "tmpfs", "bind", "fifo"} {
				if s, err := d.Sub(rel); err == nil {
					s.Close()
				}
			}
			d.Walk(func(rel string, _ fs.FileInfo) error { _, err := d.ReadFile(rel, 100); return err })
			d.Walk(func(string, fs.FileInfo) error { return filepath.SkipAll })
			d.Walk(func(string, fs.FileInfo) error { return errors.New("stop") })
			d.walk(func(string, fs.FileInfo) error { return nil }, 1, MaxEntries)
			d.walk(func(string, fs.FileInfo) error { return nil }, MaxDepth, 2)
			d.Close()
		}
		for _, p := range []string{filepath.Join(fx.out, "linkdir"), filepath.Join(fx.out, "file.txt"), filepath.Join(fx.out, "missing")} {
			if d, err := OpenDir(p); err == nil {
				d.Close()
			}
		}
	}
	exercise() // the runtime's own descriptors (poller) are made now
	before := openFDs(t)
	for range 3 {
		exercise()
	}
	after := openFDs(t)
	var leaked []string
	for fd, target := range after {
		if before[fd] != target {
			leaked = append(leaked, fd+" -> "+target)
		}
	}
	if len(leaked) > 0 || len(after) != len(before) {
		t.Errorf("%d descriptors before, %d after; new: %s", len(before), len(after), strings.Join(leaked, ", "))
	}
}

// openFDs maps each open descriptor of the process to what it refers to.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		testenv.Need(t, "cannot list descriptors: %v", err)
	}
	m := make(map[string]string, len(ents))
	for _, e := range ents {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		m[e.Name()] = target
	}
	return m
}
