package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// CreateApproval implements store.Store. a.Status is set to pending and a
// zero a.CreatedAt to now; a.ID is set on success. Earlier open approvals
// of the component become stale in the same transaction.
func (s *Store) CreateApproval(ctx context.Context, a *store.Approval) error {
	if a.Env == "" || a.Component == "" {
		return errors.New("create approval: Env and Component are required")
	}
	var id int64
	var created time.Time
	err := s.write(ctx, func(tx pgx.Tx) error {
		created = a.CreatedAt
		if created.IsZero() {
			now, err := s.now(ctx, tx)
			if err != nil {
				return err
			}
			created = now
		}
		_, err := tx.Exec(ctx, `UPDATE approvals SET status = $1 WHERE env = $2 AND component = $3 AND status IN ($4, $5)`,
			store.ApprovalStale, a.Env, a.Component, store.ApprovalPending, store.ApprovalApproved)
		if err != nil {
			return fmt.Errorf("mark earlier approvals stale: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM saved_plans WHERE approval_id IN
			(SELECT id FROM approvals WHERE env = $1 AND component = $2 AND status = $3)`, a.Env, a.Component, store.ApprovalStale); err != nil {
			return fmt.Errorf("drop stale plans: %w", err)
		}
		return tx.QueryRow(ctx, `INSERT INTO approvals
			(env, component, run_id, revision, fingerprint, plan_file, plan_checksum, plan, status, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			a.Env, a.Component, a.RunID, a.Revision, a.Fingerprint, a.PlanFile, a.PlanChecksum, a.Plan,
			store.ApprovalPending, ts(created)).Scan(&id)
	})
	if err != nil {
		return fmt.Errorf("create approval for %s in %s: %w", a.Component, a.Env, err)
	}
	a.ID, a.Status, a.CreatedAt = id, store.ApprovalPending, created
	return nil
}

const approvalColumns = `id, env, component, run_id, revision, fingerprint, plan_file, plan_checksum, plan,
	status, created_at, decided_by, reason, decided_at`

func scanApproval(sc pgx.Row) (store.Approval, error) {
	var a store.Approval
	err := sc.Scan(&a.ID, &a.Env, &a.Component, &a.RunID, &a.Revision, &a.Fingerprint, &a.PlanFile,
		&a.PlanChecksum, &a.Plan, &a.Status, timeCol{&a.CreatedAt}, &a.DecidedBy, &a.Reason, timeCol{&a.DecidedAt})
	return a, err
}

// Approval implements store.Store; a missing approval is store.ErrNotFound.
func (s *Store) Approval(ctx context.Context, id int64) (store.Approval, error) {
	a, err := scanApproval(s.pool.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = $1`, id))
	if err != nil {
		return store.Approval{}, notFound(err, "approval %d", id)
	}
	return a, nil
}

// OpenApproval implements store.Store: the newest pending or approved
// approval of the component.
func (s *Store) OpenApproval(ctx context.Context, env, component string) (store.Approval, error) {
	a, err := scanApproval(s.pool.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approvals
		WHERE env = $1 AND component = $2 AND status IN ($3, $4) ORDER BY id DESC LIMIT 1`,
		env, component, store.ApprovalPending, store.ApprovalApproved))
	if err != nil {
		return store.Approval{}, notFound(err, "open approval of %s in %s", component, env)
	}
	return a, nil
}

// ListApprovals implements store.Store: lowest ID first (the reverse with
// f.NewestFirst).
func (s *Store) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	a := &args{}
	if f.Env != "" {
		a.add("env = ?", f.Env)
	}
	if f.Component != "" {
		a.add("component = ?", f.Component)
	}
	if len(f.Statuses) > 0 {
		a.add("status = ANY(?)", f.Statuses)
	}
	if len(f.Teams) > 0 {
		a.envOfTeams("env", f.Teams)
	}
	if f.After > 0 {
		a.add("id > ?", f.After)
	}
	order := ` ORDER BY id`
	if f.NewestFirst {
		order += ` DESC`
	}
	return queryAll(ctx, s.pool, "list approvals", scanApproval,
		`SELECT `+approvalColumns+` FROM approvals`+a.clause()+order+limitClause(f.Limit), a.vals...)
}

// DecideApproval implements store.Store. The status is compared and set in
// one serializable transaction, so of two people deciding the same
// approval, through any replicas, exactly one wins; the other gets an error
// wrapping store.ErrConflict that names the current status.
func (s *Store) DecideApproval(ctx context.Context, id int64, from, to, actor, reason string, at time.Time) error {
	if !slices.Contains(store.ApprovalStatuses, to) {
		return fmt.Errorf("decide approval %d: unknown status %q", id, to)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		when, err := s.orNow(ctx, tx, at)
		if err != nil {
			return err
		}
		var current string
		if err := tx.QueryRow(ctx, `SELECT status FROM approvals WHERE id = $1`, id).Scan(&current); err != nil {
			return notFound(err, "approval %d", id)
		}
		if current != from {
			return fmt.Errorf("its status is %s: %w", current, store.ErrConflict)
		}
		_, err = tx.Exec(ctx, `UPDATE approvals SET status = $1, decided_by = $2, reason = $3, decided_at = $4 WHERE id = $5`,
			to, actor, reason, ts(when), id)
		if err != nil || !store.FinalApproval(to) {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM saved_plans WHERE approval_id = $1`, id) // never applied now
		return err
	})
	if err != nil {
		return fmt.Errorf("decide approval %d (%s to %s): %w", id, from, to, err)
	}
	return nil
}

// orNow is at, or the store's now when at is zero.
func (s *Store) orNow(ctx context.Context, tx pgx.Tx, at time.Time) (time.Time, error) {
	if !at.IsZero() {
		return at, nil
	}
	return s.now(ctx, tx)
}
