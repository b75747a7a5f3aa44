-- An environment's version changes with anything its views show: the
-- environment row, its runs, lock, component states, component runs,
-- outputs, approvals and revisions. Readers cache a view with the version it
-- was read at, so one cheap read of the version says whether the view is
-- still right, whichever replica wrote to the store. Triggers, not code,
-- keep it: a write path that forgot to bump it would serve stale views.
ALTER TABLE environments ADD COLUMN version BIGINT NOT NULL DEFAULT 0;

-- An update of an environment that does not set its version itself bumps it.
CREATE FUNCTION knit_environment_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.version = OLD.version THEN
        NEW.version := OLD.version + 1;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER environments_version BEFORE UPDATE ON environments
    FOR EACH ROW EXECUTE FUNCTION knit_environment_version();

-- A row of a table naming an environment (its env column) bumps the
-- version of the environment it names, before and after the change.
CREATE FUNCTION knit_bump_environment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE environments SET version = version + 1 WHERE id = OLD.env;
    END IF;
    IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.env IS DISTINCT FROM OLD.env) THEN
        UPDATE environments SET version = version + 1 WHERE id = NEW.env;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER runs_version AFTER INSERT OR UPDATE OR DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION knit_bump_environment();
CREATE TRIGGER component_runs_version AFTER INSERT OR UPDATE OR DELETE ON component_runs
    FOR EACH ROW EXECUTE FUNCTION knit_bump_environment();
CREATE TRIGGER component_states_version AFTER INSERT OR UPDATE OR DELETE ON component_states
    FOR EACH ROW EXECUTE FUNCTION knit_bump_environment();
CREATE TRIGGER outputs_version AFTER INSERT OR UPDATE OR DELETE ON outputs
    FOR EACH ROW EXECUTE FUNCTION knit_bump_environment();
CREATE TRIGGER locks_version AFTER INSERT OR UPDATE OR DELETE ON locks
    FOR EACH ROW EXECUTE FUNCTION knit_bump_environment();
CREATE TRIGGER approvals_version AFTER INSERT OR UPDATE OR DELETE ON approvals
    FOR EACH ROW EXECUTE FUNCTION knit_bump_environment();
CREATE TRIGGER revisions_version AFTER INSERT OR UPDATE OR DELETE ON revisions
    FOR EACH ROW EXECUTE FUNCTION knit_bump_environment();

-- A page of versions is read from the index alone.
CREATE INDEX environments_versions ON environments (id, team, version);
