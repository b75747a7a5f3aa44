-- An environment's version changes with anything its views show: the
-- environment row, its runs, lock, component states, component runs,
-- outputs, approvals and revisions. Readers cache a view with the version it
-- was read at, so one cheap read of the version says whether the view is
-- still right, whichever process wrote to the store. Triggers, not code,
-- keep it: a write path that forgot to bump it would serve stale views.
ALTER TABLE environments ADD COLUMN version INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER environments_version AFTER UPDATE OF team, name, metadata, revision, applied_revision, status, created_at, updated_at ON environments
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.id; END;

CREATE TRIGGER runs_insert_version AFTER INSERT ON runs
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER runs_update_version AFTER UPDATE ON runs
BEGIN UPDATE environments SET version = version + 1 WHERE id IN (OLD.env, NEW.env); END;
CREATE TRIGGER runs_delete_version AFTER DELETE ON runs
BEGIN UPDATE environments SET version = version + 1 WHERE id = OLD.env; END;

CREATE TRIGGER component_runs_insert_version AFTER INSERT ON component_runs
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER component_runs_update_version AFTER UPDATE ON component_runs
BEGIN UPDATE environments SET version = version + 1 WHERE id IN (OLD.env, NEW.env); END;
CREATE TRIGGER component_runs_delete_version AFTER DELETE ON component_runs
BEGIN UPDATE environments SET version = version + 1 WHERE id = OLD.env; END;

CREATE TRIGGER component_states_insert_version AFTER INSERT ON component_states
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER component_states_update_version AFTER UPDATE ON component_states
BEGIN UPDATE environments SET version = version + 1 WHERE id IN (OLD.env, NEW.env); END;
CREATE TRIGGER component_states_delete_version AFTER DELETE ON component_states
BEGIN UPDATE environments SET version = version + 1 WHERE id = OLD.env; END;

CREATE TRIGGER outputs_insert_version AFTER INSERT ON outputs
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER outputs_update_version AFTER UPDATE ON outputs
BEGIN UPDATE environments SET version = version + 1 WHERE id IN (OLD.env, NEW.env); END;
CREATE TRIGGER outputs_delete_version AFTER DELETE ON outputs
BEGIN UPDATE environments SET version = version + 1 WHERE id = OLD.env; END;

CREATE TRIGGER locks_insert_version AFTER INSERT ON locks
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER locks_update_version AFTER UPDATE ON locks
BEGIN UPDATE environments SET version = version + 1 WHERE id IN (OLD.env, NEW.env); END;
CREATE TRIGGER locks_delete_version AFTER DELETE ON locks
BEGIN UPDATE environments SET version = version + 1 WHERE id = OLD.env; END;

CREATE TRIGGER approvals_insert_version AFTER INSERT ON approvals
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER approvals_update_version AFTER UPDATE ON approvals
BEGIN UPDATE environments SET version = version + 1 WHERE id IN (OLD.env, NEW.env); END;
CREATE TRIGGER approvals_delete_version AFTER DELETE ON approvals
BEGIN UPDATE environments SET version = version + 1 WHERE id = OLD.env; END;

CREATE TRIGGER revisions_insert_version AFTER INSERT ON revisions
BEGIN UPDATE environments SET version = version + 1 WHERE id = NEW.env; END;
CREATE TRIGGER revisions_update_version AFTER UPDATE ON revisions
BEGIN UPDATE environments SET version = version + 1 WHERE id IN (OLD.env, NEW.env); END;
CREATE TRIGGER revisions_delete_version AFTER DELETE ON revisions
BEGIN UPDATE environments SET version = version + 1 WHERE id = OLD.env; END;

-- A page of versions is read from the index alone.
CREATE INDEX environments_versions ON environments (id, team, version);
