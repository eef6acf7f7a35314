-- Bucket versioning. A bucket's state is '' (never versioned), 'Enabled'
-- or 'Suspended'. The objects table keeps one row per key, as before: the
-- key's latest version when that is not a delete marker, so listings,
-- GETs and the writes of never-versioned buckets read and write what they
-- did. Its version_id is '' for the null version (every object written
-- before this migration, and every one in a never-versioned bucket).
--
-- object_versions holds every other version: noncurrent versions, and
-- delete markers (delete_marker 1, no blobs), the latest one included.
-- Within a key, seq orders them, the greatest newest; the objects row,
-- when there is one, is newer than all of them. version_blobs records the
-- blobs of versions, as object_blobs does for objects, for BlobsInUse.
--
-- Down keeps each key's objects row (its latest non-marker version) and
-- drops every other version and delete marker: their blobs are then
-- unreferenced, and the server's garbage collection deletes them.
--
-- Each version keeps its own ACL (acl, the objects.acl document of
-- migration 00013): an object's ACL goes with it into object_versions
-- when it becomes noncurrent, and back when a version is made current.

-- +goose Up
ALTER TABLE buckets ADD COLUMN versioning TEXT NOT NULL DEFAULT '';
ALTER TABLE objects ADD COLUMN version_id TEXT COLLATE "C" NOT NULL DEFAULT '';

CREATE TABLE object_versions (
    bucket        TEXT COLLATE "C" NOT NULL REFERENCES buckets (name),
    key           TEXT COLLATE "C" NOT NULL,
    version_id    TEXT COLLATE "C" NOT NULL,
    seq           BIGINT NOT NULL,
    delete_marker SMALLINT NOT NULL DEFAULT 0,
    size          BIGINT NOT NULL,
    etag          TEXT NOT NULL DEFAULT '',
    content_type  TEXT NOT NULL DEFAULT '',
    metadata      TEXT NOT NULL DEFAULT '{}',
    headers       TEXT NOT NULL DEFAULT '{}',
    checksums     TEXT NOT NULL DEFAULT '{}',
    storage_class TEXT NOT NULL DEFAULT '',
    owner_id      TEXT NOT NULL DEFAULT '',
    last_modified BIGINT,
    blob_id       TEXT COLLATE "C" NOT NULL DEFAULT '',
    blobs         TEXT NOT NULL DEFAULT '[]',
    tags          TEXT NOT NULL DEFAULT '{}',
    acl           TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (bucket, key, version_id)
);
CREATE UNIQUE INDEX object_versions_order ON object_versions (bucket, key, seq DESC);

CREATE TABLE version_blobs (
    bucket     TEXT COLLATE "C" NOT NULL,
    key        TEXT COLLATE "C" NOT NULL,
    version_id TEXT COLLATE "C" NOT NULL,
    blob_id    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (bucket, key, version_id, blob_id),
    FOREIGN KEY (bucket, key, version_id) REFERENCES object_versions (bucket, key, version_id) ON DELETE CASCADE
);
CREATE INDEX version_blobs_blob ON version_blobs (blob_id);

-- +goose Down
DROP TABLE version_blobs;
DROP TABLE object_versions;
ALTER TABLE objects DROP COLUMN version_id;
ALTER TABLE buckets DROP COLUMN versioning;
