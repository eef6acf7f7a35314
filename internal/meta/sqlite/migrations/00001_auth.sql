-- Users, credentials, policies and settings.
-- Times are epoch milliseconds, NULL for the zero time. Booleans are 0/1.

-- +goose Up
CREATE TABLE users (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    admin       INTEGER NOT NULL DEFAULT 0,
    create_time INTEGER
) STRICT;

CREATE TABLE access_keys (
    access_key         TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    secret_enc         BLOB NOT NULL,
    status             TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    create_time        INTEGER,
    temporary          INTEGER NOT NULL DEFAULT 0,
    session_token_hash TEXT NOT NULL DEFAULT '',
    expires_at         INTEGER,
    session_policy     TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX access_keys_user ON access_keys (user_id, create_time);
CREATE INDEX access_keys_created ON access_keys (create_time, access_key);
CREATE INDEX access_keys_expires ON access_keys (expires_at) WHERE temporary;

CREATE TABLE tokens (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    hash        TEXT NOT NULL UNIQUE,
    access_key  TEXT NOT NULL DEFAULT '',
    create_time INTEGER,
    expires_at  INTEGER,
    revoked     INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX tokens_user ON tokens (user_id, create_time);
CREATE INDEX tokens_expires ON tokens (expires_at);

CREATE TABLE policies (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    document    TEXT NOT NULL DEFAULT '',
    owner_id    TEXT NOT NULL DEFAULT '',
    create_time INTEGER
) STRICT;

CREATE TABLE user_policies (
    user_id   TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    policy_id TEXT NOT NULL REFERENCES policies (id),
    PRIMARY KEY (user_id, policy_id)
) STRICT;
CREATE INDEX user_policies_policy ON user_policies (policy_id);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

-- +goose Down
DROP TABLE settings;
DROP TABLE user_policies;
DROP TABLE policies;
DROP TABLE tokens;
DROP TABLE access_keys;
DROP TABLE users;
