-- The twin of PostgreSQL's 0025, which indexes the settings' keys byte by
-- byte for reads by prefix. SQLite compares text byte by byte already, so
-- the primary key's index serves those reads: nothing changes here, and
-- the versions stay in step.
SELECT 1;
