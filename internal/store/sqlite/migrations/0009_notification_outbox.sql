-- Notifications waiting for delivery, one row per (event, sink), removed
-- once delivered or given up: what a shutdown cut off is sent after a
-- restart, in order (by id).
CREATE TABLE notification_outbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    sink        TEXT NOT NULL,
    env         TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    body        BLOB NOT NULL,
    created_at  TEXT
) STRICT;

-- The last sequence number given to an environment's events, so that
-- numbers keep growing across restarts.
CREATE TABLE notification_seqs (
    env  TEXT PRIMARY KEY,
    seq  INTEGER NOT NULL
) STRICT;
