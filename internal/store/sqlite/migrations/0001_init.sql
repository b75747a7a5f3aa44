-- knit's first schema. Times are UTC text in a fixed-width layout
-- (2006-01-02T15:04:05.000000000Z) so they sort as they compare; a zero
-- time is NULL.

CREATE TABLE environments (
    id         TEXT PRIMARY KEY,
    team       TEXT NOT NULL DEFAULT '',
    name       TEXT NOT NULL DEFAULT '',
    metadata   TEXT NOT NULL DEFAULT '',
    revision   INTEGER NOT NULL DEFAULT 0,
    status     TEXT NOT NULL DEFAULT '',
    created_at TEXT,
    updated_at TEXT
) STRICT;

CREATE TABLE revisions (
    env        TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
    number     INTEGER NOT NULL,
    hash       TEXT NOT NULL,
    source     TEXT NOT NULL DEFAULT '',
    spec       BLOB,
    created_at TEXT,
    PRIMARY KEY (env, number)
) STRICT;

-- Runs, locks and audit events name an environment without a foreign key:
-- a lock is taken and a plan may run before the first revision exists.
CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    env         TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT '',
    revision    INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL DEFAULT '',
    actor       TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    pid         INTEGER NOT NULL DEFAULT 0,
    started_at  TEXT,
    finished_at TEXT
) STRICT;
CREATE INDEX runs_env_started ON runs (env, started_at DESC);
CREATE INDEX runs_env_running ON runs (env) WHERE status = 'running';

CREATE TABLE component_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    env          TEXT NOT NULL,
    component    TEXT NOT NULL,
    operation    TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL DEFAULT '',
    reason       TEXT NOT NULL DEFAULT '',
    plan_summary BLOB,
    log          TEXT NOT NULL DEFAULT '',
    started_at   TEXT,
    finished_at  TEXT
) STRICT;
CREATE INDEX component_runs_run ON component_runs (run_id, id);
CREATE INDEX component_runs_env_component ON component_runs (env, component, id);

CREATE TABLE component_states (
    env         TEXT NOT NULL,
    component   TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT '',
    fingerprint TEXT NOT NULL DEFAULT '',
    revision    INTEGER NOT NULL DEFAULT 0,
    updated_at  TEXT,
    PRIMARY KEY (env, component)
) STRICT;

-- value is the output's JSON, or for a sensitive output the AES-256-GCM
-- sealed JSON (see crypto.go).
CREATE TABLE outputs (
    env       TEXT NOT NULL,
    component TEXT NOT NULL,
    name      TEXT NOT NULL,
    value     BLOB,
    sensitive INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (env, component, name),
    FOREIGN KEY (env, component) REFERENCES component_states (env, component) ON DELETE CASCADE
) STRICT;

CREATE TABLE locks (
    env         TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL,
    owner       TEXT NOT NULL DEFAULT '',
    pid         INTEGER NOT NULL DEFAULT 0,
    host        TEXT NOT NULL DEFAULT '',
    acquired_at TEXT,
    expires_at  TEXT
) STRICT;

CREATE TABLE audit_events (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    env       TEXT NOT NULL,
    actor     TEXT NOT NULL DEFAULT '',
    action    TEXT NOT NULL DEFAULT '',
    component TEXT NOT NULL DEFAULT '',
    revision  INTEGER NOT NULL DEFAULT 0,
    run_id    TEXT NOT NULL DEFAULT '',
    reason    TEXT NOT NULL DEFAULT '',
    detail    TEXT NOT NULL DEFAULT '',
    time      TEXT
) STRICT;
CREATE INDEX audit_events_env ON audit_events (env, id);
