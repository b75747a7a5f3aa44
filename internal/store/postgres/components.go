package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// StartComponentRun implements store.Store. An empty Status becomes
// store.StatusRunning; each cr's ID and Status are set on success. The run
// cr.RunID must exist and hold its environment's lock (else
// store.ErrLockLost, and nothing is written).
func (s *Store) StartComponentRun(ctx context.Context, crs ...*store.ComponentRun) error {
	for _, cr := range crs {
		if cr.RunID == "" || cr.Env == "" || cr.Component == "" {
			return errors.New("start component run: RunID, Env and Component are required")
		}
	}
	if len(crs) == 0 {
		return nil
	}
	ids := make([]int64, len(crs))
	err := s.write(ctx, func(tx pgx.Tx) error {
		held := map[[2]string]bool{}
		for i, cr := range crs {
			if k := [2]string{cr.Env, cr.RunID}; !held[k] {
				if err := holds(ctx, tx, cr.Env, cr.RunID); err != nil {
					return err
				}
				held[k] = true
			}
			err := tx.QueryRow(ctx, `INSERT INTO component_runs
				(run_id, env, component, operation, status, code, reason, cause, plan_summary, log, started_at, finished_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
				cr.RunID, cr.Env, cr.Component, cr.Operation, store.StartStatus(cr), cr.Code, cr.Reason, store.EncodeCause(cr.Cause), cr.PlanSummary, cr.Log,
				ts(cr.StartedAt), ts(cr.FinishedAt)).Scan(&ids[i])
			if err != nil && len(crs) > 1 {
				return fmt.Errorf("%s: %w", cr.Component, err)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if len(crs) == 1 {
			return fmt.Errorf("start component run %s of run %s: %w", crs[0].Component, crs[0].RunID, err)
		}
		return fmt.Errorf("start %d component runs of run %s: %w", len(crs), crs[0].RunID, err)
	}
	for i, cr := range crs {
		cr.ID, cr.Status = ids[i], store.StartStatus(cr)
	}
	return nil
}

// FinishComponentRun implements store.Store. It records cr's outcome on the
// row cr.ID (a missing row is store.ErrNotFound) and, when state is
// non-nil, the component's state. Like StartComponentRun it refuses a run
// that lost the lock.
func (s *Store) FinishComponentRun(ctx context.Context, cr store.ComponentRun, state *store.ComponentState) error {
	var st store.ComponentState
	if state != nil {
		st = *state
		if st.Env == "" {
			st.Env = cr.Env
		}
		if st.Component == "" {
			st.Component = cr.Component
		}
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		// The row changes only while its run holds the environment's
		// lock: the fence and the write in one statement.
		tag, err := tx.Exec(ctx, `UPDATE component_runs
			SET status = $1, code = $2, reason = $3, cause = $4, plan_summary = $5, log = $6, finished_at = $7
			WHERE id = $8 AND run_id = (SELECT run_id FROM locks WHERE locks.env = component_runs.env)`,
			cr.Status, cr.Code, cr.Reason, store.EncodeCause(cr.Cause), cr.PlanSummary, cr.Log, ts(cr.FinishedAt), cr.ID)
		if err := affected(tag, err, "finish component run %d (%s)", cr.ID, cr.Component); err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			return whyUnchanged(ctx, tx, cr)
		}
		if state == nil {
			return nil
		}
		return s.putState(ctx, tx, st)
	})
}

// whyUnchanged says why FinishComponentRun changed no row: there is no
// component run cr.ID (store.ErrNotFound), or its run no longer holds the
// environment's lock (store.ErrLockLost).
func whyUnchanged(ctx context.Context, tx pgx.Tx, cr store.ComponentRun) error {
	var env, runID string
	err := tx.QueryRow(ctx, `SELECT env, run_id FROM component_runs WHERE id = $1`, cr.ID).Scan(&env, &runID)
	if err != nil {
		return notFound(err, "finish component run %d (%s)", cr.ID, cr.Component)
	}
	if err := holds(ctx, tx, env, runID); err != nil {
		return err
	}
	return fmt.Errorf("finish component run %d (%s): no row changed", cr.ID, cr.Component)
}

const componentRunColumns = `id, run_id, env, component, operation, status, code, reason, cause, plan_summary, log, started_at, finished_at`

func scanComponentRun(sc pgx.Row) (store.ComponentRun, error) {
	var cr store.ComponentRun
	err := sc.Scan(&cr.ID, &cr.RunID, &cr.Env, &cr.Component, &cr.Operation, &cr.Status, &cr.Code, &cr.Reason,
		causeCol{&cr.Cause}, &cr.PlanSummary, &cr.Log, timeCol{&cr.StartedAt}, timeCol{&cr.FinishedAt})
	return cr, err
}

// ComponentRuns implements store.Store: runID's component runs in the
// order they started, logs included. An unknown run has none.
func (s *Store) ComponentRuns(ctx context.Context, runID string) ([]store.ComponentRun, error) {
	return queryAll(ctx, s.pool, "list component runs of "+runID, scanComponentRun,
		`SELECT `+componentRunColumns+` FROM component_runs WHERE run_id = $1 ORDER BY id`, runID)
}

// CountComponents implements store.Store.
func (s *Store) CountComponents(ctx context.Context, status string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*) FROM component_states WHERE status = $1`, status).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s components: %w", status, err)
	}
	return n, nil
}

// LatestComponentRuns implements store.Store: each component's newest
// component run (log left out), by component name, in one query.
func (s *Store) LatestComponentRuns(ctx context.Context, env string) ([]store.ComponentRun, error) {
	return queryAll(ctx, s.pool, "latest component runs of "+env, scanComponentRun,
		`SELECT id, run_id, env, component, operation, status, code, reason, cause, plan_summary, '', started_at, finished_at
		FROM component_runs WHERE id IN (SELECT MAX(id) FROM component_runs WHERE env = $1 GROUP BY component)
		ORDER BY component`, env)
}

// LastComponentRun implements store.Store: the component run started last;
// none is store.ErrNotFound.
func (s *Store) LastComponentRun(ctx context.Context, env, component string) (store.ComponentRun, error) {
	cr, err := scanComponentRun(s.pool.QueryRow(ctx, `SELECT `+componentRunColumns+` FROM component_runs
		WHERE env = $1 AND component = $2 ORDER BY id DESC LIMIT 1`, env, component))
	if err != nil {
		return store.ComponentRun{}, notFound(err, "last run of component %s in %s", component, env)
	}
	return cr, nil
}

// ComponentStates implements store.Store, keyed by component name; sensitive
// outputs come back decrypted. A state without outputs has nil Outputs.
func (s *Store) ComponentStates(ctx context.Context, env string) (map[string]store.ComponentState, error) {
	states := map[string]store.ComponentState{}
	err := s.read(ctx, func(tx pgx.Tx) error {
		list, err := queryAll(ctx, tx, "states", func(row pgx.Row) (store.ComponentState, error) {
			var st store.ComponentState
			err := row.Scan(&st.Env, &st.Component, &st.Status, &st.Fingerprint, &st.Revision, timeCol{&st.UpdatedAt})
			return st, err
		}, `SELECT env, component, status, fingerprint, revision, updated_at FROM component_states WHERE env = $1`, env)
		if err != nil {
			return err
		}
		for _, st := range list {
			states[st.Component] = st
		}
		return s.readOutputs(ctx, tx, env, states)
	})
	if err != nil {
		return nil, fmt.Errorf("component states of %s: %w", env, err)
	}
	return states, nil
}

// output is one row of the outputs table.
type output struct {
	component, name string
	store.OutputValue
}

func (s *Store) readOutputs(ctx context.Context, tx pgx.Tx, env string, states map[string]store.ComponentState) error {
	outs, err := queryAll(ctx, tx, "outputs", func(row pgx.Row) (output, error) {
		var o output
		err := row.Scan(&o.component, &o.name, &o.Value, &o.Sensitive)
		return o, err
	}, `SELECT component, name, value, sensitive FROM outputs WHERE env = $1`, env)
	if err != nil {
		return err
	}
	for _, o := range outs {
		if o.Sensitive {
			if o.Value, err = s.sealer.Open(o.Value, outputAD(env, o.component, o.name)); err != nil {
				return fmt.Errorf("output %s.%s: %w", o.component, o.name, err)
			}
		}
		st := states[o.component]
		if st.Outputs == nil {
			st.Outputs = map[string]store.OutputValue{}
		}
		st.Outputs[o.name] = o.OutputValue
		states[o.component] = st
	}
	return nil
}

// outputAD is the additional data that ties a sealed output to its row, so
// a sealed value copied to another row does not open there.
func outputAD(env, component, name string) []byte {
	return []byte(env + "\x00" + component + "\x00" + name)
}

// PutComponentState implements store.Store: it replaces the component's
// state and all its outputs.
func (s *Store) PutComponentState(ctx context.Context, st store.ComponentState) error {
	return s.write(ctx, func(tx pgx.Tx) error { return s.putState(ctx, tx, st) })
}

// putState upserts st and replaces its outputs, sealing sensitive ones.
func (s *Store) putState(ctx context.Context, tx pgx.Tx, st store.ComponentState) error {
	if st.Env == "" || st.Component == "" {
		return errors.New("put component state: Env and Component are required")
	}
	_, err := tx.Exec(ctx, `INSERT INTO component_states (env, component, status, fingerprint, revision, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (env, component) DO UPDATE SET status = excluded.status, fingerprint = excluded.fingerprint,
			revision = excluded.revision, updated_at = excluded.updated_at`,
		st.Env, st.Component, st.Status, st.Fingerprint, st.Revision, ts(st.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put state of %s in %s: %w", st.Component, st.Env, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM outputs WHERE env = $1 AND component = $2`, st.Env, st.Component); err != nil {
		return fmt.Errorf("clear outputs of %s in %s: %w", st.Component, st.Env, err)
	}
	return s.putOutputs(ctx, tx, st)
}

// putOutputs writes st's outputs, sealing sensitive ones.
func (s *Store) putOutputs(ctx context.Context, tx pgx.Tx, st store.ComponentState) error {
	var err error
	for name, v := range st.Outputs {
		value := v.Value
		if v.Sensitive {
			if value, err = s.sealer.Seal(v.Value, outputAD(st.Env, st.Component, name)); err != nil {
				return fmt.Errorf("seal output %s.%s: %w", st.Component, name, err)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO outputs (env, component, name, value, sensitive) VALUES ($1, $2, $3, $4, $5)`,
			st.Env, st.Component, name, value, v.Sensitive)
		if err != nil {
			return fmt.Errorf("put output %s.%s in %s: %w", st.Component, name, st.Env, err)
		}
	}
	return nil
}

// causeCol scans a column written by store.EncodeCause into c.
type causeCol struct{ c *store.Cause }

// Scan implements sql.Scanner.
func (col causeCol) Scan(src any) error { return store.DecodeCause(src, col.c) }
