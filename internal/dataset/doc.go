// Package dataset is datasets and their versions: a dataset names an OBS
// folder and a layout; a version is an immutable manifest of the objects it
// was made from (keys, ETags, sizes and, in a versioned bucket, version
// ids), stored in the platform bucket and verified by its SHA-256 on every
// read. Nothing is copied.
//
//   - service.go: the Service, datasets (create, list, get, delete) and
//     who may do what (atelier:dataset:<Verb>).
//   - version.go: making a version in the background as the dataset's
//     owner — list, read and validate (format), split, write the manifest
//     (manifest), publish; resumed after a restart.
//   - verify.go: reading a version with its check against the objects now
//     (published or degraded, with what changed), its manifest, diffs,
//     validation without a version, and deleting a version.
//   - pins.go: the object versions a published version keeps from
//     lifecycle rules (Holds, which obs asks), only in buckets of the
//     dataset's owner.
//   - labels.go, autolabel.go: the draft's labels, set by people or
//     proposed by a deployed service; previews.go: the owner's updates,
//     previews and thumbnails; exporting.go: exports; jobs.go: a version
//     as a job's input.
//
// Sub-packages: format (layouts: detection, parsing, findings), manifest
// (encoding, splits, diffs, counts), export, preview.
package dataset
