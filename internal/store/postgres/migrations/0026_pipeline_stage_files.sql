-- What the promotion controller knows of each pipeline stage's own file:
-- its hash and commit at the last head read (a change is seen once), the
-- commit whose copy of the file the stage's environment got last, and the
-- newest change of the file (its diff and state: Pending, Queued,
-- Applying, Applied, Failed). version orders writes (compare and set).
CREATE TABLE pipeline_stage_files (
    pipeline               TEXT NOT NULL,
    stage                  TEXT NOT NULL,
    version                BIGINT NOT NULL,
    seen_hash              TEXT NOT NULL,
    seen_commit            TEXT NOT NULL,
    applied_commit         TEXT NOT NULL,
    change_id              TEXT NOT NULL,
    change_commit          TEXT NOT NULL,
    change_hash            TEXT NOT NULL,
    change_diff            TEXT NOT NULL,
    change_state           TEXT NOT NULL,
    change_release         TEXT NOT NULL,
    change_run             TEXT NOT NULL,
    change_reason          TEXT NOT NULL,
    change_message         TEXT NOT NULL,
    change_author          TEXT NOT NULL,
    change_author_verified BOOLEAN NOT NULL,
    change_subject         TEXT NOT NULL,
    change_actor           TEXT NOT NULL,
    changed_at             BIGINT,
    PRIMARY KEY (pipeline, stage)
);
