package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"knit.dev/knit/internal/store"
)

// AppendAudit implements store.Store. e.ID is ignored (the store numbers
// events in the order they are appended); a zero e.Time becomes now.
func (s *Store) AppendAudit(ctx context.Context, e store.AuditEvent) error {
	return s.write(ctx, func(tx *txn) error { return s.appendAudit(ctx, tx, e) })
}

// appendAudit is AppendAudit inside tx.
func (s *Store) appendAudit(ctx context.Context, tx *txn, e store.AuditEvent) error {
	if e.Action == "" {
		return errors.New("append audit event: Action is required")
	}
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO audit_events
		(env, actor, action, component, revision, run_id, reason, detail, time)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.Env, e.Actor, e.Action, e.Component, e.Revision, e.RunID, e.Reason, e.Detail, ts(e.Time))
	if err != nil {
		return fmt.Errorf("append audit event %s on %s: %w", e.Action, e.Env, err)
	}
	return nil
}

// Audit implements store.Store, in the order the events were appended.
func (s *Store) Audit(ctx context.Context, f store.AuditFilter) ([]store.AuditEvent, error) {
	query, args := auditQuery(f)
	rows, err := s.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	defer rows.Close()
	var events []store.AuditEvent
	for rows.Next() {
		var e store.AuditEvent
		err := rows.Scan(&e.ID, &e.Env, &e.Actor, &e.Action, &e.Component, &e.Revision, &e.RunID,
			&e.Reason, &e.Detail, timeCol{&e.Time})
		if err != nil {
			return nil, fmt.Errorf("list audit events: %w", err)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	return events, nil
}

// auditQuery builds the query for Audit: Since is inclusive, Until
// exclusive. Indexes on env and actor (each followed by id) serve filtered
// pages.
func auditQuery(f store.AuditFilter) (string, []any) {
	query := `SELECT id, env, actor, action, component, revision, run_id, reason, detail, time FROM audit_events`
	var where []string
	var args []any
	add := func(cond string, arg any) { where, args = append(where, cond), append(args, arg) }
	if f.Env != "" {
		add("env = ?", f.Env)
	}
	if f.Actor != "" {
		add("actor = ?", f.Actor)
	}
	if len(f.Teams) > 0 {
		cond, targs := envOfTeams("env", f.Teams)
		where, args = append(where, cond), append(args, targs...)
	}
	if !f.Since.IsZero() {
		add("time >= ?", ts(f.Since))
	}
	if !f.Until.IsZero() {
		add("time < ?", ts(f.Until))
	}
	if f.After > 0 {
		add("id > ?", f.After)
	}
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	return query + ` ORDER BY id` + limitClause(f.Limit), args
}
