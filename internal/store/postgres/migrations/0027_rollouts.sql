-- Each environment's newest rollout by its strategy (canary, blue/green):
-- its state, the step it is at, the weight the router was last given,
-- the run carrying the step out, and the library's own JSON (the new
-- revision's spec, each step's evidence). version orders writes
-- (compare and set); a crash resumes at the recorded step.
CREATE TABLE rollouts (
    env        TEXT NOT NULL PRIMARY KEY,
    id         TEXT NOT NULL,
    version    BIGINT NOT NULL,
    state      TEXT NOT NULL,
    step       BIGINT NOT NULL,
    weight     BIGINT NOT NULL,
    run_id     TEXT NOT NULL,
    detail     TEXT NOT NULL,
    updated_at BIGINT
);
