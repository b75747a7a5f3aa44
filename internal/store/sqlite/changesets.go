package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"knit.dev/knit/internal/store"
)

// CreateChangeSet implements store.Store: earlier open change sets of the
// environment go stale in the transaction that records the new one.
func (s *Store) CreateChangeSet(ctx context.Context, cs *store.ChangeSet) error {
	if cs.Env == "" || cs.Checksum == "" {
		return errors.New("create change set: Env and Checksum are required")
	}
	body, err := json.Marshal(cs.Components)
	if err != nil {
		return fmt.Errorf("create change set: %w", err)
	}
	created := cs.CreatedAt
	if created.IsZero() {
		created = s.now()
	}
	var id int64
	err = s.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `UPDATE change_sets SET status = ? WHERE env = ? AND status IN (?, ?)`,
			store.ChangeSetStale, cs.Env, store.ChangeSetPending, store.ChangeSetApproved); err != nil {
			return fmt.Errorf("mark earlier change sets stale: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO change_sets (env, run_id, revision, checksum, components, status, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, cs.Env, cs.RunID, cs.Revision, cs.Checksum, body, store.ChangeSetPending, ts(created))
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return fmt.Errorf("create change set of %s: %w", cs.Env, err)
	}
	cs.ID, cs.Status, cs.CreatedAt = id, store.ChangeSetPending, created
	return nil
}

const changeSetColumns = `id, env, run_id, revision, checksum, components, status, created_at, decided_by, reason, decided_at`

func scanChangeSet(sc rowScanner) (store.ChangeSet, error) {
	var cs store.ChangeSet
	var body []byte
	err := sc.Scan(&cs.ID, &cs.Env, &cs.RunID, &cs.Revision, &cs.Checksum, &body, &cs.Status,
		timeCol{&cs.CreatedAt}, &cs.DecidedBy, &cs.Reason, timeCol{&cs.DecidedAt})
	if err != nil {
		return cs, err
	}
	if err := json.Unmarshal(body, &cs.Components); err != nil {
		return cs, fmt.Errorf("change set %d: unreadable components: %w", cs.ID, err)
	}
	return cs, nil
}

// ListChangeSets implements store.Store.
func (s *Store) ListChangeSets(ctx context.Context, f store.ChangeSetFilter) ([]store.ChangeSet, error) {
	var where []string
	var args []any
	if f.Env != "" {
		where = append(where, `env = ?`)
		args = append(args, f.Env)
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
	query := `SELECT ` + changeSetColumns + ` FROM change_sets`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	return queryAll(ctx, s.q, "list change sets", scanChangeSet, query+` ORDER BY id DESC`+limitClause(f.Limit), args...)
}

// DecideChangeSet implements store.Store. Like DecideApproval, of two
// people deciding the same change set exactly one wins.
func (s *Store) DecideChangeSet(ctx context.Context, id int64, from, to, actor, reason string, at time.Time) error {
	if !slices.Contains(store.ApprovalStatuses, to) {
		return fmt.Errorf("decide change set %d: unknown status %q", id, to)
	}
	if at.IsZero() {
		at = s.now()
	}
	err := s.write(ctx, func(tx *txn) error {
		cs, err := scanChangeSet(tx.QueryRowContext(ctx, `SELECT `+changeSetColumns+` FROM change_sets WHERE id = ?`, id))
		if err != nil {
			return notFound(err, "change set %d", id)
		}
		if cs.Status != from {
			return fmt.Errorf("its status is %s: %w", cs.Status, store.ErrConflict)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE change_sets SET status = ?, decided_by = ?, reason = ?, decided_at = ?
			WHERE id = ?`, to, actor, reason, ts(at), id); err != nil {
			return err
		}
		if from != store.ChangeSetPending || (to != store.ChangeSetApproved && to != store.ChangeSetRejected) {
			return nil // only a person's decision decides the plans in it
		}
		for _, c := range cs.Components {
			if c.ApprovalID == 0 {
				continue
			}
			res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = ?, decided_by = ?, reason = ?, decided_at = ?
				WHERE id = ? AND status = ? AND plan_checksum = ?`, to, actor, reason, ts(at), c.ApprovalID, store.ApprovalPending, c.PlanChecksum)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 1 {
				if err != nil {
					return err
				}
				continue
			}
			var status string
			err = tx.QueryRowContext(ctx, `SELECT status FROM approvals WHERE id = ? AND plan_checksum = ?`, c.ApprovalID, c.PlanChecksum).Scan(&status)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if status != to {
				return fmt.Errorf("approval #%d of %s is no longer pending with that plan: %w", c.ApprovalID, c.Component, store.ErrConflict)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("decide change set %d (%s to %s): %w", id, from, to, err)
	}
	return nil
}

// supersedableQuery finds a run SupersedeRuns would supersede.
const supersedableQuery = `SELECT 1 FROM runs WHERE env = ? AND status = ? AND id != ? LIMIT 1`

// SupersedeRuns implements store.Store.
func (s *Store) SupersedeRuns(ctx context.Context, env, by string) ([]string, error) {
	// Most runs find none waiting: a read says so without taking the
	// writer's lock (one that starts waiting meanwhile is as if it had
	// started waiting just after).
	var one int
	switch err := s.q.QueryRowContext(ctx, supersedableQuery, env, store.StatusAwaiting, by).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("supersede the waiting runs of %s: %w", env, err)
	}
	var ids []string
	err := s.write(ctx, func(tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM runs WHERE env = ? AND status = ? AND id != ?`, env, store.StatusAwaiting, by)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, superseded_by = ? WHERE env = ? AND status = ? AND id != ?`,
			store.StatusSuperseded, by, env, store.StatusAwaiting, by)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("supersede the waiting runs of %s: %w", env, err)
	}
	return ids, nil
}
