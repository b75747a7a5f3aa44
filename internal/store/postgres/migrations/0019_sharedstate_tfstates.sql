-- Terraform state and saved plans in the store, so that every replica on
-- one database reaches them (knit serves the state to the tool through its
-- HTTP backend). data is sealed by the store (keyfile.Sealer) before it is
-- written; lock_info is the tool's lock info JSON (who, operation, when).
CREATE TABLE tf_states (
    key        TEXT PRIMARY KEY,
    data       BYTEA,
    lock_id    TEXT NOT NULL DEFAULT '',
    -- the knit process whose state server the tool locked through
    lock_host  TEXT NOT NULL DEFAULT '',
    lock_pid   INTEGER NOT NULL DEFAULT 0,
    lock_info  BYTEA,
    updated_at BIGINT NOT NULL
);
-- The bytes of an approval's saved plan, sealed; dropped once the approval
-- is applied, rejected or stale (it can never be applied then).
CREATE TABLE saved_plans (
    approval_id BIGINT PRIMARY KEY REFERENCES approvals(id) ON DELETE CASCADE,
    data        BYTEA NOT NULL
);
