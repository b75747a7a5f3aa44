-- The rollout in waves of each environment set whose spec.rollout.waves
-- says so: the newest change of its template, as the GitOps reconciler
-- wrote it (state: JSON of its waves and where each environment stands),
-- so that a restart resumes it where it was. version orders writes
-- (compare and set).
CREATE TABLE set_rollouts (
    id         TEXT NOT NULL PRIMARY KEY,
    team       TEXT NOT NULL,
    version    INTEGER NOT NULL,
    state      TEXT NOT NULL,
    updated_at TEXT
) STRICT;
