-- The process group of each tool a run has running, recorded when the tool
-- starts and removed once its group is gone, so that the knit that next runs
-- the environment ends what a knit killed outright left running. seq orders
-- groups recorded at the same instant.
CREATE TABLE tool_processes (
    run_id      TEXT NOT NULL,
    env         TEXT NOT NULL,
    host        TEXT NOT NULL,
    pgid        INTEGER NOT NULL,
    start       TEXT NOT NULL DEFAULT '',
    started_at  BIGINT,
    seq         BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (run_id, host, pgid)
);
CREATE INDEX tool_processes_env ON tool_processes (env, started_at, seq);
