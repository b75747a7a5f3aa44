-- A component run's cause: why it ended where it did, for machines (the
-- JSON of store.Cause: reasonCode, upstream, approvalId); NULL when its
-- status says it all. code and reason stay the words people read.
ALTER TABLE component_runs ADD COLUMN cause TEXT;
