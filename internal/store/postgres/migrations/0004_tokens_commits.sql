-- API tokens for knit serve: stored as SHA-256 hashes, never in clear. A
-- revoked token stays as a record of who could act.
CREATE TABLE tokens (
    name         TEXT PRIMARY KEY,
    hash         TEXT NOT NULL UNIQUE,
    role         TEXT NOT NULL,
    teams        TEXT NOT NULL DEFAULT '', -- comma-separated; empty = every team
    created_by   TEXT NOT NULL DEFAULT '',
    created_at   BIGINT,
    revoked_at   BIGINT
);

-- Revisions from git carry their commit; a file that does not validate is
-- recorded with its errors and never applied.
ALTER TABLE revisions ADD COLUMN root TEXT NOT NULL DEFAULT '';
ALTER TABLE revisions ADD COLUMN commit_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE revisions ADD COLUMN author TEXT NOT NULL DEFAULT '';
ALTER TABLE revisions ADD COLUMN message TEXT NOT NULL DEFAULT '';
ALTER TABLE revisions ADD COLUMN errors TEXT NOT NULL DEFAULT '';

-- Small pieces of server state that must survive a restart.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE INDEX component_states_status ON component_states (status);
CREATE INDEX runs_status ON runs (status) WHERE status = 'running';
