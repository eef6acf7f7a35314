package dataset

// Pins: the object versions a published dataset version keeps from
// lifecycle rules (docs/datasets.md, "Lifecycle rules keep what the
// owner's versions pin"). Which pins hold is decided here; the store keeps
// them (meta.PublishDatasetVersion) and obs asks Holds before it expires a
// noncurrent version.

import (
	"bytes"
	"context"
	"sync/atomic"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/dataset/manifest"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
)

// Holds is what lifecycle rules ask before they expire an object version
// (obs.Options.Holds): one that a dataset version pins is kept. Only the
// versions of a bucket of the dataset's owner are pinned this way (see
// holdable), so no user keeps another's bytes. While the service records
// the pins of versions published before pins were (Init, in the
// background), Held answers Unavailable: a lifecycle pass then waits for
// the next one rather than expire what is about to be held.
type Holds struct {
	store   PinStore
	pending atomic.Int32 // recordings in progress
}

// NewHolds returns the Holds over store; pass it to the obs service and to
// the dataset service's Options.
func NewHolds(store PinStore) *Holds { return &Holds{store: store} }

// PinStore answers whether a dataset version pins an object version
// (meta.Datasets has it).
type PinStore interface {
	DatasetPinned(ctx context.Context, owner, bucket, key, versionID string) (bool, error)
}

// Held reports whether a version of a dataset of owner (the bucket's)
// pins the object version.
func (h *Holds) Held(ctx context.Context, owner, bucket, key, versionID string) (bool, error) {
	if h.pending.Load() > 0 {
		return false, errs.E("dataset.Held", errs.Unavailable,
			"the pins of dataset versions published before pins were recorded are still being recorded")
	}
	return h.store.DatasetPinned(ctx, owner, bucket, key, versionID)
}

// pinnedBy is what the manifest pins by version id: the distinct object
// versions, and how many distinct objects they are (one decode of it).
func pinnedBy(data []byte) (pins []meta.ObjectPin, objects int, err error) {
	seen := map[meta.ObjectPin]bool{}
	keys := map[manifest.Ref]bool{}
	err = manifest.Decode(bytes.NewReader(data), func(_ int, l *manifest.Line) error {
		for _, r := range l.Refs() {
			p := meta.ObjectPin{Bucket: r.Bucket, Key: r.Key, VersionID: r.VersionID}
			if r.VersionID == "" || seen[p] {
				continue
			}
			seen[p] = true
			pins = append(pins, p)
			keys[manifest.Ref{Bucket: r.Bucket, Key: r.Key}] = true
		}
		return nil
	})
	return pins, len(keys), err
}

// holdable is what of pins a version keeps from lifecycle rules: those in
// buckets of the dataset's owner. In another user's bucket nothing is held
// (a reader must not keep an owner's bytes forever): those pins degrade
// the version when the owner's rules expire them. Buckets are read as
// user, the owner, who has just listed them.
func (s *Service) holdable(ctx context.Context, user *obs.Caller, owner string, pins []meta.ObjectPin) ([]meta.ObjectPin, error) {
	owned := map[string]bool{}
	var out []meta.ObjectPin
	for _, p := range pins {
		mine, ok := owned[p.Bucket]
		if !ok {
			var err error
			if mine, err = s.owns(ctx, user, owner, p.Bucket); err != nil {
				return nil, err
			}
			owned[p.Bucket] = mine
		}
		if mine {
			out = append(out, p)
		}
	}
	return out, nil
}

// owns reports whether owner owns bucket, looked at as user (the owner):
// a bucket the owner may not even look at is not theirs.
func (s *Service) owns(ctx context.Context, user *obs.Caller, owner, bucket string) (bool, error) {
	b, err := s.obs.HeadBucket(ctx, user, bucket)
	if errs.Is(err, errs.PermissionDenied) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return b.OwnerID == owner, nil
}

// holdEarlierPins records the pins of the published versions whose pins do
// not count (PinsHeld false: published before pins were recorded, or a
// delete of them was cut short by a crash), so that lifecycle rules keep
// theirs too. Init runs it in the background, with Holds answering
// Unavailable meanwhile. A version it cannot do is logged and left as it
// was; one over another user's bucket is read again at each start (it
// holds nothing), which costs a bucket lookup, not a read of its manifest.
func (s *Service) holdEarlierPins(ctx context.Context) error {
	const op errs.Op = "dataset.holdEarlierPins"
	for _, status := range []string{api.DatasetVersionPublished, api.DatasetVersionDegraded} {
		recs, err := s.store.ListDatasetVersionsByStatus(ctx, status)
		if err != nil {
			return errs.E(op, err)
		}
		for _, r := range recs {
			if err := s.holdPinsOf(ctx, r); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s.log.Warn("the objects an earlier dataset version pins cannot be kept from lifecycle rules",
					"dataset", r.DatasetID, "version", r.Name, "err", errs.UserMessage(err))
			}
		}
	}
	return nil
}

func (s *Service) holdPinsOf(ctx context.Context, r *meta.DatasetVersionRecord) error {
	v, err := decodeVersion(r)
	if err != nil || v.PinnedObjects == 0 || r.PinsHeld {
		return err
	}
	ds, err := s.store.GetDataset(ctx, r.DatasetID)
	if err != nil {
		return err
	}
	d, err := decodeDataset(ds)
	if err != nil {
		return err
	}
	p, err := s.o.Principal(ctx, ds.OwnerID)
	if err != nil {
		return err
	}
	// A dataset's source never changes: over another user's bucket, its
	// manifest need not be read.
	bucket, _ := source(d)
	if mine, err := s.owns(ctx, obs.As(p), ds.OwnerID, bucket); errs.Is(err, errs.NotFound) || (err == nil && !mine) {
		return nil // not the owner's, or gone with every version it held
	} else if err != nil {
		return err
	}
	s.log.Info("recording the pins of a dataset version published before pins were recorded",
		"dataset", r.DatasetID, "version", r.Name, "pinned_objects", v.PinnedObjects)
	data, err := s.manifestBytes(ctx, r.DatasetID, v)
	if err != nil {
		return err
	}
	pinned, _, err := pinnedBy(data)
	if err != nil {
		return err
	}
	pins, err := s.holdable(ctx, obs.As(p), ds.OwnerID, pinned)
	if err != nil || len(pins) == 0 {
		return err
	}
	// The version as it is now (a check may have changed its status since
	// it was listed), with what it holds.
	cur, err := s.store.GetDatasetVersion(ctx, r.ID)
	if err != nil {
		return err
	}
	if v, err = decodeVersion(cur); err != nil {
		return err
	}
	v.HeldObjects = len(pins)
	cur.Record = encode(v)
	return s.store.PublishDatasetVersion(ctx, cur, pins)
}
