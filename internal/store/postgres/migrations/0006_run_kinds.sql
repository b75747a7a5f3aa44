-- The last drift check of an environment, found without scanning its runs.
CREATE INDEX runs_env_kind_started ON runs (env, kind, started_at, seq);
