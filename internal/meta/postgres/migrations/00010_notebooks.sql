-- Notebooks and their events.
-- Times are epoch milliseconds, NULL for the zero time. Ids and names use
-- the "C" collation, as in SQLite. A notebook's spec, state and runtime are
-- JSON text ('' for none). owner_id is deliberately not a foreign key: a
-- notebook's record must not vanish with its owner's account while its
-- volume still exists. Events reference their notebook and DeleteNotebook
-- removes them with it.

-- +goose Up
CREATE TABLE notebooks (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL,
    owner_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    status      TEXT COLLATE "C" NOT NULL DEFAULT '',
    create_time BIGINT,
    update_time BIGINT,
    spec        TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL DEFAULT '',
    runtime     TEXT NOT NULL DEFAULT '',
    version     BIGINT NOT NULL DEFAULT 0,
    UNIQUE (owner_id, name)
);
CREATE INDEX notebooks_created ON notebooks (create_time DESC NULLS LAST, id DESC);
CREATE INDEX notebooks_owner_created ON notebooks (owner_id, create_time DESC NULLS LAST, id DESC);
CREATE INDEX notebooks_status_created ON notebooks (status, create_time DESC NULLS LAST, id DESC);

CREATE TABLE notebook_events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    notebook_id TEXT COLLATE "C" NOT NULL REFERENCES notebooks (id),
    time        BIGINT,
    level       TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL DEFAULT '',
    message     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notebook_events_notebook ON notebook_events (notebook_id, time NULLS FIRST, id);

-- +goose Down
DROP TABLE notebook_events;
DROP TABLE notebooks;
