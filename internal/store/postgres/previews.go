package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

const previewColumns = `branch, commit_hash, env, team, change, status, checksum, base_revision, run_id, error, components, policy, created_at`

// PutPreview implements store.Store.
func (s *Store) PutPreview(ctx context.Context, p store.Preview) error {
	if p.Branch == "" || p.Commit == "" || p.Env == "" {
		return fmt.Errorf("put preview: branch, commit and env are required")
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		if p.CreatedAt.IsZero() {
			now, err := s.now(ctx, tx)
			if err != nil {
				return err
			}
			p.CreatedAt = now
		}
		_, err := tx.Exec(ctx, `INSERT INTO previews (`+previewColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
			ON CONFLICT (branch, commit_hash, env) DO UPDATE SET team = excluded.team, change = excluded.change,
			status = excluded.status, checksum = excluded.checksum, base_revision = excluded.base_revision,
			run_id = excluded.run_id, error = excluded.error, components = excluded.components,
			policy = excluded.policy, created_at = excluded.created_at`,
			p.Branch, p.Commit, p.Env, p.Team, p.Change, p.Status, p.Checksum, p.BaseRevision, p.RunID, p.Error,
			nullBytes(p.Components), nullBytes(p.Policy), ts(p.CreatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("put the preview of %s at %s for %s: %w", p.Branch, p.Commit, p.Env, err)
	}
	return nil
}

// ListPreviews implements store.Store.
func (s *Store) ListPreviews(ctx context.Context, f store.PreviewFilter) ([]store.Preview, error) {
	var a args
	if f.Branch != "" {
		a.add(`branch = ?`, f.Branch)
	}
	if f.Commit != "" {
		a.add(`commit_hash = ?`, f.Commit)
	}
	if f.Env != "" {
		a.add(`env = ?`, f.Env)
	}
	if len(f.Teams) > 0 {
		a.add(`team = ANY(?::text[])`, f.Teams)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	a.vals = append(a.vals, limit)
	return s.previews(ctx, "list previews", `SELECT `+previewColumns+` FROM previews`+a.clause()+
		fmt.Sprintf(` ORDER BY created_at DESC, env LIMIT $%d`, len(a.vals)), a.vals...)
}

// PreviewsByChecksum implements store.Store.
func (s *Store) PreviewsByChecksum(ctx context.Context, env, checksum string) ([]store.Preview, error) {
	return s.previews(ctx, "previews by checksum", `SELECT `+previewColumns+` FROM previews
		WHERE env = $1 AND checksum = $2 AND status = $3 ORDER BY created_at DESC, branch LIMIT 100`, env, checksum, store.PreviewPlanned)
}

func (s *Store) previews(ctx context.Context, what, query string, vals ...any) ([]store.Preview, error) {
	out, err := queryAll(ctx, s.pool, what, func(row pgx.Row) (store.Preview, error) {
		var p store.Preview
		err := row.Scan(&p.Branch, &p.Commit, &p.Env, &p.Team, &p.Change, &p.Status, &p.Checksum, &p.BaseRevision,
			&p.RunID, &p.Error, &p.Components, &p.Policy, timeCol{&p.CreatedAt})
		return p, err
	}, query, vals...)
	if out == nil && err == nil {
		out = []store.Preview{}
	}
	return out, err
}
