package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"knit.dev/knit/internal/store"
)

// PutPipeline implements store.Store.
func (s *Store) PutPipeline(ctx context.Context, p store.Pipeline) error {
	err := s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO pipelines (name, team, definition, commit_hash, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET team = excluded.team, definition = excluded.definition,
				commit_hash = excluded.commit_hash, updated_at = excluded.updated_at`,
			p.Name, p.Team, p.Definition, p.Commit, ts(s.stamp(p.UpdatedAt)))
		return err
	})
	if err != nil {
		return fmt.Errorf("put pipeline %s: %w", p.Name, err)
	}
	return nil
}

const pipelineCols = `name, team, definition, commit_hash, updated_at`

func scanPipeline(row rowScanner) (store.Pipeline, error) {
	var p store.Pipeline
	err := row.Scan(&p.Name, &p.Team, &p.Definition, &p.Commit, timeCol{&p.UpdatedAt})
	return p, err
}

// Pipeline implements store.Store.
func (s *Store) Pipeline(ctx context.Context, name string) (store.Pipeline, error) {
	p, err := scanPipeline(s.q.QueryRowContext(ctx, `SELECT `+pipelineCols+` FROM pipelines WHERE name = ?`, name))
	if err != nil {
		return store.Pipeline{}, notFound(err, "pipeline %s", name)
	}
	return p, nil
}

// ListPipelines implements store.Store.
func (s *Store) ListPipelines(ctx context.Context) ([]store.Pipeline, error) {
	return queryAll(ctx, s.q, "list pipelines", scanPipeline, `SELECT `+pipelineCols+` FROM pipelines ORDER BY name`)
}

const releaseCols = `pipeline, id, seq, template, params, commit_hash, author, author_verified, message, created_at`

func scanRelease(row rowScanner) (store.Release, error) {
	var r store.Release
	err := row.Scan(&r.Pipeline, &r.ID, &r.Seq, &r.Template, &r.Params, &r.Commit, &r.Author, &r.AuthorVerified, &r.Message, timeCol{&r.CreatedAt})
	return r, err
}

// AddRelease implements store.Store.
func (s *Store) AddRelease(ctx context.Context, r store.Release) (store.Release, bool, error) {
	var created bool
	err := s.write(ctx, func(tx *txn) error {
		have, err := scanRelease(tx.QueryRowContext(ctx, `SELECT `+releaseCols+` FROM pipeline_releases WHERE pipeline = ? AND id = ?`, r.Pipeline, r.ID))
		if err == nil {
			r, created = have, false
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM pipeline_releases WHERE pipeline = ?`, r.Pipeline).Scan(&r.Seq); err != nil {
			return err
		}
		r.CreatedAt = s.stamp(r.CreatedAt)
		if r.Params == nil {
			r.Params = []byte("{}")
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO pipeline_releases (`+releaseCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Pipeline, r.ID, r.Seq, r.Template, r.Params, r.Commit, r.Author, r.AuthorVerified, r.Message, ts(r.CreatedAt))
		created = err == nil
		return err
	})
	if err != nil {
		return store.Release{}, false, fmt.Errorf("add release %s of %s: %w", r.ID, r.Pipeline, err)
	}
	return r, created, nil
}

// Releases implements store.Store.
func (s *Store) Releases(ctx context.Context, pipeline string) ([]store.Release, error) {
	return queryAll(ctx, s.q, "list releases", scanRelease,
		`SELECT `+releaseCols+` FROM pipeline_releases WHERE pipeline = ? ORDER BY seq DESC`, pipeline)
}

const stageCols = `pipeline, release_id, stage, state, run_id, reason, message, actor, changed_at, verified_at`

func scanStage(row rowScanner) (store.StageState, error) {
	var st store.StageState
	err := row.Scan(&st.Pipeline, &st.Release, &st.Stage, &st.State, &st.RunID, &st.Reason, &st.Message, &st.Actor,
		timeCol{&st.ChangedAt}, timeCol{&st.VerifiedAt})
	return st, err
}

// SetStage implements store.Store.
func (s *Store) SetStage(ctx context.Context, st store.StageState, from string, audit *store.AuditEvent) error {
	st.ChangedAt = s.stamp(st.ChangedAt)
	err := s.write(ctx, func(tx *txn) error {
		var cur string
		err := tx.QueryRowContext(ctx, `SELECT state FROM pipeline_stages WHERE pipeline = ? AND release_id = ? AND stage = ?`,
			st.Pipeline, st.Release, st.Stage).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if cur != from {
			return fmt.Errorf("%w: the release is %q there, not %q", store.ErrConflict, cur, from)
		}
		vals := []any{st.Pipeline, st.Release, st.Stage, st.State, st.RunID, st.Reason, st.Message, st.Actor, ts(st.ChangedAt), ts(st.VerifiedAt)}
		if _, err := tx.ExecContext(ctx, `INSERT INTO pipeline_stages (`+stageCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (pipeline, release_id, stage) DO UPDATE SET state = excluded.state, run_id = excluded.run_id,
				reason = excluded.reason, message = excluded.message, actor = excluded.actor,
				changed_at = excluded.changed_at, verified_at = excluded.verified_at`, vals...); err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM pipeline_history WHERE pipeline = ?`, st.Pipeline).Scan(&seq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO pipeline_history (seq, `+stageCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append([]any{seq}, vals...)...); err != nil {
			return err
		}
		if audit == nil {
			return nil
		}
		return s.appendAudit(ctx, tx, *audit)
	})
	if err != nil {
		return fmt.Errorf("set %s of %s in %s: %w", st.Release, st.Pipeline, st.Stage, err)
	}
	return nil
}

// StageStates implements store.Store.
func (s *Store) StageStates(ctx context.Context, pipeline string) ([]store.StageState, error) {
	return queryAll(ctx, s.q, "list stage states", scanStage,
		`SELECT `+stageCols+` FROM pipeline_stages WHERE pipeline = ? ORDER BY release_id, stage`, pipeline)
}

// StageHistory implements store.Store.
func (s *Store) StageHistory(ctx context.Context, pipeline string) ([]store.StageEvent, error) {
	return queryAll(ctx, s.q, "list stage history", func(row rowScanner) (store.StageEvent, error) {
		var e store.StageEvent
		st := &e.StageState
		err := row.Scan(&e.Seq, &st.Pipeline, &st.Release, &st.Stage, &st.State, &st.RunID, &st.Reason, &st.Message, &st.Actor,
			timeCol{&st.ChangedAt}, timeCol{&st.VerifiedAt})
		return e, err
	}, `SELECT seq, `+stageCols+` FROM pipeline_history WHERE pipeline = ? ORDER BY seq`, pipeline)
}

// ApprovePromotion implements store.Store.
func (s *Store) ApprovePromotion(ctx context.Context, a store.PromotionApproval, audit *store.AuditEvent) error {
	a.ApprovedAt = s.stamp(a.ApprovedAt)
	err := s.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO pipeline_approvals (pipeline, release_id, stage, actor, reason, forced, approved_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, a.Pipeline, a.Release, a.Stage, a.Actor, a.Reason, a.Forced, ts(a.ApprovedAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("%w: %s approved it already", store.ErrConflict, a.Actor)
		}
		if audit == nil {
			return nil
		}
		return s.appendAudit(ctx, tx, *audit)
	})
	if err != nil {
		return fmt.Errorf("approve %s of %s into %s: %w", a.Release, a.Pipeline, a.Stage, err)
	}
	return nil
}

// PromotionApprovals implements store.Store.
func (s *Store) PromotionApprovals(ctx context.Context, pipeline string) ([]store.PromotionApproval, error) {
	return queryAll(ctx, s.q, "list promotion approvals", func(row rowScanner) (store.PromotionApproval, error) {
		var a store.PromotionApproval
		err := row.Scan(&a.Pipeline, &a.Release, &a.Stage, &a.Actor, &a.Reason, &a.Forced, timeCol{&a.ApprovedAt})
		return a, err
	}, `SELECT pipeline, release_id, stage, actor, reason, forced, approved_at FROM pipeline_approvals
		WHERE pipeline = ? ORDER BY approved_at, actor`, pipeline)
}

// stamp is t, or the store's now when t is zero.
func (s *Store) stamp(t time.Time) time.Time {
	if t.IsZero() {
		return s.now()
	}
	return t
}
