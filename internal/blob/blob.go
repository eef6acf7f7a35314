package blob

import (
	"context"
	"io"
	"time"
)

// Store holds immutable blobs of bytes under ids it assigns. Ids are
// non-empty, URL-safe ([A-Za-z0-9_-]) and unguessable, and never derived from
// input; an id of a form the store never makes is Invalid to Open and Delete.
type Store interface {
	// Put writes everything r yields as a new blob and returns its id and
	// size once the bytes are durable (synced to stable storage). If r fails
	// or ctx ends, nothing is left behind. A store with no room for the
	// blob fails with kind errs.NoSpace, also leaving nothing behind.
	Put(ctx context.Context, r io.Reader) (id string, size int64, err error)
	// Open opens a blob for reading; NotFound if none, Invalid if id is
	// malformed.
	Open(ctx context.Context, id string) (Reader, error)
	// Delete removes a blob; a missing blob is not an error, a malformed id
	// is (Invalid).
	Delete(ctx context.Context, id string) error
	// Walk calls fn for every blob, in no particular order, until fn returns
	// an error (returned by Walk).
	Walk(ctx context.Context, fn func(id string, size int64, modTime time.Time) error) error
}

// Reader reads one blob at any offset.
type Reader interface {
	io.ReaderAt
	io.Closer
	Size() int64
}
