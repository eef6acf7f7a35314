package obs

import (
	"context"
	"fmt"
	"io"

	"github.com/atelier-dev/atelier/internal/blob"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// blobsReader streams a byte range of the concatenation of an object's
// blobs. It opens one blob at a time, reads straight into the caller's
// buffer, and so buffers nothing itself.
type blobsReader struct {
	ctx     context.Context
	store   blob.Store
	object  string      // "bucket/key", for messages
	blobs   []meta.Blob // blobs still to read; the first from off
	off     int64       // offset in blobs[0]
	left    int64       // bytes still to yield
	cur     blob.Reader // open reader of blobs[0], or nil
	sec     io.Reader   // the part of cur to read
	err     error       // sticky
	release func()      // called once by Close (unpins the blobs); may be nil
}

// openRange returns a reader of n bytes from offset off of the blobs. It
// opens the first blob now, so that lost bytes are reported before any
// byte is sent. The caller keeps the blobs from being deleted while the
// reader is open (Service.openPinned).
func openRange(ctx context.Context, store blob.Store, object string, blobs []meta.Blob, off, n int64) (*blobsReader, error) {
	for len(blobs) > 0 && off >= blobs[0].Size {
		off -= blobs[0].Size
		blobs = blobs[1:]
	}
	r := &blobsReader{ctx: ctx, store: store, object: object, blobs: blobs, off: off, left: n}
	if n > 0 {
		if err := r.open(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// open opens blobs[0] (skipping empty blobs) and positions at off.
func (r *blobsReader) open() error {
	for len(r.blobs) > 0 && r.blobs[0].Size == 0 {
		r.blobs = r.blobs[1:]
	}
	if len(r.blobs) == 0 {
		return fail("obs.read", CodeInconsistent,
			fmt.Sprintf("object %s: its blobs end %d bytes before its size", r.object, r.left), "")
	}
	b := r.blobs[0]
	br, err := r.store.Open(r.ctx, b.ID)
	if errs.Is(err, errs.NotFound) {
		return fail("obs.read", CodeInconsistent,
			fmt.Sprintf("object %s: its bytes (blob %s) are missing", r.object, b.ID),
			"the blob store lost data: restore the object from a copy", err)
	}
	if err != nil {
		return errs.E("obs.read", fmt.Sprintf("object %s: opening blob %s", r.object, b.ID), err)
	}
	if br.Size() != b.Size {
		br.Close()
		return fail("obs.read", CodeInconsistent,
			fmt.Sprintf("object %s: blob %s holds %d bytes; the index says %d", r.object, b.ID, br.Size(), b.Size), "")
	}
	r.cur = br
	r.sec = io.NewSectionReader(br, r.off, min(b.Size-r.off, r.left))
	return nil
}

func (r *blobsReader) Read(p []byte) (int, error) {
	for {
		if r.err != nil {
			return 0, r.err
		}
		if r.left == 0 {
			return 0, io.EOF
		}
		if r.cur == nil {
			if err := r.open(); err != nil {
				r.err = err
				return 0, err
			}
		}
		if int64(len(p)) > r.left {
			p = p[:r.left]
		}
		n, err := r.sec.Read(p)
		r.left -= int64(n)
		if err == io.EOF {
			r.closeCurrent()
			r.blobs = r.blobs[1:]
			r.off = 0
			err = nil
		}
		if err != nil {
			r.err = errs.E("obs.read", errs.IO, fmt.Sprintf("object %s: reading", r.object), err)
			return n, r.err
		}
		if n > 0 || len(p) == 0 {
			return n, nil
		}
	}
}

func (r *blobsReader) closeCurrent() {
	if r.cur != nil {
		r.cur.Close()
		r.cur, r.sec = nil, nil
	}
}

// Close releases the open blob and the blobs' pins.
func (r *blobsReader) Close() error {
	r.closeCurrent()
	if r.err == nil {
		r.err = errs.E("obs.read", errs.Invalid, "read after close")
	}
	if r.release != nil {
		r.release()
		r.release = nil
	}
	return nil
}
