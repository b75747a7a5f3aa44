package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

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
	var id int64
	var created time.Time
	err = s.write(ctx, func(tx pgx.Tx) error {
		if created, err = s.orNow(ctx, tx, cs.CreatedAt); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE change_sets SET status = $1 WHERE env = $2 AND status IN ($3, $4)`,
			store.ChangeSetStale, cs.Env, store.ChangeSetPending, store.ChangeSetApproved); err != nil {
			return fmt.Errorf("mark earlier change sets stale: %w", err)
		}
		return tx.QueryRow(ctx, `INSERT INTO change_sets (env, run_id, revision, checksum, components, status, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
			cs.Env, cs.RunID, cs.Revision, cs.Checksum, body, store.ChangeSetPending, ts(created)).Scan(&id)
	})
	if err != nil {
		return fmt.Errorf("create change set of %s: %w", cs.Env, err)
	}
	cs.ID, cs.Status, cs.CreatedAt = id, store.ChangeSetPending, created
	return nil
}

const changeSetColumns = `id, env, run_id, revision, checksum, components, status, created_at, decided_by, reason, decided_at`

func scanChangeSet(sc pgx.Row) (store.ChangeSet, error) {
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
	a := &args{}
	if f.Env != "" {
		a.add("env = ?", f.Env)
	}
	if len(f.Statuses) > 0 {
		a.add("status = ANY(?)", f.Statuses)
	}
	if len(f.Teams) > 0 {
		a.envOfTeams("env", f.Teams)
	}
	return queryAll(ctx, s.pool, "list change sets", scanChangeSet,
		`SELECT `+changeSetColumns+` FROM change_sets`+a.clause()+` ORDER BY id DESC`+limitClause(f.Limit), a.vals...)
}

// DecideChangeSet implements store.Store. Like DecideApproval, of two
// people deciding the same change set exactly one wins.
func (s *Store) DecideChangeSet(ctx context.Context, id int64, from, to, actor, reason string, at time.Time) error {
	if !slices.Contains(store.ApprovalStatuses, to) {
		return fmt.Errorf("decide change set %d: unknown status %q", id, to)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		when, err := s.orNow(ctx, tx, at)
		if err != nil {
			return err
		}
		cs, err := scanChangeSet(tx.QueryRow(ctx, `SELECT `+changeSetColumns+` FROM change_sets WHERE id = $1`, id))
		if err != nil {
			return notFound(err, "change set %d", id)
		}
		if cs.Status != from {
			return fmt.Errorf("its status is %s: %w", cs.Status, store.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `UPDATE change_sets SET status = $1, decided_by = $2, reason = $3, decided_at = $4
			WHERE id = $5`, to, actor, reason, ts(when), id); err != nil {
			return err
		}
		if from != store.ChangeSetPending || (to != store.ChangeSetApproved && to != store.ChangeSetRejected) {
			return nil // only a person's decision decides the plans in it
		}
		for _, c := range cs.Components {
			if c.ApprovalID == 0 {
				continue
			}
			if err := decideMember(ctx, tx, c, to, actor, reason, when); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("decide change set %d (%s to %s): %w", id, from, to, err)
	}
	return nil
}

// decideMember moves the approval of c, one component of a change set,
// from pending to `to`; one already decided so with the same plan is left
// alone, and any other is store.ErrConflict.
func decideMember(ctx context.Context, tx pgx.Tx, c store.ChangeSetComponent, to, actor, reason string, at time.Time) error {
	tag, err := tx.Exec(ctx, `UPDATE approvals SET status = $1, decided_by = $2, reason = $3, decided_at = $4
		WHERE id = $5 AND status = $6 AND plan_checksum = $7`, to, actor, reason, ts(at), c.ApprovalID, store.ApprovalPending, c.PlanChecksum)
	if err != nil || tag.RowsAffected() == 1 {
		return err
	}
	var status string
	err = tx.QueryRow(ctx, `SELECT status FROM approvals WHERE id = $1 AND plan_checksum = $2`, c.ApprovalID, c.PlanChecksum).Scan(&status)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if status != to {
		return fmt.Errorf("approval #%d of %s is no longer pending with that plan: %w", c.ApprovalID, c.Component, store.ErrConflict)
	}
	return nil
}

// SupersedeRuns implements store.Store.
func (s *Store) SupersedeRuns(ctx context.Context, env, by string) ([]string, error) {
	var ids []string
	err := s.write(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE runs SET status = $1, superseded_by = $2 WHERE env = $3 AND status = $4 AND id <> $2
			RETURNING id`, store.StatusSuperseded, by, env, store.StatusAwaiting)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("supersede the waiting runs of %s: %w", env, err)
	}
	return ids, nil
}
