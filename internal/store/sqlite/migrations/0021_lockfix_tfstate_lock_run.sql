-- The knit run a Terraform state lock was taken for ('' : none recorded,
-- a lock taken by an older knit or outside a run). Once that run no longer
-- holds its environment's lock (taken over by a recovery run, or
-- released), the state lock is stale wherever its knit ran: a new lock
-- takes it over.
ALTER TABLE tf_states ADD COLUMN lock_run TEXT NOT NULL DEFAULT '';
