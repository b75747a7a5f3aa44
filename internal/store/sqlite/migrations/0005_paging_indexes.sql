-- Pages of runs are newest first by (started_at, rowid). An ascending index
-- read backwards yields exactly that order; the descending ones of 0001 and
-- 0003 left SQLite sorting the rowid tie-break for every page.
DROP INDEX runs_env_started;
CREATE INDEX runs_env_started ON runs (env, started_at);
DROP INDEX runs_started;
CREATE INDEX runs_started ON runs (started_at);

-- Environments filtered by team and status together, in ID order.
CREATE INDEX environments_team_status ON environments (team, status, id);
