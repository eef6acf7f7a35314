-- OBS: buckets, the object index, multipart uploads and blob references.
-- Object keys are TEXT in the default BINARY collation, so they sort in byte
-- order, which for UTF-8 is code point order; (bucket, key) is the primary
-- key of a WITHOUT ROWID table, so a listing is a range scan of one B-tree.
-- Metadata, headers, checksums and blobs are JSON text. Times are epoch
-- milliseconds, NULL for the zero time.

-- +goose Up
CREATE TABLE buckets (
    name        TEXT PRIMARY KEY,
    owner_id    TEXT NOT NULL DEFAULT '',
    region      TEXT NOT NULL DEFAULT '',
    create_time INTEGER,
    policy      TEXT NOT NULL DEFAULT '',
    lifecycle   TEXT NOT NULL DEFAULT '',
    cors        TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX buckets_owner ON buckets (owner_id, name);

CREATE TABLE objects (
    bucket        TEXT NOT NULL REFERENCES buckets (name),
    key           TEXT NOT NULL,
    size          INTEGER NOT NULL,
    etag          TEXT NOT NULL DEFAULT '',
    content_type  TEXT NOT NULL DEFAULT '',
    metadata      TEXT NOT NULL DEFAULT '{}',
    headers       TEXT NOT NULL DEFAULT '{}',
    checksums     TEXT NOT NULL DEFAULT '{}',
    storage_class TEXT NOT NULL DEFAULT '',
    owner_id      TEXT NOT NULL DEFAULT '',
    last_modified INTEGER,
    blobs         TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (bucket, key)
) STRICT, WITHOUT ROWID;

-- One row per distinct blob of an object, for BlobsInUse.
CREATE TABLE object_blobs (
    bucket  TEXT NOT NULL,
    key     TEXT NOT NULL,
    blob_id TEXT NOT NULL,
    PRIMARY KEY (bucket, key, blob_id),
    FOREIGN KEY (bucket, key) REFERENCES objects (bucket, key) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
CREATE INDEX object_blobs_blob ON object_blobs (blob_id);

CREATE TABLE uploads (
    id            TEXT PRIMARY KEY,
    bucket        TEXT NOT NULL REFERENCES buckets (name),
    key           TEXT NOT NULL,
    owner_id      TEXT NOT NULL DEFAULT '',
    initiated     INTEGER,
    content_type  TEXT NOT NULL DEFAULT '',
    metadata      TEXT NOT NULL DEFAULT '{}',
    headers       TEXT NOT NULL DEFAULT '{}',
    storage_class TEXT NOT NULL DEFAULT '',
    checksum_algo TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX uploads_bucket_key ON uploads (bucket, key, id);

CREATE TABLE upload_parts (
    upload_id     TEXT NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
    number        INTEGER NOT NULL CHECK (number BETWEEN 1 AND 10000),
    blob_id       TEXT NOT NULL,
    size          INTEGER NOT NULL,
    etag          TEXT NOT NULL DEFAULT '',
    checksum      TEXT NOT NULL DEFAULT '',
    last_modified INTEGER,
    PRIMARY KEY (upload_id, number)
) STRICT, WITHOUT ROWID;
CREATE INDEX upload_parts_blob ON upload_parts (blob_id);

-- +goose Down
DROP TABLE upload_parts;
DROP TABLE uploads;
DROP TABLE object_blobs;
DROP TABLE objects;
DROP TABLE buckets;
