package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

const stageFileCols = `pipeline, stage, version, seen_hash, seen_commit, applied_commit, change_id, change_commit, change_hash,
	change_diff, change_state, change_release, change_run, change_reason, change_message, change_author,
	change_author_verified, change_subject, change_actor, changed_at`

func scanStageFile(row pgx.Row) (store.StageFile, error) {
	var f store.StageFile
	c := &f.Change
	err := row.Scan(&f.Pipeline, &f.Stage, &f.Version, &f.SeenHash, &f.SeenCommit, &f.AppliedCommit, &c.ID, &c.Commit, &c.Hash,
		&c.Diff, &c.State, &c.Release, &c.RunID, &c.Reason, &c.Message, &c.Author, &c.AuthorVerified, &c.Subject, &c.Actor,
		timeCol{&c.ChangedAt})
	return f, err
}

// StageFiles implements store.Store.
func (s *Store) StageFiles(ctx context.Context, pipeline string) ([]store.StageFile, error) {
	return queryAll(ctx, s.pool, "list stage files", scanStageFile,
		`SELECT `+stageFileCols+` FROM pipeline_stage_files WHERE pipeline = $1 ORDER BY stage`, pipeline)
}

// PutStageFile implements store.Store.
func (s *Store) PutStageFile(ctx context.Context, f store.StageFile, audit *store.AuditEvent) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		var cur int64
		err := tx.QueryRow(ctx, `SELECT version FROM pipeline_stage_files WHERE pipeline = $1 AND stage = $2`, f.Pipeline, f.Stage).Scan(&cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if cur != f.Version {
			return fmt.Errorf("%w: the stage file is at version %d, not %d", store.ErrConflict, cur, f.Version)
		}
		c := f.Change
		if _, err := tx.Exec(ctx, `INSERT INTO pipeline_stage_files (`+stageFileCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
			ON CONFLICT (pipeline, stage) DO UPDATE SET version = excluded.version, seen_hash = excluded.seen_hash,
				seen_commit = excluded.seen_commit, applied_commit = excluded.applied_commit, change_id = excluded.change_id,
				change_commit = excluded.change_commit, change_hash = excluded.change_hash, change_diff = excluded.change_diff,
				change_state = excluded.change_state, change_release = excluded.change_release, change_run = excluded.change_run,
				change_reason = excluded.change_reason, change_message = excluded.change_message, change_author = excluded.change_author,
				change_author_verified = excluded.change_author_verified, change_subject = excluded.change_subject,
				change_actor = excluded.change_actor, changed_at = excluded.changed_at`,
			f.Pipeline, f.Stage, f.Version+1, f.SeenHash, f.SeenCommit, f.AppliedCommit, c.ID, c.Commit, c.Hash, c.Diff, c.State,
			c.Release, c.RunID, c.Reason, c.Message, c.Author, c.AuthorVerified, c.Subject, c.Actor, ts(c.ChangedAt)); err != nil {
			return err
		}
		if audit == nil {
			return nil
		}
		return s.appendAudit(ctx, tx, *audit)
	})
	if err != nil {
		return fmt.Errorf("put stage file of %s in %s: %w", f.Stage, f.Pipeline, err)
	}
	return nil
}
