-- knit:river-schema 8
-- The run queue's tables (internal/controller/riverqueue), which several
-- knit serve replicas on this database share. Before this file runs, the
-- migration step brings River's own tables (river_job, river_leader, …) to
-- the version the line above names, with River's migrator (rivermigrate,
-- one transaction per River migration: see migrate.go). IF NOT EXISTS:
-- knit before this migration let the queue create them itself.
--
-- The runs' events for catch-up (the stored component logs stay the
-- record; these go once the leader prunes them).
CREATE TABLE IF NOT EXISTS knit_run_events (
	run_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	event JSONB NOT NULL,
	last BOOLEAN NOT NULL DEFAULT false,
	at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (run_id, seq));
CREATE INDEX IF NOT EXISTS knit_run_events_at ON knit_run_events (at) WHERE last;
-- A run's job by run ID, and an environment's jobs by state.
CREATE INDEX IF NOT EXISTS river_job_knit_run ON river_job ((args->>'run_id')) WHERE kind = 'knit_run';
CREATE INDEX IF NOT EXISTS river_job_knit_env ON river_job ((args->>'env'), state) WHERE kind = 'knit_run';
-- The replicas' liveness: each renews its row every third of a lease.
CREATE TABLE IF NOT EXISTS knit_river_clients (
	id TEXT PRIMARY KEY,
	seen TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp());
