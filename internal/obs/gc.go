package obs

import (
	"context"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// gcBatch is how many blob ids one BlobsInUse question carries.
const gcBatch = 500

// GCResult counts what CollectGarbage did.
type GCResult struct {
	Scanned      int   // blobs walked
	Deleted      int   // blobs deleted
	DeletedBytes int64 // their bytes
}

// CollectGarbage deletes the blobs that no object and no upload part
// references and that are older than olderThan. Blobs are written before
// they are indexed, so a crash between the two, or a failed cleanup, leaves
// an unreferenced blob; the age bound keeps blobs of uploads still in flight.
// It is also what deletes, after a crash, the blobs of replaced or deleted
// objects whose deletion was waiting for readers (those waits live in
// memory only); in a running server, a blob a reader still uses is left to
// that reader.
func (s *Service) CollectGarbage(ctx context.Context, olderThan time.Duration) (GCResult, error) {
	const op errs.Op = "obs.CollectGarbage"
	var res GCResult
	cutoff := s.now().Add(-olderThan)
	type candidate struct {
		id   string
		size int64
	}
	batch := make([]candidate, 0, gcBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		ids := make([]string, len(batch))
		for i, c := range batch {
			ids[i] = c.id
		}
		inUse, err := s.store.BlobsInUse(ctx, ids)
		if err != nil {
			return storeErr(op, "asking which blobs are in use", err)
		}
		size := map[string]int64{}
		var unused []string
		for _, c := range batch {
			if !inUse[c.id] {
				unused = append(unused, c.id)
				size[c.id] = c.size
			}
		}
		// A blob a reader still uses (its object was replaced or deleted
		// while being read) is deleted when the reader is done.
		for _, id := range s.pins.retire(unused) {
			if err := s.blobs.Delete(ctx, id); err != nil {
				return storeErr(op, "deleting blob "+id, err)
			}
			s.log.Debug("deleted unreferenced blob", "blob", id, "size", size[id])
			res.Deleted++
			res.DeletedBytes += size[id]
		}
		batch = batch[:0]
		return nil
	}
	err := s.blobs.Walk(ctx, func(id string, size int64, modTime time.Time) error {
		res.Scanned++
		if !modTime.Before(cutoff) {
			return nil
		}
		batch = append(batch, candidate{id, size})
		if len(batch) == gcBatch {
			return flush()
		}
		return ctx.Err()
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return res, errs.E(op, err)
	}
	if res.Deleted > 0 {
		s.log.Info("garbage collection", "scanned", res.Scanned, "deleted", res.Deleted, "bytes", res.DeletedBytes)
	}
	return res, nil
}

// blobIDs lists the ids of blobs.
func blobIDs(bs []meta.Blob) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}
