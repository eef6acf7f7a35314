package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// DefaultSpoolBytes bounds the on-disk buffer of undelivered log lines.
const DefaultSpoolBytes = 64 << 20

// spool is the on-disk buffer of log lines not yet delivered to the server:
// JSON lines in segment files of dir, oldest first. Lines leave it only when
// acknowledged (a 2xx answer to the batch holding them); when it grows over
// its bound the oldest segment is dropped, delivered or not. One goroutine
// appends (under the caller's order) and one delivers; both may run at once.
type spool struct {
	dir      string
	max      int64 // bytes on disk at most (approximately: one segment over)
	segBytes int64 // a segment is closed when it reaches this size

	mu     sync.Mutex
	segs   []*segment // oldest first; the last is written
	total  int64      // bytes of segs
	next   int        // number of the next segment file
	acked  int64      // seq of the last line delivered or dropped
	ackOff int64      // offset in segs[0] after the last acknowledged line
	failed error      // the first write failure; later appends fail with it
}

type segment struct {
	path        string
	f           *os.File // nil once closed (the segment is full)
	first, last int64    // seqs of the first and last line
	size        int64
}

// openSpool creates an empty spool in dir (removing what a previous run
// left) bounded at maxBytes.
func openSpool(dir string, maxBytes int64) (*spool, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultSpoolBytes
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, errs.E("runner.openSpool", errs.IO, CodeLogBuffer, because(fmt.Sprintf("cannot clear the log buffer %s", dir), err), err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errs.E("runner.openSpool", errs.IO, CodeLogBuffer, because(fmt.Sprintf("cannot create the log buffer %s", dir), err), err)
	}
	return &spool{dir: dir, max: maxBytes, segBytes: max(maxBytes/16, 4<<10)}, nil
}

// append writes lines (seqs increasing, after every line appended before)
// and returns how many undelivered lines were dropped to stay in bounds.
func (s *spool) append(lines []api.LogLine) (dropped int64, err error) {
	if len(lines) == 0 {
		return 0, nil
	}
	var buf []byte
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			return 0, errs.E("runner.spool", errs.Internal, "cannot encode a log line", err)
		}
		buf = append(append(buf, b...), '\n')
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return 0, s.failed
	}
	seg := s.current()
	if seg == nil || seg.size >= s.segBytes {
		if seg != nil {
			seg.f.Close()
			seg.f = nil
		}
		p := filepath.Join(s.dir, fmt.Sprintf("%016d.seg", s.next))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			s.failed = errs.E("runner.spool", errs.IO, CodeLogBuffer, because("cannot write the log buffer", err), err)
			return 0, s.failed
		}
		s.next++
		seg = &segment{path: p, f: f, first: lines[0].Seq}
		s.segs = append(s.segs, seg)
	}
	if _, err := seg.f.Write(buf); err != nil {
		s.failed = errs.E("runner.spool", errs.IO, CodeLogBuffer, because("cannot write the log buffer", err), err)
		return 0, s.failed
	}
	seg.size += int64(len(buf))
	seg.last = lines[len(lines)-1].Seq
	s.total += int64(len(buf))
	for s.total > s.max && len(s.segs) > 1 {
		old := s.segs[0]
		if n := old.last - max(s.acked, old.first-1); n > 0 {
			dropped += n
		}
		s.acked = max(s.acked, old.last)
		s.removeOldest()
	}
	return dropped, nil
}

// current is the segment being written, or nil.
func (s *spool) current() *segment {
	if len(s.segs) == 0 {
		return nil
	}
	return s.segs[len(s.segs)-1]
}

// removeOldest deletes segs[0]. Called with mu held.
func (s *spool) removeOldest() {
	old := s.segs[0]
	if old.f != nil {
		old.f.Close()
	}
	os.Remove(old.path)
	s.total -= old.size
	s.segs = s.segs[1:]
	s.ackOff = 0
}

// batch is lines read from the spool, to acknowledge with ack.
type batch struct {
	Lines []api.LogLine
	seg   *segment
	end   int64 // offset in seg after the last line
}

// peek reads up to maxLines undelivered lines (and about maxBytes) in
// order, without removing them.
func (s *spool) peek(maxLines int, maxBytes int64) (batch, error) {
	s.mu.Lock()
	if len(s.segs) == 0 {
		s.mu.Unlock()
		return batch{}, nil
	}
	seg, off, size, acked := s.segs[0], s.ackOff, s.segs[0].size, s.acked
	if off >= size && len(s.segs) > 1 && seg.f == nil {
		// segs[0] is closed and fully delivered: it goes.
		s.removeOldest()
		s.mu.Unlock()
		return s.peek(maxLines, maxBytes)
	}
	s.mu.Unlock()
	if off >= size {
		return batch{}, nil
	}
	f, err := os.Open(seg.path)
	if err != nil {
		return batch{}, errs.E("runner.spool", errs.IO, CodeLogBuffer, because("cannot read the log buffer", err), err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 256<<10)
	b := batch{seg: seg, end: off}
	var n int64
	for len(b.Lines) < maxLines && n < maxBytes {
		raw, err := r.ReadBytes('\n')
		if err != nil {
			break // the section ends at a line boundary
		}
		b.end += int64(len(raw))
		n += int64(len(raw))
		var l api.LogLine
		if json.Unmarshal(raw, &l) != nil || l.Seq <= acked {
			continue
		}
		b.Lines = append(b.Lines, l)
	}
	return b, nil
}

// ack removes the lines of b, delivered.
func (s *spool) ack(b batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.segs) == 0 || s.segs[0] != b.seg {
		return // dropped meanwhile
	}
	if len(b.Lines) > 0 {
		s.acked = max(s.acked, b.Lines[len(b.Lines)-1].Seq)
	}
	s.ackOff = max(s.ackOff, b.end)
	if s.ackOff >= b.seg.size && b.seg.f == nil && len(s.segs) > 1 {
		s.removeOldest()
	}
}

// pending reports whether lines wait for delivery.
func (s *spool) pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, seg := range s.segs {
		off := int64(0)
		if i == 0 {
			off = s.ackOff
		}
		if seg.size > off && seg.last > s.acked {
			return true
		}
	}
	return false
}

// close releases the spool's files (it stays on disk).
func (s *spool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seg := range s.segs {
		if seg.f != nil {
			seg.f.Close()
			seg.f = nil
		}
	}
}
