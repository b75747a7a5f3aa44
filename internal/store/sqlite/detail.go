package sqlite

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/store"
)

// detailQuery reads an environment with its lock, newest run and newest
// drift run in one row; the lock and runs are NULL when there are none.
var detailQuery = `SELECT e.id, e.team, e.name, e.metadata, e.revision, e.applied_revision, e.status, e.created_at, e.updated_at,
	l.run_id, l.owner, l.pid, l.host, l.acquired_at, l.expires_at,
	` + joinedRun("r") + `, ` + joinedRun("d") + `
	FROM environments e
	LEFT JOIN locks l ON l.env = e.id
	LEFT JOIN runs r ON r.rowid = (SELECT rowid FROM runs WHERE env = e.id AND source <> 'preview' ORDER BY started_at DESC, rowid DESC LIMIT 1)
	LEFT JOIN runs d ON d.rowid = (SELECT rowid FROM runs WHERE env = e.id AND kind = 'drift' ORDER BY started_at DESC, rowid DESC LIMIT 1)
	WHERE e.id = ?`

// previewRuns are the runs of branches' previews planned against env ?1:
// runs of the branch, never the environment's last run (store.SourcePreview).
const previewRuns = `SELECT id FROM runs WHERE env = ?1 AND source = 'preview'`

// detailComponentsQuery reads each component known from a state or a
// component run: its state, how many outputs it has and its newest
// component run outside previews, walking the index (env, component, id)
// down from the newest (a component only a preview ran is left out).
var detailComponentsQuery = `SELECT c.component, s.component, s.status, s.fingerprint, s.revision, s.updated_at,
	(SELECT COUNT(*) FROM outputs o WHERE o.env = ?1 AND o.component = c.component),
	r.id, r.run_id, r.operation, r.status, r.code, r.reason, r.cause, r.plan_summary, r.started_at, r.finished_at
	FROM (SELECT component FROM component_states WHERE env = ?1 UNION SELECT component FROM component_runs WHERE env = ?1) c
	LEFT JOIN component_states s ON s.env = ?1 AND s.component = c.component
	LEFT JOIN component_runs r ON r.id = (SELECT id FROM component_runs WHERE env = ?1 AND component = c.component
		AND run_id NOT IN (` + previewRuns + `) ORDER BY id DESC LIMIT 1)
	WHERE s.component IS NOT NULL OR r.id IS NOT NULL
	ORDER BY c.component`

// EnvironmentDetail implements store.Store in two queries.
func (s *Store) EnvironmentDetail(ctx context.Context, id string) (store.EnvironmentDetail, error) {
	var d store.EnvironmentDetail
	e := &d.Environment
	var l store.Lock
	var r, dr store.Run
	cols := append([]any{&e.ID, &e.Team, &e.Name, &e.Metadata, &e.Revision, &e.AppliedRevision, &e.Status, timeCol{&e.CreatedAt}, timeCol{&e.UpdatedAt},
		nullStr{&l.RunID}, nullStr{&l.Owner}, nullInt{&l.PID}, nullStr{&l.Host}, timeCol{&l.Acquired}, timeCol{&l.Expires}},
		joinedRunInto(&r)...)
	err := s.q.QueryRowContext(ctx, detailQuery, id).Scan(append(cols, joinedRunInto(&dr)...)...)
	if err != nil {
		return d, notFound(err, "environment %s", id)
	}
	if l.RunID != "" {
		l.Env = id
		d.Lock = &l
	}
	if r.ID != "" {
		d.LastRun = &r
	}
	if dr.ID != "" {
		d.LastDrift = &dr
	}
	if d.Components, err = s.componentDetails(ctx, id); err != nil {
		return d, fmt.Errorf("components of %s: %w", id, err)
	}
	return d, nil
}

func (s *Store) componentDetails(ctx context.Context, env string) ([]store.ComponentDetail, error) {
	rows, err := s.q.QueryContext(ctx, detailComponentsQuery, env)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ComponentDetail
	for rows.Next() {
		var c store.ComponentDetail
		st, cr := &c.State, &c.LastRun
		err := rows.Scan(&c.Name, nullStr{&st.Component}, nullStr{&st.Status}, nullStr{&st.Fingerprint}, nullInt{&st.Revision},
			timeCol{&st.UpdatedAt}, &c.Outputs,
			nullInt64{&cr.ID}, nullStr{&cr.RunID}, nullStr{&cr.Operation}, nullStr{&cr.Status}, nullStr{&cr.Code},
			nullStr{&cr.Reason}, causeCol{&cr.Cause}, &cr.PlanSummary, timeCol{&cr.StartedAt}, timeCol{&cr.FinishedAt})
		if err != nil {
			return nil, err
		}
		if st.Component != "" {
			st.Env = env
		}
		if cr.RunID != "" {
			cr.Env, cr.Component = env, c.Name
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
