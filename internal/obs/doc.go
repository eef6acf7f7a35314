// Package obs is Atelier's object storage service (OBS): buckets, objects
// and multipart uploads, what the S3 front end (package s3) and platform
// components (datasets, jobs, the model registry) call.
//
// The service joins two stores: the metadata store (package meta) indexes
// buckets, objects and uploads, and the blob store (package blob) holds the
// bytes as immutable blobs. An object is an ordered list of blobs: one for a
// PUT, one per part for a multipart upload (completing an upload copies no
// byte). Objects never share blobs, so a blob can be deleted as soon as the
// index entry that referenced it is gone and no reader uses it.
//
// Writes go bytes first, index second: PutObject streams the body into a new
// blob while hashing it (MD5 for the ETag, from Options.MD5, and any
// additional checksum) in the same pass, verifies Content-MD5, checksum and size — a bad body makes the
// blob store discard the blob — then indexes the object in one transaction
// and deletes the blobs of the object it replaced. A crash between the two
// steps leaves an unreferenced blob, which CollectGarbage removes once it is
// older than the bound it is given.
//
// A reader gets the whole version it found in the index. Every read (GET,
// copy source, archive, WriteObjects) takes a ticket before its index
// lookup and pins the blobs it found; a blob that an overwrite, a delete,
// lifecycle expiry or CollectGarbage unreferences is deleted only when no
// reader holds it and no lookup that could have seen it is still running
// (pins). These waits live in memory: after a crash the blobs are
// unreferenced, and the start-up CollectGarbage deletes them.
//
// Every method takes the Caller and authorizes the request itself. The
// decision is the pure function Authorize: an explicit Deny in the bucket
// policy or in a policy attached to the user wins; temporary credentials'
// session policy must allow the request; admins and the bucket's owner are
// allowed (buckets are private by default); otherwise an Allow in an
// attached policy or in the bucket policy (for the caller, or for "*",
// which is how anonymous access is granted) is needed. A refusal is
// AccessDenied naming the caller, the action, the bucket and the key.
//
// WriteArchive, ListAll and WriteObjects serve platform components that
// move many objects at once (a job's code and inputs): one call lists a
// prefix, one tar stream carries many objects, read straight from the index
// and the blob store, every object still authorized for the caller.
//
// Versioning (versioning.go): a bucket whose versioning is Enabled keeps
// every version of its keys; a delete adds a delete marker; reads, copies,
// tagging and deletes may name a version id ("null" for the null version,
// what never-versioned and Suspended buckets write). Old versions keep
// their blobs until they are deleted; deleting one retires its blobs like
// an overwrite does, so a reader of it still gets all of it.
//
// Object lock (lock.go): a bucket with object lock (versioning Enabled
// for good) gives each new version the retention its write asks for or
// the bucket's default, and a legal hold if asked; ?retention and
// ?legal-hold change them per version. A protected version is not
// deleted by a delete that names it, nor by lifecycle expiry: the pure
// functions CheckDelete and CheckRetention decide, on the version as the
// index holds it, in the index's transaction of the change.
//
// Errors carry ATL.OBS codes; S3Error maps them to S3 error codes and
// statuses. Conditional requests (CheckConditions), byte ranges
// (ParseRange), bucket names (ValidateBucketName), keys (ValidateKey),
// lifecycle and CORS rules are pure functions the S3 front end may use
// directly. ApplyLifecycle and CollectGarbage are the store's upkeep,
// which Background runs (the server starts it). Whether a lifecycle rule
// expires a version now is decided in one place, the pure functions
// ExpiresCurrent, ExpiresNoncurrent and ExpiresDeleteMarker (filters by
// prefix, tags and size; days or a date); an object's expiry is decided
// again, atomically, on the row it deletes (meta's DeleteObjectIf).
package obs
