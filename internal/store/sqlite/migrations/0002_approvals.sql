-- Approval requests: one exact saved plan of one component, waiting for a
-- person (pending), decided (approved, rejected), used (applied) or
-- superseded by a newer plan (stale). Like runs, an approval names its
-- environment and run without a foreign key, so it outlives both as a record.

CREATE TABLE approvals (
    id            INTEGER PRIMARY KEY,
    env           TEXT NOT NULL,
    component     TEXT NOT NULL,
    run_id        TEXT NOT NULL DEFAULT '',
    revision      INTEGER NOT NULL DEFAULT 0,
    fingerprint   TEXT NOT NULL DEFAULT '',
    plan_file     TEXT NOT NULL DEFAULT '',
    plan_checksum TEXT NOT NULL DEFAULT '',
    plan          BLOB,
    status        TEXT NOT NULL,
    created_at    TEXT,
    decided_by    TEXT NOT NULL DEFAULT '',
    reason        TEXT NOT NULL DEFAULT '',
    decided_at    TEXT
) STRICT;
CREATE INDEX approvals_env_component_status ON approvals (env, component, status);
