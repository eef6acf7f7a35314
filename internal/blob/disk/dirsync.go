package disk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// dirNode is a directory of the fan-out tree: whether it is known to exist
// durably, and the group commit of its fsyncs.
type dirNode struct {
	path   string
	parent *dirNode // nil for data/

	ready atomic.Bool // created (or found) and its entry in parent synced
	mk    sync.Mutex  // serialises creation

	mu   sync.Mutex
	cond sync.Cond
	busy bool   // an fsync of the directory is running
	next *round // the round the next fsync will complete
}

// round is one fsync of a directory shared by every caller that joined it.
type round struct {
	done bool
	err  error
}

func newDirNode(path string, parent *dirNode) *dirNode {
	d := &dirNode{path: path, parent: parent}
	d.cond.L = &d.mu
	return d
}

// groupSync makes every change to d made before the call durable. A caller
// joins the round that the next fsync to start will complete; while an
// fsync is running, callers pile up in that round, and when it ends one of
// them runs the fsync for all. Every member's change precedes the start of
// its round's fsync, because joining happens under mu before the round is
// taken (next set to nil) by its runner.
func (d *dirNode) groupSync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == nil {
		d.next = &round{}
	}
	r := d.next
	for d.busy && !r.done {
		d.cond.Wait()
	}
	if r.done {
		return r.err
	}
	d.busy = true
	d.next = nil
	d.mu.Unlock()
	err := syncDir(d.path)
	d.mu.Lock()
	r.done, r.err = true, err
	d.busy = false
	d.cond.Broadcast()
	return err
}

// syncNode makes changes to d's entries durable.
func (s *Store) syncNode(d *dirNode) error {
	if s.group {
		return d.groupSync()
	}
	return syncDir(d.path)
}

// ensure creates d (and its parents) unless this Store already did, and
// makes its entry in its parent durable. A directory that already exists is
// synced into its parent all the same: a previous process may have crashed
// between its mkdir and the fsync.
func (s *Store) ensure(d *dirNode) error {
	if d.ready.Load() {
		return nil
	}
	d.mk.Lock()
	defer d.mk.Unlock()
	if d.ready.Load() {
		return nil
	}
	if err := s.ensure(d.parent); err != nil {
		return err
	}
	if err := os.Mkdir(d.path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := s.syncNode(d.parent); err != nil {
		return fmt.Errorf("sync %s: %w", d.parent.path, err)
	}
	d.ready.Store(true)
	return nil
}

// topNode is the node of data/xx.
func (s *Store) topNode(i uint8) *dirNode {
	slot := &s.tops[i]
	if d := slot.Load(); d != nil {
		return d
	}
	d := newDirNode(filepath.Join(s.data, fmt.Sprintf("%02x", i)), s.root)
	if slot.CompareAndSwap(nil, d) {
		return d
	}
	return slot.Load()
}

// leafNode is the node of data/xx/yy for a shard.
func (s *Store) leafNode(shard uint16) *dirNode {
	slot := &s.leaves[shard]
	if d := slot.Load(); d != nil {
		return d
	}
	top := s.topNode(uint8(shard >> 8))
	d := newDirNode(filepath.Join(top.path, fmt.Sprintf("%02x", uint8(shard))), top)
	if slot.CompareAndSwap(nil, d) {
		return d
	}
	return slot.Load()
}
