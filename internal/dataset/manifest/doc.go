// Package manifest owns the manifest of a dataset version: ModelArts'
// JSON Lines shape (one sample a line: its source, usage and
// annotations), plus the ETags and sizes Atelier needs to reference the
// objects in place. Encode writes the samples of a version, Decode
// streams a manifest back, Refs lists the objects a line depends on and
// Relocate points a line at a job's local copies. The package also
// summarises a version (Count, SizeHistogram, BoxHistogram), splits it
// into TRAIN, EVAL and TEST (Split, deterministic and stable when
// samples are added) and compares two versions (Compare). It is pure: no
// I/O besides the reader and writer it is given.
package manifest
