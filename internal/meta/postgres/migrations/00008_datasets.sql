-- Datasets and their versions. Times are epoch milliseconds, NULL for the
-- zero time; ids and names use the "C" collation, as in SQLite; records
-- are JSON text ('' for none) that the dataset package owns. A dataset's
-- name is unique per owner, a version's per dataset.

-- +goose Up
CREATE TABLE datasets (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL,
    owner_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    type        TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time BIGINT,
    record      TEXT NOT NULL DEFAULT '',
    UNIQUE (owner_id, name)
);
CREATE INDEX datasets_created ON datasets (create_time DESC NULLS LAST, id DESC);
CREATE INDEX datasets_owner_created ON datasets (owner_id, create_time DESC NULLS LAST, id DESC);
CREATE TABLE dataset_versions (
    id          TEXT COLLATE "C" PRIMARY KEY,
    dataset_id  TEXT COLLATE "C" NOT NULL REFERENCES datasets (id),
    name        TEXT COLLATE "C" NOT NULL,
    status      TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time BIGINT,
    record      TEXT NOT NULL DEFAULT '',
    UNIQUE (dataset_id, name)
);
CREATE INDEX dataset_versions_created ON dataset_versions (dataset_id, create_time DESC NULLS LAST, id DESC);
CREATE INDEX dataset_versions_status ON dataset_versions (status, create_time, id);

-- +goose Down
DROP TABLE dataset_versions;
DROP TABLE datasets;
