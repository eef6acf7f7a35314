-- Online services, their instance log lines, events and usage.
-- Times are epoch milliseconds, NULL for the zero time. A service's spec,
-- state and runtime are JSON text ('' for none). owner_id is deliberately not
-- a foreign key: a service's history outlives its owner's account. Log text
-- is a BLOB so that any bytes a process printed round-trip. Logs and events
-- reference their service and DeleteService removes them with it; usage does
-- not: what ran is metered after the service is gone.

-- +goose Up
CREATE TABLE services (
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
CREATE INDEX services_created ON services (create_time, id);
CREATE INDEX services_owner_created ON services (owner_id, create_time, id);
CREATE INDEX services_status_created ON services (status, create_time, id);

CREATE TABLE service_logs (
    service_id  TEXT NOT NULL REFERENCES services (id),
    instance_id TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    time        INTEGER,
    stream      TEXT NOT NULL DEFAULT '',
    text        BLOB NOT NULL,
    PRIMARY KEY (service_id, instance_id, seq)
) STRICT, WITHOUT ROWID;
CREATE INDEX service_logs_time ON service_logs (service_id, time, instance_id, seq);

-- AUTOINCREMENT: ids are never reused, so they order a service's events
-- added at the same millisecond.
CREATE TABLE service_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    service_id TEXT NOT NULL REFERENCES services (id),
    time       INTEGER,
    level      TEXT NOT NULL DEFAULT '',
    source     TEXT NOT NULL DEFAULT '',
    message    TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX service_events_service ON service_events (service_id, time, id);

CREATE TABLE service_usage (
    service_id   TEXT NOT NULL,
    instance_id  TEXT NOT NULL,
    owner_id     TEXT NOT NULL DEFAULT '',
    service_name TEXT NOT NULL DEFAULT '',
    flavor       TEXT NOT NULL DEFAULT '',
    start_time   INTEGER,
    end_time     INTEGER,
    PRIMARY KEY (service_id, instance_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX service_usage_owner ON service_usage (owner_id, start_time);

-- +goose Down
DROP TABLE service_usage;
DROP TABLE service_events;
DROP TABLE service_logs;
DROP TABLE services;
