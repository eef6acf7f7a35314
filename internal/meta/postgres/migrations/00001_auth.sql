-- Users, credentials, policies and settings.
-- Times are epoch milliseconds, NULL for the zero time. Text keys and names
-- use the "C" collation so that ordering is bytewise, as in SQLite.

-- +goose Up
CREATE TABLE users (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL UNIQUE,
    admin       BOOLEAN NOT NULL DEFAULT FALSE,
    create_time BIGINT
);

CREATE TABLE access_keys (
    access_key         TEXT COLLATE "C" PRIMARY KEY,
    user_id            TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    secret_enc         BYTEA NOT NULL,
    status             TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    create_time        BIGINT,
    temporary          BOOLEAN NOT NULL DEFAULT FALSE,
    session_token_hash TEXT NOT NULL DEFAULT '',
    expires_at         BIGINT,
    session_policy     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX access_keys_user ON access_keys (user_id, create_time);
CREATE INDEX access_keys_created ON access_keys (create_time NULLS FIRST, access_key);
CREATE INDEX access_keys_expires ON access_keys (expires_at) WHERE temporary;

CREATE TABLE tokens (
    id          TEXT COLLATE "C" PRIMARY KEY,
    user_id     TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    hash        TEXT NOT NULL UNIQUE,
    access_key  TEXT NOT NULL DEFAULT '',
    create_time BIGINT,
    expires_at  BIGINT,
    revoked     BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX tokens_user ON tokens (user_id, create_time);
CREATE INDEX tokens_expires ON tokens (expires_at);

CREATE TABLE policies (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    document    TEXT NOT NULL DEFAULT '',
    owner_id    TEXT NOT NULL DEFAULT '',
    create_time BIGINT
);

CREATE TABLE user_policies (
    user_id   TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    policy_id TEXT COLLATE "C" NOT NULL REFERENCES policies (id),
    PRIMARY KEY (user_id, policy_id)
);
CREATE INDEX user_policies_policy ON user_policies (policy_id);

CREATE TABLE settings (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
);

-- +goose Down
DROP TABLE settings;
DROP TABLE user_policies;
DROP TABLE policies;
DROP TABLE tokens;
DROP TABLE access_keys;
DROP TABLE users;
