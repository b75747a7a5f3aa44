-- Pages of runs are newest first by (started_at, seq): one index serves
-- both, read backwards.
DROP INDEX runs_env_started;
CREATE INDEX runs_env_started ON runs (env, started_at, seq);
DROP INDEX runs_started;
CREATE INDEX runs_started ON runs (started_at, seq);

-- Environments filtered by team and status together, in ID order.
CREATE INDEX environments_team_status ON environments (team, status, id);
