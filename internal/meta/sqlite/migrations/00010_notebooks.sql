-- Notebooks and their events.
-- Times are epoch milliseconds, NULL for the zero time. A notebook's spec,
-- state and runtime are JSON text ('' for none). owner_id is deliberately
-- not a foreign key: a notebook's record must not vanish with its owner's
-- account while its volume still exists. Events reference their notebook
-- and DeleteNotebook removes them with it.

-- +goose Up
CREATE TABLE notebooks (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    owner_id    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    create_time INTEGER,
    update_time INTEGER,
    spec        TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL DEFAULT '',
    runtime     TEXT NOT NULL DEFAULT '',
    version     INTEGER NOT NULL DEFAULT 0,
    UNIQUE (owner_id, name)
) STRICT;
CREATE INDEX notebooks_created ON notebooks (create_time, id);
CREATE INDEX notebooks_owner_created ON notebooks (owner_id, create_time, id);
CREATE INDEX notebooks_status_created ON notebooks (status, create_time, id);

-- AUTOINCREMENT: ids are never reused, so they order a notebook's events
-- added at the same millisecond.
CREATE TABLE notebook_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    notebook_id TEXT NOT NULL REFERENCES notebooks (id),
    time        INTEGER,
    level       TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL DEFAULT '',
    message     TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX notebook_events_notebook ON notebook_events (notebook_id, time, id);

-- +goose Down
DROP TABLE notebook_events;
DROP TABLE notebooks;
