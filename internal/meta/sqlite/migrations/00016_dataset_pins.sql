-- The object versions each dataset version pins: the versions its manifest
-- names by version id, in a bucket of the dataset's owner. Lifecycle rules
-- do not expire a pinned version. A version's pins are written in short
-- transactions before it is published and count only once its pins_held
-- is 1, which its publication sets (a version whose pins are being
-- written, or whose writing a crash cut short, holds nothing). They go
-- with the version. The versions published before this table get theirs
-- when the server starts (the dataset package reads their manifests).

-- +goose Up
ALTER TABLE dataset_versions ADD COLUMN pins_held INTEGER NOT NULL DEFAULT 0;
CREATE TABLE dataset_pins (
    version_id        TEXT NOT NULL REFERENCES dataset_versions (id),
    bucket            TEXT NOT NULL,
    object_key        TEXT NOT NULL,
    object_version_id TEXT NOT NULL,
    PRIMARY KEY (version_id, bucket, object_key, object_version_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX dataset_pins_object ON dataset_pins (bucket, object_key, object_version_id);

-- +goose Down
DROP TABLE dataset_pins;
ALTER TABLE dataset_versions DROP COLUMN pins_held;
