-- Rollback: each applied revision keeps how its verification after the
-- apply ended (Successful, Failed, Inconclusive, or Accepted by a person),
-- so a failed rollout can go back to the last good one. A revision whose
-- apply succeeded before knit verified applies is good.
ALTER TABLE revisions ADD COLUMN verification TEXT NOT NULL DEFAULT '';
UPDATE revisions SET verification = 'Successful' WHERE EXISTS (SELECT 1 FROM runs
    WHERE runs.env = revisions.env AND runs.revision = revisions.number AND runs.kind = 'apply' AND runs.status = 'succeeded');
CREATE INDEX revisions_verification ON revisions (env, verification, number);
