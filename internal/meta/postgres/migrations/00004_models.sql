-- Versions of the model registry.
-- Times are epoch milliseconds, NULL for the zero time. Ids, names and
-- versions use the "C" collation, as in SQLite (LOWER of a "C" column folds
-- only ASCII letters, as SQLite's does). A version's record is JSON text (''
-- for none). owner_id is deliberately not a foreign key: a model version
-- outlives its owner's account. (owner_id, name, version) is unique: a
-- version, once imported, is immutable.

-- +goose Up
CREATE TABLE models (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL,
    version     TEXT COLLATE "C" NOT NULL,
    owner_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    status      TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time BIGINT,
    record      TEXT NOT NULL DEFAULT '',
    UNIQUE (owner_id, name, version)
);
CREATE INDEX models_created ON models (create_time DESC NULLS LAST, id DESC);
CREATE INDEX models_owner_created ON models (owner_id, create_time DESC NULLS LAST, id DESC);

-- +goose Down
DROP TABLE models;
