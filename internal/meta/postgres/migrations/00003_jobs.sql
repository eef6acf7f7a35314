-- Training jobs, their log lines, metric samples and events.
-- Times are epoch milliseconds, NULL for the zero time. Ids and names use the
-- "C" collation, as in SQLite (LOWER of a "C" column folds only ASCII
-- letters, as SQLite's does). A job's spec, status and runtime are JSON text
-- ('' for none). owner_id is deliberately not a foreign key: a job's history
-- outlives its owner's account. Log text is BYTEA so that any bytes a
-- process printed round-trip (TEXT refuses NUL). Logs, metrics and events
-- reference their job; DeleteJob removes them with it.

-- +goose Up
CREATE TABLE jobs (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL,
    owner_id    TEXT COLLATE "C" NOT NULL DEFAULT '',
    phase       TEXT COLLATE "C" NOT NULL DEFAULT '',
    priority    INTEGER NOT NULL DEFAULT 0,
    create_time BIGINT,
    update_time BIGINT,
    spec        TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    runtime     TEXT NOT NULL DEFAULT '',
    version     BIGINT NOT NULL DEFAULT 0,
    UNIQUE (owner_id, name)
);
CREATE INDEX jobs_created ON jobs (create_time DESC NULLS LAST, id DESC);
CREATE INDEX jobs_owner_created ON jobs (owner_id, create_time DESC NULLS LAST, id DESC);
CREATE INDEX jobs_phase_created ON jobs (phase, create_time DESC NULLS LAST, id DESC);

CREATE TABLE job_logs (
    job_id  TEXT COLLATE "C" NOT NULL REFERENCES jobs (id),
    attempt INTEGER NOT NULL,
    seq     BIGINT NOT NULL,
    time    BIGINT,
    stream  TEXT NOT NULL DEFAULT '',
    text    BYTEA NOT NULL,
    PRIMARY KEY (job_id, attempt, seq)
);

CREATE TABLE job_metrics (
    job_id   TEXT COLLATE "C" NOT NULL REFERENCES jobs (id),
    attempt  INTEGER NOT NULL,
    seq      BIGINT NOT NULL,
    kind     TEXT COLLATE "C" NOT NULL,
    time     BIGINT,
    step     BIGINT,
    "values" TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (job_id, attempt, seq, kind)
);

CREATE TABLE job_events (
    id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id  TEXT COLLATE "C" NOT NULL REFERENCES jobs (id),
    time    BIGINT,
    level   TEXT NOT NULL DEFAULT '',
    source  TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX job_events_job ON job_events (job_id, time NULLS FIRST, id);

-- +goose Down
DROP TABLE job_events;
DROP TABLE job_metrics;
DROP TABLE job_logs;
DROP TABLE jobs;
