-- Promotion pipelines (kind: Pipeline), as last read from git. Times are
-- nanoseconds since the Unix epoch, as everywhere in this store.
CREATE TABLE pipelines (
    name        TEXT PRIMARY KEY,
    team        TEXT NOT NULL,
    definition  BYTEA NOT NULL,
    commit_hash TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Releases: immutable, named by their content (template identity and
-- promote parameters); seq orders them per pipeline.
CREATE TABLE pipeline_releases (
    pipeline    TEXT NOT NULL,
    id          TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    template    TEXT NOT NULL,
    params      BYTEA NOT NULL,
    commit_hash TEXT NOT NULL,
    author      TEXT NOT NULL,
    message     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (pipeline, id),
    UNIQUE (pipeline, seq)
);

-- Where each release stands in each stage.
CREATE TABLE pipeline_stages (
    pipeline    TEXT NOT NULL,
    release_id  TEXT NOT NULL,
    stage       TEXT NOT NULL,
    state       TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    message     TEXT NOT NULL,
    actor       TEXT NOT NULL,
    changed_at BIGINT NOT NULL,
    verified_at BIGINT,
    PRIMARY KEY (pipeline, release_id, stage)
);

-- Every change of a stage state, in order: a release's history.
CREATE TABLE pipeline_history (
    pipeline    TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    release_id  TEXT NOT NULL,
    stage       TEXT NOT NULL,
    state       TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    message     TEXT NOT NULL,
    actor       TEXT NOT NULL,
    changed_at BIGINT NOT NULL,
    verified_at BIGINT,
    PRIMARY KEY (pipeline, seq)
);

-- Approvals of releases entering stages.
CREATE TABLE pipeline_approvals (
    pipeline    TEXT NOT NULL,
    release_id  TEXT NOT NULL,
    stage       TEXT NOT NULL,
    actor       TEXT NOT NULL,
    reason      TEXT NOT NULL,
    forced      BOOLEAN NOT NULL,
    approved_at BIGINT NOT NULL,
    PRIMARY KEY (pipeline, release_id, stage, actor)
);
