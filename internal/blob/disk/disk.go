package disk

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/atelier-dev/atelier/internal/blob"
	"github.com/atelier-dev/atelier/internal/errs"
)

const (
	// bufSize is the copy buffer of a Put: reads fill it, one write(2)
	// empties it.
	bufSize = 1 << 20
	// shardRun is how many consecutive Puts share a leaf directory.
	shardRun = 256
	// noProgressLimit is how many (0, nil) reads in a row a Put accepts
	// before it gives up on the reader.
	noProgressLimit = 100
	// walkBatch is how many directory entries Walk reads at a time.
	walkBatch = 1024
	// directAlign is the alignment of a write that bypasses the page cache
	// (O_DIRECT): of the buffer's address, its length and the file offset.
	// 4096 is a multiple of the logical block size of disks (512 or 4096).
	directAlign = 4096
)

const (
	hintIO   errs.Hint = "check that the blob directory exists, is writable by the server and that its disk is not full"
	hintFull errs.Hint = "free space on the file system of the blob directory: deleting objects deletes their blobs (deletes keep working), or give it more space"
)

// writeErr is the error of a failed write to the store: kind NoSpace when
// the file system is full (ENOSPC) or the writer's quota is (EDQUOT), else
// IO.
func writeErr(op errs.Op, msg string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return errs.E(op, errs.NoSpace, msg+": the file system is full", err, hintFull)
	}
	return errs.E(op, errs.IO, msg, err, hintIO)
}

// Option configures Open.
type Option func(*options)

type options struct {
	log     *slog.Logger
	group   bool
	direct  bool
	reserve int64
	free    func(path string) (int64, error)
}

// WithLogger sets the logger Open reports removed crash leftovers to. The
// default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithGroupCommit turns group commit of directory fsyncs on (the default)
// or off. Off, every Put runs its own fsync of its directory; on, Puts that
// renamed into one directory while an fsync of it was running share the
// next one. Either way a Put returns only after an fsync that started after
// its rename has succeeded. Journaling file systems (ext4, XFS) batch
// concurrent fsyncs into one journal commit themselves, so the gain is in
// system calls and wake-ups: 4 KiB Puts from 32 goroutines on ext4 ran about
// 15% faster with it (mean of 20 alternating runs); on tmpfs, where fsync
// costs nothing, it is slower.
func WithGroupCommit(on bool) Option { return func(o *options) { o.group = on } }

// WithDirectIO turns direct writes on (the default) or off. On, a Put
// writes its first 1 MiB through the page cache and, when the body goes on,
// the rest straight to the disk (O_DIRECT, on Linux), except a last piece
// that is not a multiple of 4 KiB. Large blobs then cost no copy into the
// page cache and no write-back work, and do not crowd out what is cached;
// on the virtual disk of bench/obs, 8 writers of new 64 MiB files kept
// about 600 MiB/s this way, against 300 to 500 MiB/s through the page
// cache once its first GiB or two were absorbed, and about 1,000 MiB/s
// once the buffers came from huge pages (see newPair). Small blobs, and file
// systems that refuse O_DIRECT (tmpfs), go through the page cache. Either
// way fdatasync makes the bytes durable before Put returns.
func WithDirectIO(on bool) Option { return func(o *options) { o.direct = on } }

// WithReserve keeps n bytes of the file system holding the directory free
// for others (the metadata database next to it, deletes): a Put fails with
// kind NoSpace, and leaves nothing behind, when the file system has less
// than n bytes available (statfs: available blocks) before it begins or
// after any 1 MiB it writes. 0, the default, keeps no reserve. Where free
// space cannot be measured (not Linux, macOS, FreeBSD or DragonFly), Open
// logs that and keeps none.
func WithReserve(n int64) Option { return func(o *options) { o.reserve = max(n, 0) } }

// Store is a blob.Store in a directory. Its methods are safe for concurrent
// use.
type Store struct {
	dir, tmp, data string
	log            *slog.Logger
	group          bool
	reserve        int64                            // bytes kept free; 0: none
	free           func(path string) (int64, error) // free space of path's file system
	directOK       *atomic.Bool                     // writes may bypass the page cache; nil: off
	removed        int
	lock           io.Closer
	closed         atomic.Bool

	seq       atomic.Uint64 // Puts started; picks the shard
	shardBase uint64        // the shard of the first Put, random per Open
	bufs      sync.Pool     // *[]byte of bufSize: the first buffer of a Put
	pairs     *pairPool     // the buffers of a large Put's pipeline

	root   *dirNode                     // data/
	tops   [256]atomic.Pointer[dirNode] // data/xx
	leaves []atomic.Pointer[dirNode]    // data/xx/yy, 65,536 of them
}

var _ blob.Store = (*Store)(nil)

// Open opens the store in dir, creating dir, dir/tmp and dir/data (mode
// 0700) as needed, and removes the leftovers of Puts a crash interrupted
// (RemovedTemp says how many). While the Store is open no other Store, in
// this or another process, can open dir (on Linux, where flock(2) is used).
func Open(ctx context.Context, dir string, opts ...Option) (*Store, error) {
	const op errs.Op = "disk.Open"
	o := options{log: slog.New(slog.DiscardHandler), group: true, direct: true, free: freeBytes}
	for _, opt := range opts {
		opt(&o)
	}
	if err := ctx.Err(); err != nil {
		return nil, errs.E(op, err)
	}
	if dir == "" {
		return nil, errs.E(op, errs.Invalid, "the blob directory is not set", errs.Hint("set the data directory in the server configuration"))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot resolve blob directory %s", dir), err)
	}
	s := &Store{
		dir:     abs,
		tmp:     filepath.Join(abs, "tmp"),
		data:    filepath.Join(abs, "data"),
		log:     o.log,
		group:   o.group,
		reserve: o.reserve,
		free:    o.free,
		leaves:  make([]atomic.Pointer[dirNode], 1<<16),
	}
	if o.direct {
		s.directOK = new(atomic.Bool)
		s.directOK.Store(true)
	}
	s.bufs.New = func() any { b := alignedBuffer(bufSize); return &b }
	s.pairs = newPairPool()
	var seed [8]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read does not fail; it aborts the program instead
	s.shardBase = binary.BigEndian.Uint64(seed[:]) % (1 << 16)

	_, statErr := os.Stat(abs)
	created := errors.Is(statErr, fs.ErrNotExist)
	for _, d := range []string{abs, s.tmp, s.data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot create blob directory %s", d), err, hintIO)
		}
	}
	lock, busy, err := lockDir(filepath.Join(abs, "lock"))
	if busy {
		return nil, errs.E(op, errs.Conflict, fmt.Sprintf("blob directory %s is in use by another store", abs), errs.Hint("stop the other server using this data directory, or give this one its own"))
	}
	if err != nil {
		return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot lock blob directory %s", abs), err, hintIO)
	}
	s.lock = lock
	fail := func(err error) (*Store, error) {
		_ = lock.Close()
		return nil, err
	}
	n, err := removeLeftovers(s.tmp)
	s.removed = n
	if err != nil {
		return fail(errs.E(op, errs.IO, fmt.Sprintf("cannot remove leftover temp files in %s", s.tmp), err, hintIO))
	}
	if n > 0 {
		s.log.Info("blob store: removed temp files of interrupted writes", "dir", s.tmp, "count", n)
	}
	if err := probeWrite(s.tmp); err != nil {
		return fail(errs.E(op, errs.IO, fmt.Sprintf("blob directory %s is not writable", s.tmp), err, hintIO))
	}
	if s.reserve > 0 {
		if _, err := s.free(s.tmp); errors.Is(err, errors.ErrUnsupported) {
			s.log.Warn("blob store: free space cannot be measured on this system; no storage reserve is kept", "dir", abs)
			s.reserve = 0
		} else if err != nil {
			return fail(errs.E(op, errs.IO, fmt.Sprintf("cannot tell the free space of %s", abs), err, hintIO))
		}
	}
	// Make tmp/ and data/ (and dir itself, if new) durable before any Put
	// relies on them.
	if err := syncDir(abs); err != nil {
		return fail(errs.E(op, errs.IO, fmt.Sprintf("cannot sync blob directory %s", abs), err, hintIO))
	}
	if created {
		if err := syncDir(filepath.Dir(abs)); err != nil {
			return fail(errs.E(op, errs.IO, fmt.Sprintf("cannot sync directory %s", filepath.Dir(abs)), err, hintIO))
		}
	}
	s.root = newDirNode(s.data, nil)
	s.root.ready.Store(true)
	return s, nil
}

// removeLeftovers removes everything in tmp and says how many entries it
// removed.
func removeLeftovers(tmp string) (int, error) {
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(tmp, e.Name())); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// probeWrite creates and removes a file in dir.
func probeWrite(dir string) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := filepath.Join(dir, fmt.Sprintf("probe-%x", b))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	cerr := f.Close()
	if err := os.Remove(p); err != nil {
		return err
	}
	return cerr
}

// Dir is the directory the store was opened on, made absolute.
func (s *Store) Dir() string { return s.dir }

// RemovedTemp is the number of leftover temp files (Puts interrupted by a
// crash) that Open removed.
func (s *Store) RemovedTemp() int { return s.removed }

// Close releases the directory lock. Calls after Close fail; Readers opened
// before stay usable until closed. Closing twice is harmless.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	// Puts still running give their pairs back to a closed pool, which
	// releases them.
	s.pairs.close()
	if err := s.lock.Close(); err != nil {
		return errs.E("disk.Close", errs.IO, fmt.Sprintf("cannot unlock blob directory %s", s.dir), err)
	}
	return nil
}

func (s *Store) check(ctx context.Context, op errs.Op) error {
	if s.closed.Load() {
		return errs.E(op, errs.Unavailable, "the blob store is closed")
	}
	if err := ctx.Err(); err != nil {
		return errs.E(op, err)
	}
	return nil
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, r io.Reader) (string, int64, error) {
	const op errs.Op = "disk.Put"
	if err := s.check(ctx, op); err != nil {
		return "", 0, err
	}
	if err := s.checkSpace(op); err != nil {
		return "", 0, err
	}
	id, shard := s.newID()
	tmp := s.tmp + string(filepath.Separator) + id
	f, err := createFile(tmp, s.directOK)
	if err != nil {
		return "", 0, writeErr(op, fmt.Sprintf("cannot create temp file in %s", s.tmp), err)
	}
	size, err := s.copy(ctx, op, f, r)
	if err == nil {
		if serr := f.datasync(); serr != nil {
			err = writeErr(op, fmt.Sprintf("cannot sync %s", tmp), serr)
		}
	}
	if cerr := f.close(); err == nil && cerr != nil {
		err = writeErr(op, fmt.Sprintf("cannot close %s", tmp), cerr)
	}
	if err == nil {
		if cerr := ctx.Err(); cerr != nil {
			err = errs.E(op, cerr)
		}
	}
	if err == nil {
		err = s.commit(op, tmp, id, shard)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", 0, err
	}
	return id, size, nil
}

// checkSpace fails with kind NoSpace when the file system holds less than
// the reserve.
func (s *Store) checkSpace(op errs.Op) error {
	if s.reserve <= 0 {
		return nil
	}
	free, err := s.free(s.tmp)
	if err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot tell the free space of %s", s.dir), err, hintIO)
	}
	if free < s.reserve {
		return errs.E(op, errs.NoSpace, hintFull, fmt.Sprintf(
			"the file system of the blob directory has %d bytes available, less than the %d bytes kept free for the metadata and for deletes",
			free, s.reserve))
	}
	return nil
}

// copy writes everything r yields to f and says how many bytes that was.
// The first buffer is written by the caller: most bodies end within it.
// From the second on, a writer goroutine writes each full buffer while the
// caller fills the next (two buffers in flight, a pair from s.pairs), so
// reading the body and hashing it overlap the disk's work instead of
// waiting for it.
func (s *Store) copy(ctx context.Context, op errs.Op, f *tmpFile, r io.Reader) (int64, error) {
	bp := s.bufs.Get().(*[]byte)
	n, rerr := fill(r, *bp)
	size, err := s.writeBuf(op, f, (*bp)[:n], false)
	s.bufs.Put(bp)
	if err != nil || rerr != nil || n < bufSize {
		if err != nil {
			return size, err
		}
		return size, s.readEnd(op, rerr)
	}
	if err := ctx.Err(); err != nil {
		return size, errs.E(op, err)
	}

	type chunk struct {
		b []byte
		n int
	}
	pr := s.pairs.get()
	full := make(chan chunk, 1)
	free := make(chan []byte, 2)
	free <- pr.bufs[0]
	free <- pr.bufs[1]
	var (
		werr    error
		failed  atomic.Bool
		written = make(chan struct{})
	)
	go func() {
		defer close(written)
		for c := range full {
			if werr == nil {
				// Every buffer but the last is full, so each write starts at
				// a multiple of bufSize and may bypass the page cache.
				_, werr = s.writeBuf(op, f, c.b[:c.n], c.n%directAlign == 0)
				if werr != nil {
					failed.Store(true)
				}
			}
			free <- c.b
		}
	}()
	finish := func(err error) (int64, error) {
		close(full)
		<-written
		for range 2 {
			<-free
		}
		s.pairs.put(pr)
		if werr != nil {
			return size, werr
		}
		return size, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return finish(errs.E(op, err))
		}
		b := <-free
		if failed.Load() {
			free <- b
			return finish(nil)
		}
		n, rerr := fill(r, b)
		if n > 0 {
			full <- chunk{b, n}
			size += int64(n)
		} else {
			free <- b
		}
		if rerr != nil || n < len(b) {
			return finish(s.readEnd(op, rerr))
		}
	}
}

// writeBuf writes p to f (bypassing the page cache when direct allows)
// and checks the reserve after it; it returns len(p) once written.
func (s *Store) writeBuf(op errs.Op, f *tmpFile, p []byte, direct bool) (int64, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := f.write(p, direct); err != nil {
		return 0, writeErr(op, fmt.Sprintf("cannot write temp file in %s", s.tmp), err)
	}
	if err := s.checkSpace(op); err != nil {
		return int64(len(p)), err
	}
	return int64(len(p)), nil
}

// readEnd is the error of a Put whose body ended with rerr: nil at io.EOF.
func (s *Store) readEnd(op errs.Op, rerr error) error {
	if rerr == nil || rerr == io.EOF {
		return nil
	}
	return errs.E(op, "reading the blob's bytes", rerr)
}

// alignedBuffer returns n bytes whose address is a multiple of
// directAlign.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	off := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % directAlign); r != 0 {
		off = directAlign - r
	}
	return b[off : off+n : off+n]
}

// fill reads from r until buf is full or r fails (io.EOF included).
func fill(r io.Reader, buf []byte) (int, error) {
	n, idle := 0, 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		if m < 0 || m > len(buf)-n {
			return n, errors.New("reader returned an invalid count")
		}
		n += m
		if err != nil {
			return n, err
		}
		if m > 0 {
			idle = 0
		} else if idle++; idle >= noProgressLimit {
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}

// commit moves the synced temp file into its leaf directory and makes the
// rename durable.
func (s *Store) commit(op errs.Op, tmp, id string, shard uint16) error {
	leaf := s.leafNode(shard)
	final := leaf.path + string(filepath.Separator) + id
	for attempt := 0; ; attempt++ {
		if err := s.ensure(leaf); err != nil {
			return writeErr(op, fmt.Sprintf("cannot create blob directory %s", leaf.path), err)
		}
		err := os.Rename(tmp, final)
		if err == nil {
			break
		}
		if attempt == 0 && errors.Is(err, fs.ErrNotExist) {
			// Someone removed the leaf directory (or its parent) behind our
			// back: forget what we knew and create it again, once.
			leaf.ready.Store(false)
			leaf.parent.ready.Store(false)
			continue
		}
		return writeErr(op, fmt.Sprintf("cannot move blob into %s", leaf.path), err)
	}
	if err := s.syncNode(leaf); err != nil {
		_ = os.Remove(final)
		return writeErr(op, fmt.Sprintf("cannot sync directory %s", leaf.path), err)
	}
	return nil
}

// Open implements blob.Store.
func (s *Store) Open(ctx context.Context, id string) (blob.Reader, error) {
	const op errs.Op = "disk.OpenBlob"
	if err := s.check(ctx, op); err != nil {
		return nil, err
	}
	p, err := s.path(op, id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.E(op, errs.NotFound, fmt.Sprintf("blob %s not found", id))
	}
	if err != nil {
		return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot open blob %s", id), err, hintIO)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot stat blob %s", id), err, hintIO)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, errs.E(op, errs.NotFound, fmt.Sprintf("blob %s not found", id))
	}
	return &reader{f: f, size: fi.Size()}, nil
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, id string) error {
	const op errs.Op = "disk.Delete"
	if err := s.check(ctx, op); err != nil {
		return err
	}
	p, err := s.path(op, id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot delete blob %s", id), err, hintIO)
	}
	return nil
}

// Walk implements blob.Store. Entries of data/ that are not blobs (names
// not of the id form, or not in the directory their id names) are skipped.
func (s *Store) Walk(ctx context.Context, fn func(id string, size int64, modTime time.Time) error) error {
	const op errs.Op = "disk.Walk"
	if err := s.check(ctx, op); err != nil {
		return err
	}
	tops, err := os.ReadDir(s.data)
	if err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot list %s", s.data), err, hintIO)
	}
	for _, top := range tops {
		if !top.IsDir() || !isHexPair(top.Name()) {
			continue
		}
		topPath := filepath.Join(s.data, top.Name())
		leaves, err := os.ReadDir(topPath)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return errs.E(op, errs.IO, fmt.Sprintf("cannot list %s", topPath), err, hintIO)
		}
		for _, leaf := range leaves {
			if !leaf.IsDir() || !isHexPair(leaf.Name()) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return errs.E(op, err)
			}
			prefix := top.Name() + leaf.Name()
			if err := s.walkLeaf(ctx, op, filepath.Join(topPath, leaf.Name()), prefix, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) walkLeaf(ctx context.Context, op errs.Op, dir, prefix string, fn func(string, int64, time.Time) error) error {
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot list %s", dir), err, hintIO)
	}
	defer d.Close()
	for {
		ents, err := d.ReadDir(walkBatch)
		for _, e := range ents {
			name := e.Name()
			if !e.Type().IsRegular() || !validID(name) || name[:4] != prefix {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since the listing
			}
			if err != nil {
				return errs.E(op, errs.IO, fmt.Sprintf("cannot stat blob %s", name), err, hintIO)
			}
			if err := fn(name, fi.Size(), fi.ModTime()); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errs.E(op, errs.IO, fmt.Sprintf("cannot list %s", dir), err, hintIO)
		}
		if err := ctx.Err(); err != nil {
			return errs.E(op, err)
		}
	}
}

// Pending is the number of files in tmp/: Puts in progress, or left behind
// by Puts that failed to clean up. It is for tests and diagnostics.
func (s *Store) Pending(ctx context.Context) (int, error) {
	const op errs.Op = "disk.Pending"
	if err := s.check(ctx, op); err != nil {
		return 0, err
	}
	ents, err := os.ReadDir(s.tmp)
	if err != nil {
		return 0, errs.E(op, errs.IO, fmt.Sprintf("cannot list %s", s.tmp), err, hintIO)
	}
	return len(ents), nil
}

// reader is a blob.Reader over an open file.
type reader struct {
	f    *os.File
	size int64
}

func (r *reader) Size() int64 { return r.size }

// ReadAt implements io.ReaderAt: a short read comes with io.EOF, unwrapped.
func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return n, errs.E("disk.ReadAt", errs.IO, fmt.Sprintf("cannot read blob %s", filepath.Base(r.f.Name())), err, hintIO)
	}
	return n, err
}

func (r *reader) Close() error {
	if err := r.f.Close(); err != nil {
		return errs.E("disk.Close", errs.IO, fmt.Sprintf("cannot close blob %s", filepath.Base(r.f.Name())), err)
	}
	return nil
}
