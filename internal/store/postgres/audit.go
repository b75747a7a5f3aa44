package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// AppendAudit implements store.Store. e.ID is ignored (the store numbers
// events in the order they are appended); a zero e.Time becomes now.
func (s *Store) AppendAudit(ctx context.Context, e store.AuditEvent) error {
	return s.write(ctx, func(tx pgx.Tx) error { return s.appendAudit(ctx, tx, e) })
}

// appendAudit is AppendAudit inside tx.
func (s *Store) appendAudit(ctx context.Context, tx pgx.Tx, e store.AuditEvent) error {
	if e.Action == "" {
		return errors.New("append audit event: Action is required")
	}
	when, err := s.orNow(ctx, tx, e.Time)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO audit_events (env, actor, action, component, revision, run_id, reason, detail, time)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		e.Env, e.Actor, e.Action, e.Component, e.Revision, e.RunID, e.Reason, e.Detail, ts(when))
	if err != nil {
		return fmt.Errorf("append audit event %s on %s: %w", e.Action, e.Env, err)
	}
	return nil
}

// Audit implements store.Store, in the order the events were appended:
// Since is inclusive, Until exclusive.
func (s *Store) Audit(ctx context.Context, f store.AuditFilter) ([]store.AuditEvent, error) {
	a := &args{}
	if f.Env != "" {
		a.add("env = ?", f.Env)
	}
	if f.Actor != "" {
		a.add("actor = ?", f.Actor)
	}
	if len(f.Teams) > 0 {
		a.envOfTeams("env", f.Teams)
	}
	if !f.Since.IsZero() {
		a.add("time >= ?", ts(f.Since))
	}
	if !f.Until.IsZero() {
		a.add("time < ?", ts(f.Until))
	}
	if f.After > 0 {
		a.add("id > ?", f.After)
	}
	return queryAll(ctx, s.pool, "list audit events", func(row pgx.Row) (store.AuditEvent, error) {
		var e store.AuditEvent
		err := row.Scan(&e.ID, &e.Env, &e.Actor, &e.Action, &e.Component, &e.Revision, &e.RunID, &e.Reason, &e.Detail, timeCol{&e.Time})
		return e, err
	}, `SELECT id, env, actor, action, component, revision, run_id, reason, detail, time FROM audit_events`+
		a.clause()+` ORDER BY id`+limitClause(f.Limit), a.vals...)
}
