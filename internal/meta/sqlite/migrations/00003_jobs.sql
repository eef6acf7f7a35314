-- Training jobs, their log lines, metric samples and events.
-- Times are epoch milliseconds, NULL for the zero time. A job's spec, status
-- and runtime are JSON text ('' for none). owner_id is deliberately not a
-- foreign key: a job's history outlives its owner's account. Log text is a
-- BLOB so that any bytes a process printed round-trip. Logs, metrics and
-- events reference their job; DeleteJob removes them with it.

-- +goose Up
CREATE TABLE jobs (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    owner_id    TEXT NOT NULL DEFAULT '',
    phase       TEXT NOT NULL DEFAULT '',
    priority    INTEGER NOT NULL DEFAULT 0,
    create_time INTEGER,
    update_time INTEGER,
    spec        TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    runtime     TEXT NOT NULL DEFAULT '',
    version     INTEGER NOT NULL DEFAULT 0,
    UNIQUE (owner_id, name)
) STRICT;
CREATE INDEX jobs_created ON jobs (create_time, id);
CREATE INDEX jobs_owner_created ON jobs (owner_id, create_time, id);
CREATE INDEX jobs_phase_created ON jobs (phase, create_time, id);

CREATE TABLE job_logs (
    job_id  TEXT NOT NULL REFERENCES jobs (id),
    attempt INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    time    INTEGER,
    stream  TEXT NOT NULL DEFAULT '',
    text    BLOB NOT NULL,
    PRIMARY KEY (job_id, attempt, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE job_metrics (
    job_id  TEXT NOT NULL REFERENCES jobs (id),
    attempt INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    time    INTEGER,
    step    INTEGER,
    "values" TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (job_id, attempt, seq, kind)
) STRICT, WITHOUT ROWID;

-- AUTOINCREMENT: ids are never reused, so they order a job's events added
-- at the same millisecond.
CREATE TABLE job_events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id  TEXT NOT NULL REFERENCES jobs (id),
    time    INTEGER,
    level   TEXT NOT NULL DEFAULT '',
    source  TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX job_events_job ON job_events (job_id, time, id);

-- +goose Down
DROP TABLE job_events;
DROP TABLE job_metrics;
DROP TABLE job_logs;
DROP TABLE jobs;
