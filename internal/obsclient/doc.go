// Package obsclient is the transfer engine behind `atelier obs`: it copies,
// syncs, moves and removes files and objects between the local file system
// and OBS, Atelier's S3-compatible object storage, independent of the
// command line.
//
// # Layers
//
//   - S3 is the consumer-owned interface over the few S3 operations the
//     engine needs; NewMinio adapts github.com/minio/minio-go/v7 to it, with
//     one shared keep-alive http.Transport sized for the parallelism, so many
//     small files reuse a few connections. Package obsmem is an in-memory S3
//     for tests.
//   - ParseLocation reads obs://bucket/key and s3://bucket/key (the same
//     thing) and local paths. A trailing "/" marks a directory prefix.
//   - PlanCopy and PlanSync are pure functions from listings to a Plan: the
//     list of transfers, the objects or files to delete and the warnings.
//   - Client resolves sources and destinations, plans and executes: -j files
//     in parallel, -p parts in parallel for files larger than the part size,
//     multipart uploads that resume, ranged parallel downloads, server-side
//     copies for OBS to OBS.
//
// # Paths
//
// A recursive copy copies the CONTENTS of its source under the destination,
// as `aws s3 cp --recursive` and `rclone copy` do: copying DIR to
// obs://b/ds/ writes DIR/cat/1.jpg to obs://b/ds/cat/1.jpg. Without the
// trailing slash the destination means the same for a recursive copy. A
// single file copied to a destination that ends in "/" or names an existing
// directory (or an OBS prefix holding objects) keeps its base name there.
// Directories named .git and __pycache__ are skipped unless All is set; a
// sync never deletes what these rules skip.
//
// # Sync decisions
//
// A sync copies a file when the destination lacks it or it differs. Sizes
// are compared first. For equal sizes: an object whose ETag is a plain MD5
// (a single-part upload) is compared by MD5 with the local file; for a
// multipart ETag ("<md5 of part md5s>-N") the local multipart ETag is
// computed for every likely part size that gives N parts (the configured
// part size first, then the usual 5, 8, 16, 32, 64… MiB); when no part size
// gives N parts, or the ETag is of neither form, or both sides are objects
// with different multipart ETags, the files count as equal when the
// destination is at least as new as the source (size + mtime). Downloads set
// the local mtime to the object's last-modified time, so a later sync in
// either direction sees them as equal.
//
// # Resume
//
// A multipart upload keeps a checkpoint in CheckpointDir
// (~/.atelier/checkpoints by default in the CLI) named by a hash of the
// absolute source path and the destination URL; it records the file's size
// and mtime, the part size, the upload ID and the parts known to be
// uploaded. Running the same copy again reads it, asks the server for the
// upload's parts (ListParts), keeps the parts that match the checkpoint or,
// for parts the checkpoint missed, whose ETag equals the MD5 of the local
// bytes, and uploads only the rest. A checkpoint whose file changed (size or
// mtime) or whose upload is gone is discarded and the stale upload aborted;
// the checkpoint is deleted when the upload completes. An upload that
// fails and cannot be resumed (no CheckpointDir, or its checkpoint could
// not be written) is aborted at once; AbortResumable aborts every upload
// the checkpoints of CheckpointDir name and deletes them, for a caller
// that will not come back to them (a job's failed final sync).
//
// # Integrity
//
// Bodies are sent as UNSIGNED-PAYLOAD and hashed while they stream; the
// ETag the server answers is checked against the local MD5 (for each part,
// and for the completed multipart object) whenever it has the MD5 form.
// Downloads in one piece are checked the same way; ranged downloads are
// checked by size.
package obsclient
