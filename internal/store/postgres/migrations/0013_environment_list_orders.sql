-- The environments list sorted by last change, newest first, of every team
-- or of one: a page is read from the index, not sorted from every
-- environment (by status: environments_status and environments_team_status).
-- NULLS LAST as the query orders (SQLite sorts NULL lowest).
CREATE INDEX environments_updated ON environments (updated_at DESC NULLS LAST, id);
CREATE INDEX environments_team_updated ON environments (team, updated_at DESC NULLS LAST, id);
