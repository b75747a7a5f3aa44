-- A revision keeps its environment file as written (YAML, comments and
-- order kept), so that diffs between revisions are of what people wrote.
-- Revisions from before have none: their diffs fall back to the spec.
ALTER TABLE revisions ADD COLUMN file BLOB NOT NULL DEFAULT x'';
