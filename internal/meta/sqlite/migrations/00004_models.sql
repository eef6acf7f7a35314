-- Versions of the model registry.
-- Times are epoch milliseconds, NULL for the zero time. A version's record
-- is JSON text ('' for none). owner_id is deliberately not a foreign key: a
-- model version outlives its owner's account. (owner_id, name, version) is
-- unique: a version, once imported, is immutable.

-- +goose Up
CREATE TABLE models (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    version     TEXT NOT NULL,
    owner_id    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    create_time INTEGER,
    record      TEXT NOT NULL DEFAULT '',
    UNIQUE (owner_id, name, version)
) STRICT;
CREATE INDEX models_created ON models (create_time, id);
CREATE INDEX models_owner_created ON models (owner_id, create_time, id);

-- +goose Down
DROP TABLE models;
