-- A change set is the whole change a gated apply stopped at: the plans of
-- the components that wait for a person and of those planned ahead behind
-- them, identified by one checksum and approved once. components is the
-- JSON of its []store.ChangeSetComponent.
CREATE TABLE change_sets (
    id          INTEGER PRIMARY KEY,
    env         TEXT NOT NULL,
    run_id      TEXT NOT NULL DEFAULT '',
    revision    INTEGER NOT NULL DEFAULT 0,
    checksum    TEXT NOT NULL,
    components  BLOB,
    status      TEXT NOT NULL,
    created_at  TEXT,
    decided_by  TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT '',
    decided_at  TEXT
) STRICT;
CREATE INDEX change_sets_env_status ON change_sets (env, status);

CREATE TRIGGER change_sets_insert_version AFTER INSERT ON change_sets
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER change_sets_update_version AFTER UPDATE ON change_sets
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;

-- A run that stopped at the approval gate and was replaced by a later run
-- of its environment ends superseded, naming that run.
ALTER TABLE runs ADD COLUMN superseded_by TEXT NOT NULL DEFAULT '';
