-- Revisions mean what was applied: an environment remembers the revision
-- it is applied at apart from the latest it has seen.
ALTER TABLE environments ADD COLUMN applied_revision INTEGER NOT NULL DEFAULT 0;
UPDATE environments SET applied_revision = revision;

-- Runs say through what they were started (cli, api, git, schedule), and
-- component runs keep a machine-readable reason beside the human one.
ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE component_runs ADD COLUMN code TEXT NOT NULL DEFAULT '';

-- Filters and pages over many environments, runs and audit events.
CREATE INDEX environments_team ON environments (team, id);
CREATE INDEX environments_status ON environments (status, id);
CREATE INDEX runs_started ON runs (started_at DESC);
CREATE INDEX audit_events_actor ON audit_events (actor, id);
