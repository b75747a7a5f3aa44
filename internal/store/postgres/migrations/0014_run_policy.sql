-- What the environment's policies decided about a run's plan: the JSON of
-- engine.Verdict (decisions, each naming its policy file and rule); NULL
-- for a run without policies.
ALTER TABLE runs ADD COLUMN policy BYTEA;
