-- OBS: buckets, the object index, multipart uploads and blob references.
-- Object keys, bucket names and ids use the "C" collation, so they sort in
-- byte order (for UTF-8, code point order) as in SQLite; (bucket, key) is the
-- primary key, so a listing is a range scan of its index. Metadata, headers,
-- checksums and blobs are JSON kept as TEXT, which round-trips exactly. Times
-- are epoch milliseconds, NULL for the zero time.

-- +goose Up
CREATE TABLE buckets (
    name        TEXT COLLATE "C" PRIMARY KEY,
    owner_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    region      TEXT NOT NULL DEFAULT '',
    create_time BIGINT,
    policy      TEXT NOT NULL DEFAULT '',
    lifecycle   TEXT NOT NULL DEFAULT '',
    cors        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX buckets_owner ON buckets (owner_id, name);

CREATE TABLE objects (
    bucket        TEXT COLLATE "C" NOT NULL REFERENCES buckets (name),
    key           TEXT COLLATE "C" NOT NULL,
    size          BIGINT NOT NULL,
    etag          TEXT NOT NULL DEFAULT '',
    content_type  TEXT NOT NULL DEFAULT '',
    metadata      TEXT NOT NULL DEFAULT '{}',
    headers       TEXT NOT NULL DEFAULT '{}',
    checksums     TEXT NOT NULL DEFAULT '{}',
    storage_class TEXT NOT NULL DEFAULT '',
    owner_id      TEXT NOT NULL DEFAULT '',
    last_modified BIGINT,
    blobs         TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (bucket, key)
);

-- One row per distinct blob of an object, for BlobsInUse.
CREATE TABLE object_blobs (
    bucket  TEXT COLLATE "C" NOT NULL,
    key     TEXT COLLATE "C" NOT NULL,
    blob_id TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (bucket, key, blob_id),
    FOREIGN KEY (bucket, key) REFERENCES objects (bucket, key) ON DELETE CASCADE
);
CREATE INDEX object_blobs_blob ON object_blobs (blob_id);

CREATE TABLE uploads (
    id            TEXT COLLATE "C" PRIMARY KEY,
    bucket        TEXT COLLATE "C" NOT NULL REFERENCES buckets (name),
    key           TEXT COLLATE "C" NOT NULL,
    owner_id      TEXT NOT NULL DEFAULT '',
    initiated     BIGINT,
    content_type  TEXT NOT NULL DEFAULT '',
    metadata      TEXT NOT NULL DEFAULT '{}',
    headers       TEXT NOT NULL DEFAULT '{}',
    storage_class TEXT NOT NULL DEFAULT '',
    checksum_algo TEXT NOT NULL DEFAULT ''
);
CREATE INDEX uploads_bucket_key ON uploads (bucket, key, id);

CREATE TABLE upload_parts (
    upload_id     TEXT COLLATE "C" NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
    number        INTEGER NOT NULL CHECK (number BETWEEN 1 AND 10000),
    blob_id       TEXT COLLATE "C" NOT NULL,
    size          BIGINT NOT NULL,
    etag          TEXT NOT NULL DEFAULT '',
    checksum      TEXT NOT NULL DEFAULT '',
    last_modified BIGINT,
    PRIMARY KEY (upload_id, number)
);
CREATE INDEX upload_parts_blob ON upload_parts (blob_id);

-- +goose Down
DROP TABLE upload_parts;
DROP TABLE uploads;
DROP TABLE object_blobs;
DROP TABLE objects;
DROP TABLE buckets;
