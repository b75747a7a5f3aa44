package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// SeedSpec builds the JSON spec of a seeded environment.
type SeedSpec func(team, env string, components int) []byte

// Seed fills the store with envs environments of components components
// each, applied, with one succeeded apply run apiece, in one transaction:
// a store of the size a benchmark needs in seconds rather than the hours
// real runs would take. It is for benchmarks only.
func (s *Store) Seed(ctx context.Context, envs, components int, spec SeedSpec) error {
	now := s.now().UTC()
	return s.write(ctx, func(tx *txn) error {
		stmt := func(q string) (*sql.Stmt, error) { return tx.PrepareContext(ctx, q) }
		env, err := stmt(`INSERT INTO environments (id, team, name, metadata, revision, applied_revision, status, created_at, updated_at) VALUES (?, ?, ?, ?, 1, 1, 'provisioned', ?, ?)`)
		if err != nil {
			return err
		}
		rev, err := stmt(`INSERT INTO revisions (env, number, hash, source, spec, created_at) VALUES (?, 1, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		run, err := stmt(`INSERT INTO runs (id, env, kind, revision, status, actor, source, started_at, finished_at) VALUES (?, ?, 'apply', 1, 'succeeded', 'seed', 'seed', ?, ?)`)
		if err != nil {
			return err
		}
		state, err := stmt(`INSERT INTO component_states (env, component, status, fingerprint, revision, updated_at) VALUES (?, ?, 'applied', 'seed', 1, ?)`)
		if err != nil {
			return err
		}
		out, err := stmt(`INSERT INTO outputs (env, component, name, value, sensitive) VALUES (?, ?, 'id', ?, 0)`)
		if err != nil {
			return err
		}
		crun, err := stmt(`INSERT INTO component_runs (run_id, env, component, operation, status, code, plan_summary, started_at, finished_at) VALUES (?, ?, ?, 'apply', 'applied', 'applied', ?, ?, ?)`)
		if err != nil {
			return err
		}
		plan := []byte(`{"add":1,"change":0,"destroy":0,"resources":[{"address":"terraform_data.this","action":"create"}]}`)
		for i := range envs {
			team, name := fmt.Sprintf("team%02d", i%50), fmt.Sprintf("env%05d", i)
			id := team + "/" + name
			at := ts(now.Add(-time.Duration(envs-i) * time.Second))
			if _, err := env.ExecContext(ctx, id, team, name, team+"-"+name, at, at); err != nil {
				return err
			}
			if _, err := rev.ExecContext(ctx, id, fmt.Sprintf("seed-%d", i), "seed", spec(team, name, components), at); err != nil {
				return err
			}
			runID := fmt.Sprintf("seed-%05d", i)
			if _, err := run.ExecContext(ctx, runID, id, at, at); err != nil {
				return err
			}
			for c := range components {
				comp := fmt.Sprintf("c%02d", c)
				if _, err := state.ExecContext(ctx, id, comp, at); err != nil {
					return err
				}
				v, _ := json.Marshal(id + "/" + comp)
				if _, err := out.ExecContext(ctx, id, comp, v); err != nil {
					return err
				}
				if _, err := crun.ExecContext(ctx, runID, id, comp, plan, at, at); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
