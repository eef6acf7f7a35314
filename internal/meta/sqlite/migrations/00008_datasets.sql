-- Datasets and their versions. Times are epoch milliseconds, NULL for the
-- zero time; records are JSON text ('' for none) that the dataset package
-- owns. A dataset's name is unique per owner, a version's per dataset.

-- +goose Up
CREATE TABLE datasets (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    owner_id    TEXT NOT NULL DEFAULT '',
    type        TEXT NOT NULL DEFAULT '',
    create_time INTEGER,
    record      TEXT NOT NULL DEFAULT '',
    UNIQUE (owner_id, name)
) STRICT;
CREATE INDEX datasets_created ON datasets (create_time, id);
CREATE INDEX datasets_owner_created ON datasets (owner_id, create_time, id);
CREATE TABLE dataset_versions (
    id          TEXT PRIMARY KEY,
    dataset_id  TEXT NOT NULL REFERENCES datasets (id),
    name        TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT '',
    create_time INTEGER,
    record      TEXT NOT NULL DEFAULT '',
    UNIQUE (dataset_id, name)
) STRICT;
CREATE INDEX dataset_versions_created ON dataset_versions (dataset_id, create_time, id);
CREATE INDEX dataset_versions_status ON dataset_versions (status, create_time, id);

-- +goose Down
DROP TABLE dataset_versions;
DROP TABLE datasets;
