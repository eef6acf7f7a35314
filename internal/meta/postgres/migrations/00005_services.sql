-- Online services, their instance log lines, events and usage.
-- Times are epoch milliseconds, NULL for the zero time. Ids and names use the
-- "C" collation, as in SQLite. A service's spec, state and runtime are JSON
-- text ('' for none). owner_id is deliberately not a foreign key: a
-- service's history outlives its owner's account. Log text is BYTEA so that
-- any bytes a process printed round-trip (TEXT refuses NUL). Logs and events
-- reference their service and DeleteService removes them with it; usage does
-- not: what ran is metered after the service is gone.

-- +goose Up
CREATE TABLE services (
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
CREATE INDEX services_created ON services (create_time DESC NULLS LAST, id DESC);
CREATE INDEX services_owner_created ON services (owner_id, create_time DESC NULLS LAST, id DESC);
CREATE INDEX services_status_created ON services (status, create_time DESC NULLS LAST, id DESC);

CREATE TABLE service_logs (
    service_id  TEXT COLLATE "C" NOT NULL REFERENCES services (id),
    instance_id TEXT COLLATE "C" NOT NULL,
    seq         BIGINT NOT NULL,
    time        BIGINT,
    stream      TEXT NOT NULL DEFAULT '',
    text        BYTEA NOT NULL,
    PRIMARY KEY (service_id, instance_id, seq)
);
CREATE INDEX service_logs_time ON service_logs (service_id, time NULLS FIRST, instance_id, seq);

CREATE TABLE service_events (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    service_id TEXT COLLATE "C" NOT NULL REFERENCES services (id),
    time       BIGINT,
    level      TEXT NOT NULL DEFAULT '',
    source     TEXT NOT NULL DEFAULT '',
    message    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX service_events_service ON service_events (service_id, time NULLS FIRST, id);

CREATE TABLE service_usage (
    service_id   TEXT COLLATE "C" NOT NULL,
    instance_id  TEXT COLLATE "C" NOT NULL,
    owner_id     TEXT COLLATE "C" NOT NULL DEFAULT '',
    service_name TEXT NOT NULL DEFAULT '',
    flavor       TEXT NOT NULL DEFAULT '',
    start_time   BIGINT,
    end_time     BIGINT,
    PRIMARY KEY (service_id, instance_id)
);
CREATE INDEX service_usage_owner ON service_usage (owner_id, start_time NULLS FIRST);

-- +goose Down
DROP TABLE service_usage;
DROP TABLE service_events;
DROP TABLE service_logs;
DROP TABLE services;
