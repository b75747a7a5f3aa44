package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// PutRevision implements store.Store. rev.Env defaults to env.ID, rev.Hash
// to the SHA-256 of rev.Spec and rev.CreatedAt to now. A new revision also
// refreshes the environment's team, name and metadata name (those env sets).
func (s *Store) PutRevision(ctx context.Context, env store.Environment, rev store.Revision) (store.Revision, error) {
	rev, err := store.PrepareRevision(env, rev)
	if err != nil {
		return store.Revision{}, err
	}
	var out store.Revision
	err = s.write(ctx, func(tx pgx.Tx) error {
		out, err = s.putRevision(ctx, tx, env, rev)
		return err
	})
	if err != nil {
		return store.Revision{}, fmt.Errorf("put revision of %s: %w", env.ID, err)
	}
	return out, nil
}

// putRevision is PutRevision's write in tx, of a prepared rev (a zero
// creation time becomes the database's now).
func (s *Store) putRevision(ctx context.Context, tx pgx.Tx, env store.Environment, r store.Revision) (store.Revision, error) {
	if r.CreatedAt.IsZero() {
		now, err := s.now(ctx, tx)
		if err != nil {
			return store.Revision{}, err
		}
		r.CreatedAt = now
	}
	latest, err := revision(ctx, tx, env.ID, 0)
	switch {
	case err == nil && latest.Hash == r.Hash:
		return latest, nil
	case err == nil:
		r.Number = latest.Number + 1
	case errors.Is(err, store.ErrNotFound):
		r.Number = 1
	default:
		return store.Revision{}, err
	}
	if err := upsertEnvironment(ctx, tx, env, r); err != nil {
		return store.Revision{}, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO revisions (`+revisionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, r.Env, r.Number, r.Hash, r.Source, r.Spec, ts(r.CreatedAt),
		r.Root, r.Commit, r.Author, r.Message, r.Errors, orEmpty(r.File), r.Verification)
	if err != nil {
		return store.Revision{}, fmt.Errorf("insert revision: %w", err)
	}
	return r, nil
}

// upsertEnvironment creates env at rev or points it at rev, keeping the
// stored team, name and metadata name where env leaves them empty.
func upsertEnvironment(ctx context.Context, tx pgx.Tx, env store.Environment, rev store.Revision) error {
	_, err := tx.Exec(ctx, `INSERT INTO environments AS e (id, team, name, metadata, revision, status, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
		ON CONFLICT (id) DO UPDATE SET
			team = COALESCE(NULLIF(excluded.team, ''), e.team),
			name = COALESCE(NULLIF(excluded.name, ''), e.name),
			metadata = COALESCE(NULLIF(excluded.metadata, ''), e.metadata),
			revision = excluded.revision, updated_at = excluded.updated_at`,
		env.ID, env.Team, env.Name, env.Metadata, rev.Number, env.Status, ts(rev.CreatedAt))
	if err != nil {
		return fmt.Errorf("upsert environment: %w", err)
	}
	return nil
}

// Revision implements store.Store; a missing revision is store.ErrNotFound.
func (s *Store) Revision(ctx context.Context, env string, n int) (store.Revision, error) {
	return revision(ctx, s.pool, env, n)
}

func revision(ctx context.Context, q querier, env string, n int) (store.Revision, error) {
	query := `SELECT ` + revisionColumns + ` FROM revisions WHERE env = $1 AND number = $2`
	args := []any{env, n}
	if n == 0 {
		query = `SELECT ` + revisionColumns + ` FROM revisions WHERE env = $1 ORDER BY number DESC LIMIT 1`
		args = args[:1]
	}
	r, err := scanRevision(q.QueryRow(ctx, query, args...))
	if err != nil {
		if n == 0 {
			return store.Revision{}, notFound(err, "latest revision of %s", env)
		}
		return store.Revision{}, notFound(err, "revision %d of %s", n, env)
	}
	return r, nil
}

const revisionColumns = `env, number, hash, source, spec, created_at, root, commit_hash, author, message, errors, file, verification`

func scanRevision(sc pgx.Row) (store.Revision, error) {
	var r store.Revision
	err := sc.Scan(&r.Env, &r.Number, &r.Hash, &r.Source, &r.Spec, timeCol{&r.CreatedAt}, &r.Root, &r.Commit, &r.Author, &r.Message, &r.Errors, &r.File, &r.Verification)
	if len(r.File) == 0 {
		r.File = nil // none kept, as the SQLite store returns it
	}
	return r, err
}

const environmentColumns = `id, team, name, metadata, revision, applied_revision, status, created_at, updated_at`

func scanEnvironment(sc pgx.Row) (store.Environment, error) {
	var e store.Environment
	err := sc.Scan(&e.ID, &e.Team, &e.Name, &e.Metadata, &e.Revision, &e.AppliedRevision, &e.Status, timeCol{&e.CreatedAt}, timeCol{&e.UpdatedAt})
	return e, err
}

// Environment implements store.Store; a missing one is store.ErrNotFound.
func (s *Store) Environment(ctx context.Context, id string) (store.Environment, error) {
	e, err := scanEnvironment(s.pool.QueryRow(ctx, `SELECT `+environmentColumns+` FROM environments WHERE id = $1`, id))
	if err != nil {
		return store.Environment{}, notFound(err, "environment %s", id)
	}
	return e, nil
}

// Environments implements store.Store, ordered by ID.
func (s *Store) Environments(ctx context.Context, f store.EnvironmentFilter) ([]store.Environment, error) {
	a := environmentsWhere(f, "")
	return queryAll(ctx, s.pool, "list environments", scanEnvironment,
		`SELECT `+environmentColumns+` FROM environments`+a.clause()+` ORDER BY id`+limitClause(f.Limit), a.vals...)
}

// lastRunJoin joins each environment e with its newest run r (columns
// NULL when it has none).
const lastRunJoin = `LEFT JOIN LATERAL (SELECT * FROM runs WHERE env = e.id AND source <> 'preview' ORDER BY started_at DESC NULLS LAST, seq DESC LIMIT 1) r ON TRUE`

// runJoinColumns are the run columns (runColumns) of a LEFT JOIN, NULL as
// zero.
const runJoinColumns = `COALESCE(%[1]s.id, ''), COALESCE(%[1]s.env, ''), COALESCE(%[1]s.kind, ''), COALESCE(%[1]s.revision, 0),
	COALESCE(%[1]s.status, ''), COALESCE(%[1]s.actor, ''), COALESCE(%[1]s.reason, ''), COALESCE(%[1]s.source, ''),
	COALESCE(%[1]s.error, ''), COALESCE(%[1]s.pid, 0), %[1]s.started_at, %[1]s.finished_at, COALESCE(%[1]s.superseded_by, ''), %[1]s.policy`

// runJoinTargets are scan targets for runJoinColumns; a NULL policy
// leaves r.Policy nil.
func runJoinTargets(r *store.Run) []any {
	return []any{&r.ID, &r.Env, &r.Kind, &r.Revision, &r.Status, &r.Actor, &r.Reason, &r.Source, &r.Error, &r.PID,
		timeCol{&r.StartedAt}, timeCol{&r.FinishedAt}, &r.SupersededBy, (*[]byte)(&r.Policy)}
}

// EnvironmentSummaries implements store.Store: the page of Environments,
// each joined with its newest run, in one query.
func (s *Store) EnvironmentSummaries(ctx context.Context, f store.EnvironmentFilter) ([]store.EnvironmentSummary, error) {
	a := environmentsWhere(f, "e.")
	query := `SELECT e.id, e.team, e.name, e.metadata, e.revision, e.applied_revision, e.status, e.created_at, e.updated_at, ` +
		fmt.Sprintf(runJoinColumns, "r") + ` FROM environments e ` + lastRunJoin + a.clause() + ` ORDER BY e.id` + limitClause(f.Limit)
	return queryAll(ctx, s.pool, "list environments", func(row pgx.Row) (store.EnvironmentSummary, error) {
		var es store.EnvironmentSummary
		var r store.Run
		e := &es.Environment
		targets := append([]any{&e.ID, &e.Team, &e.Name, &e.Metadata, &e.Revision, &e.AppliedRevision, &e.Status,
			timeCol{&e.CreatedAt}, timeCol{&e.UpdatedAt}}, runJoinTargets(&r)...)
		if err := row.Scan(targets...); err != nil {
			return es, err
		}
		if r.ID != "" {
			es.LastRun = &r
		}
		return es, nil
	}, query, a.vals...)
}

// EnvironmentVersions implements store.Store.
func (s *Store) EnvironmentVersions(ctx context.Context, f store.EnvironmentFilter) ([]store.EnvironmentVersion, error) {
	a := environmentsWhere(f, "")
	return queryAll(ctx, s.pool, "list environment versions", func(row pgx.Row) (store.EnvironmentVersion, error) {
		var v store.EnvironmentVersion
		err := row.Scan(&v.ID, &v.Team, &v.Version)
		return v, err
	}, `SELECT id, team, version FROM environments`+a.clause()+` ORDER BY id`+limitClause(f.Limit), a.vals...)
}

// EnvironmentVersion implements store.Store.
func (s *Store) EnvironmentVersion(ctx context.Context, id string) (int64, error) {
	var v int64
	if err := s.pool.QueryRow(ctx, `SELECT version FROM environments WHERE id = $1`, id).Scan(&v); err != nil {
		return 0, notFound(err, "environment %s", id)
	}
	return v, nil
}

// environmentsWhere is the WHERE clause of f, its columns prefixed with p.
func environmentsWhere(f store.EnvironmentFilter, p string) *args {
	return environmentsWhereIn(&args{}, f, p)
}

// environmentsWhereIn adds f's conditions to a, its columns prefixed with
// p, and returns a.
func environmentsWhereIn(a *args, f store.EnvironmentFilter, p string) *args {
	if f.Team != "" {
		a.add(p+"team = ?", f.Team)
	}
	if f.Status != "" {
		a.add(p+"status = ?", f.Status)
	}
	if len(f.Teams) > 0 {
		a.add(p+"team = ANY(?)", f.Teams)
	}
	if f.After != "" {
		a.add(p+"id > ?", f.After)
	}
	return a
}

// SetAppliedRevision implements store.Store: revision n of env becomes the
// one the environment is applied at. An unknown environment or revision is
// store.ErrNotFound.
func (s *Store) SetAppliedRevision(ctx context.Context, env string, n int) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		if _, err := revision(ctx, tx, env, n); err != nil {
			return err
		}
		now, err := s.now(ctx, tx)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE environments SET applied_revision = $1, updated_at = $2 WHERE id = $3`, n, ts(now), env)
		return affected(tag, err, "set applied revision of environment %s", env)
	})
}

// Revisions implements store.Store: newest first, specs included.
func (s *Store) Revisions(ctx context.Context, env string, f store.RevisionFilter) ([]store.Revision, error) {
	a := &args{}
	a.add("env = ?", env)
	if f.Before > 0 {
		a.add("number < ?", f.Before)
	}
	return queryAll(ctx, s.pool, "list revisions of "+env, scanRevision,
		`SELECT `+revisionColumns+` FROM revisions`+a.clause()+` ORDER BY number DESC`+limitClause(f.Limit), a.vals...)
}

// SetEnvironmentStatus implements store.Store; it also sets UpdatedAt to
// now. A missing environment is store.ErrNotFound.
func (s *Store) SetEnvironmentStatus(ctx context.Context, id string, status store.EnvStatus) error {
	return s.write(ctx, func(tx pgx.Tx) error { return s.setEnvironmentStatus(ctx, tx, id, status) })
}

// setEnvironmentStatus is SetEnvironmentStatus inside tx.
func (s *Store) setEnvironmentStatus(ctx context.Context, tx pgx.Tx, id string, status store.EnvStatus) error {
	now, err := s.now(ctx, tx)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `UPDATE environments SET status = $1, updated_at = $2 WHERE id = $3`, status, ts(now), id)
	return affected(tag, err, "set status of environment %s", id)
}

// DeleteUnappliedEnvironment implements store.Store: one transaction checks
// that the environment was never applied and never ran, then removes it
// (its revisions go with it).
func (s *Store) DeleteUnappliedEnvironment(ctx context.Context, id string) (bool, error) {
	var removed bool
	err := s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM environments WHERE id = $1 AND applied_revision = 0
			AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.env = environments.id)`, id)
		removed = tag.RowsAffected() > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("delete environment %s: %w", id, err)
	}
	return removed, nil
}

// LastGoodRevision implements store.Store.
func (s *Store) LastGoodRevision(ctx context.Context, env string, before int) (store.Revision, error) {
	if before <= 0 {
		before = math.MaxInt32
	}
	r, err := scanRevision(s.pool.QueryRow(ctx, `SELECT `+revisionColumns+` FROM revisions
		WHERE env = $1 AND number < $2 AND verification IN ($3, $4) ORDER BY number DESC LIMIT 1`,
		env, before, store.VerificationSuccessful, store.VerificationAccepted))
	if err != nil {
		return store.Revision{}, notFound(err, "a good revision of %s", env)
	}
	return r, nil
}

// RecordVerification implements store.Store.
func (s *Store) RecordVerification(ctx context.Context, d store.VerificationDecision) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		r, err := revision(ctx, tx, d.Env, d.Revision)
		if err != nil {
			return err
		}
		if d.From != "" && r.Verification != d.From {
			return fmt.Errorf("revision %d of %s: %w (its verification is %q, not %q)", d.Revision, d.Env, store.ErrConflict, r.Verification, d.From)
		}
		if _, err := tx.Exec(ctx, `UPDATE revisions SET verification = $1 WHERE env = $2 AND number = $3`, d.Verification, d.Env, d.Revision); err != nil {
			return fmt.Errorf("record the verification of revision %d of %s: %w", d.Revision, d.Env, err)
		}
		if d.Audit != nil {
			if err := s.appendAudit(ctx, tx, *d.Audit); err != nil {
				return err
			}
		}
		if d.EnvStatus != "" {
			return s.setEnvironmentStatus(ctx, tx, d.Env, d.EnvStatus)
		}
		return nil
	})
}
