-- What each branch commit would do to each environment it changes
-- (knit serve --preview-branches): a plan never applied, kept so that the
-- apply of the merge can name the preview whose checksum it applies.
CREATE TABLE previews (
    branch        TEXT NOT NULL,
    commit_hash   TEXT NOT NULL,
    env           TEXT NOT NULL,
    team          TEXT NOT NULL,
    change        TEXT NOT NULL,
    status        TEXT NOT NULL,
    checksum      TEXT NOT NULL DEFAULT '',
    base_revision INTEGER NOT NULL DEFAULT 0,
    run_id        TEXT NOT NULL DEFAULT '',
    error         TEXT NOT NULL DEFAULT '',
    components    BLOB,
    policy        BLOB,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (branch, commit_hash, env)
) STRICT;
CREATE INDEX previews_by_checksum ON previews (env, checksum);
CREATE INDEX previews_by_branch ON previews (branch, created_at);
