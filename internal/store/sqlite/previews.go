package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"knit.dev/knit/internal/store"
)

const previewColumns = `branch, commit_hash, env, team, change, status, checksum, base_revision, run_id, error, components, policy, created_at`

// PutPreview implements store.Store.
func (s *Store) PutPreview(ctx context.Context, p store.Preview) error {
	if p.Branch == "" || p.Commit == "" || p.Env == "" {
		return fmt.Errorf("put preview: branch, commit and env are required")
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.now()
	}
	err := s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO previews (`+previewColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
	where, args := []string{`1 = 1`}, []any{}
	if f.Branch != "" {
		where, args = append(where, `branch = ?`), append(args, f.Branch)
	}
	if f.Commit != "" {
		where, args = append(where, `commit_hash = ?`), append(args, f.Commit)
	}
	if f.Env != "" {
		where, args = append(where, `env = ?`), append(args, f.Env)
	}
	if len(f.Teams) > 0 {
		where = append(where, `team IN (?`+strings.Repeat(`, ?`, len(f.Teams)-1)+`)`)
		for _, t := range f.Teams {
			args = append(args, t)
		}
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	args = append(args, limit)
	return s.previews(ctx, "list previews", `SELECT `+previewColumns+` FROM previews WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, env LIMIT ?`, args...)
}

// PreviewsByChecksum implements store.Store.
func (s *Store) PreviewsByChecksum(ctx context.Context, env, checksum string) ([]store.Preview, error) {
	return s.previews(ctx, "previews by checksum", `SELECT `+previewColumns+` FROM previews
		WHERE env = ? AND checksum = ? AND status = ? ORDER BY created_at DESC, branch LIMIT 100`, env, checksum, store.PreviewPlanned)
}

func (s *Store) previews(ctx context.Context, what, query string, args ...any) ([]store.Preview, error) {
	rows, err := s.q.QueryContext(ctx, query, args...) // every run asks (linkPreview): prepared once
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	out := []store.Preview{}
	for rows.Next() {
		var p store.Preview
		var comps, pol []byte
		if err := rows.Scan(&p.Branch, &p.Commit, &p.Env, &p.Team, &p.Change, &p.Status, &p.Checksum, &p.BaseRevision,
			&p.RunID, &p.Error, &comps, &pol, timeCol{&p.CreatedAt}); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		p.Components, p.Policy = comps, pol
		out = append(out, p)
	}
	if err := rows.Err(); err != nil && err != sql.ErrNoRows {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
