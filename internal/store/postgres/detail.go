package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// detailQuery reads an environment with its lock, newest run and newest
// drift run in one row; the lock's and runs' columns are zero when there
// are none.
var detailQuery = `SELECT e.id, e.team, e.name, e.metadata, e.revision, e.applied_revision, e.status, e.created_at, e.updated_at,
	COALESCE(l.run_id, ''), COALESCE(l.owner, ''), COALESCE(l.pid, 0), COALESCE(l.host, ''), l.acquired_at, l.expires_at, ` +
	fmt.Sprintf(runJoinColumns, "r") + `, ` + fmt.Sprintf(runJoinColumns, "d") + `
	FROM environments e
	LEFT JOIN locks l ON l.env = e.id
	` + lastRunJoin + `
	LEFT JOIN LATERAL (SELECT * FROM runs WHERE env = e.id AND kind = 'drift'` + newestFirst + ` LIMIT 1) d ON TRUE
	WHERE e.id = $1`

// previewRuns are the runs of branches' previews planned against env $1:
// runs of the branch, never the environment's last run (store.SourcePreview).
const previewRuns = `SELECT id FROM runs WHERE env = $1 AND source = 'preview'`

// detailComponentsQuery reads each component known from a state or a
// component run: its state, how many outputs it has and its newest
// component run outside previews (a component only a preview ran is
// left out).
var detailComponentsQuery = `SELECT c.component, COALESCE(s.component, ''), COALESCE(s.status, ''), COALESCE(s.fingerprint, ''),
	COALESCE(s.revision, 0), s.updated_at,
	(SELECT COUNT(*) FROM outputs o WHERE o.env = $1 AND o.component = c.component),
	COALESCE(r.id, 0), COALESCE(r.run_id, ''), COALESCE(r.operation, ''), COALESCE(r.status, ''), COALESCE(r.code, ''),
	COALESCE(r.reason, ''), r.cause, r.plan_summary, r.started_at, r.finished_at
	FROM (SELECT component FROM component_states WHERE env = $1 UNION SELECT component FROM component_runs WHERE env = $1) c
	LEFT JOIN component_states s ON s.env = $1 AND s.component = c.component
	LEFT JOIN component_runs r ON r.id = (SELECT id FROM component_runs WHERE env = $1 AND component = c.component
		AND run_id NOT IN (` + previewRuns + `) ORDER BY id DESC LIMIT 1)
	WHERE s.component IS NOT NULL OR r.id IS NOT NULL
	ORDER BY c.component`

// EnvironmentDetail implements store.Store in two queries.
func (s *Store) EnvironmentDetail(ctx context.Context, id string) (store.EnvironmentDetail, error) {
	var d store.EnvironmentDetail
	e := &d.Environment
	var l store.Lock
	var r, dr store.Run
	targets := []any{&e.ID, &e.Team, &e.Name, &e.Metadata, &e.Revision, &e.AppliedRevision, &e.Status, timeCol{&e.CreatedAt}, timeCol{&e.UpdatedAt},
		&l.RunID, &l.Owner, &l.PID, &l.Host, timeCol{&l.Acquired}, timeCol{&l.Expires}}
	targets = append(append(targets, runJoinTargets(&r)...), runJoinTargets(&dr)...)
	if err := s.pool.QueryRow(ctx, detailQuery, id).Scan(targets...); err != nil {
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
	var err error
	d.Components, err = queryAll(ctx, s.pool, "components of "+id, func(row pgx.Row) (store.ComponentDetail, error) {
		var c store.ComponentDetail
		st, cr := &c.State, &c.LastRun
		err := row.Scan(&c.Name, &st.Component, &st.Status, &st.Fingerprint, &st.Revision, timeCol{&st.UpdatedAt}, &c.Outputs,
			&cr.ID, &cr.RunID, &cr.Operation, &cr.Status, &cr.Code, &cr.Reason, causeCol{&cr.Cause}, &cr.PlanSummary,
			timeCol{&cr.StartedAt}, timeCol{&cr.FinishedAt})
		if st.Component != "" {
			st.Env = id
		}
		if cr.RunID != "" {
			cr.Env, cr.Component = id, c.Name
		}
		return c, err
	}, detailComponentsQuery, id)
	return d, err
}
