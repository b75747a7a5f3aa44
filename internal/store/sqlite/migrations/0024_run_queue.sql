-- The twin of PostgreSQL's 0024, which creates the run queue's tables
-- (River's and knit_run_events, for replicas sharing one database). A
-- SQLite store has no such queue (knit serve's runqueue is in memory):
-- nothing changes here, and the versions stay in step.
SELECT 1;
