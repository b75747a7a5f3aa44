-- A revision keeps its environment file as written (YAML, comments and
-- order kept), so that diffs between revisions are of what people wrote.
ALTER TABLE revisions ADD COLUMN file BYTEA NOT NULL DEFAULT '';
