package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"knit.dev/knit/internal/store"
)

// CreateApproval implements store.Store. a.Status is set to pending and a
// zero a.CreatedAt to now; a.ID is set on success. Env and Component are
// required. Earlier open approvals of the component become stale in the
// same transaction, keeping who decided them.
func (s *Store) CreateApproval(ctx context.Context, a *store.Approval) error {
	if a.Env == "" || a.Component == "" {
		return errors.New("create approval: Env and Component are required")
	}
	created := a.CreatedAt
	if created.IsZero() {
		created = s.now()
	}
	var id int64
	err := s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?
			WHERE env = ? AND component = ? AND status IN (?, ?)`,
			store.ApprovalStale, a.Env, a.Component, store.ApprovalPending, store.ApprovalApproved)
		if err != nil {
			return fmt.Errorf("mark earlier approvals stale: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM saved_plans WHERE approval_id IN
			(SELECT id FROM approvals WHERE env = ? AND component = ? AND status = ?)`, a.Env, a.Component, store.ApprovalStale); err != nil {
			return fmt.Errorf("drop stale plans: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO approvals
			(env, component, run_id, revision, fingerprint, plan_file, plan_checksum, plan, status, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.Env, a.Component, a.RunID, a.Revision, a.Fingerprint, a.PlanFile, a.PlanChecksum, a.Plan,
			store.ApprovalPending, ts(created))
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return fmt.Errorf("create approval for %s in %s: %w", a.Component, a.Env, err)
	}
	a.ID, a.Status, a.CreatedAt = id, store.ApprovalPending, created
	return nil
}

const approvalColumns = `id, env, component, run_id, revision, fingerprint, plan_file, plan_checksum, plan,
	status, created_at, decided_by, reason, decided_at`

func scanApproval(sc rowScanner) (store.Approval, error) {
	var a store.Approval
	err := sc.Scan(&a.ID, &a.Env, &a.Component, &a.RunID, &a.Revision, &a.Fingerprint, &a.PlanFile,
		&a.PlanChecksum, &a.Plan, &a.Status, timeCol{&a.CreatedAt}, &a.DecidedBy, &a.Reason, timeCol{&a.DecidedAt})
	return a, err
}

// Approval implements store.Store; a missing approval is store.ErrNotFound.
func (s *Store) Approval(ctx context.Context, id int64) (store.Approval, error) {
	a, err := scanApproval(s.q.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
	if err != nil {
		return store.Approval{}, notFound(err, "approval %d", id)
	}
	return a, nil
}

// OpenApproval implements store.Store. CreateApproval keeps at most one
// approval of a component open; should there be more, the newest wins.
func (s *Store) OpenApproval(ctx context.Context, env, component string) (store.Approval, error) {
	row := s.q.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals
		WHERE env = ? AND component = ? AND status IN (?, ?) ORDER BY id DESC LIMIT 1`,
		env, component, store.ApprovalPending, store.ApprovalApproved)
	a, err := scanApproval(row)
	if err != nil {
		return store.Approval{}, notFound(err, "open approval of %s in %s", component, env)
	}
	return a, nil
}

// ListApprovals implements store.Store: oldest creation time first, and of
// approvals created at the same time the one created first first (the
// reverse with f.NewestFirst).
func (s *Store) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	var where []string
	var args []any
	if f.Env != "" {
		where = append(where, `env = ?`)
		args = append(args, f.Env)
	}
	if f.Component != "" {
		where = append(where, `component = ?`)
		args = append(args, f.Component)
	}
	if len(f.Statuses) > 0 {
		where = append(where, `status IN (?`+strings.Repeat(`, ?`, len(f.Statuses)-1)+`)`)
		for _, st := range f.Statuses {
			args = append(args, st)
		}
	}
	if len(f.Teams) > 0 {
		cond, targs := envOfTeams("env", f.Teams)
		where, args = append(where, cond), append(args, targs...)
	}
	if f.After > 0 {
		where = append(where, `id > ?`)
		args = append(args, f.After)
	}
	query := `SELECT ` + approvalColumns + ` FROM approvals`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	order := ` ORDER BY id`
	if f.NewestFirst {
		order += ` DESC`
	}
	return queryAll(ctx, s.q, "list approvals", scanApproval, query+order+limitClause(f.Limit), args...)
}

// DecideApproval implements store.Store. The status is compared and set in
// one write transaction, so of two people deciding the same approval
// exactly one wins; the other gets an error wrapping store.ErrConflict that
// names the current status. A missing approval is store.ErrNotFound; to
// must be one of the approval statuses. A zero at becomes now.
func (s *Store) DecideApproval(ctx context.Context, id int64, from, to, actor, reason string, at time.Time) error {
	if !slices.Contains(store.ApprovalStatuses, to) {
		return fmt.Errorf("decide approval %d: unknown status %q", id, to)
	}
	if at.IsZero() {
		at = s.now()
	}
	err := s.write(ctx, func(tx *txn) error {
		var current string
		err := tx.QueryRowContext(ctx, `SELECT status FROM approvals WHERE id = ?`, id).Scan(&current)
		if err != nil {
			return notFound(err, "approval %d", id)
		}
		if current != from {
			return fmt.Errorf("its status is %s: %w", current, store.ErrConflict)
		}
		_, err = tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decided_by = ?, reason = ?, decided_at = ?
			WHERE id = ?`, to, actor, reason, ts(at), id)
		if err != nil || !store.FinalApproval(to) {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM saved_plans WHERE approval_id = ?`, id) // never applied now
		return err
	})
	if err != nil {
		return fmt.Errorf("decide approval %d (%s to %s): %w", id, from, to, err)
	}
	return nil
}
