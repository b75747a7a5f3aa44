package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

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
	if rev.CreatedAt.IsZero() {
		rev.CreatedAt = s.now()
	}
	var out store.Revision
	err = s.write(ctx, func(tx *txn) error {
		out, err = putRevision(ctx, tx, env, rev)
		return err
	})
	if err != nil {
		return store.Revision{}, fmt.Errorf("put revision of %s: %w", env.ID, err)
	}
	return out, nil
}

// putRevision is PutRevision's write in tx, of a prepared rev with its
// creation time.
func putRevision(ctx context.Context, tx *txn, env store.Environment, rev store.Revision) (store.Revision, error) {
	latest, err := revision(ctx, tx, env.ID, 0)
	switch {
	case err == nil && latest.Hash == rev.Hash:
		return latest, nil
	case err == nil:
		rev.Number = latest.Number + 1
	case errors.Is(err, store.ErrNotFound):
		rev.Number = 1
	default:
		return store.Revision{}, err
	}
	if err := upsertEnvironment(ctx, tx, env, rev); err != nil {
		return store.Revision{}, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO revisions (`+revisionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, rev.Env, rev.Number, rev.Hash, rev.Source, rev.Spec, ts(rev.CreatedAt),
		rev.Root, rev.Commit, rev.Author, rev.Message, rev.Errors, orEmpty(rev.File), rev.Verification)
	if err != nil {
		return store.Revision{}, fmt.Errorf("insert revision: %w", err)
	}
	return rev, nil
}

// upsertEnvironment creates env at rev or points it at rev, keeping the
// stored team, name and metadata name where env leaves them empty.
func upsertEnvironment(ctx context.Context, tx *txn, env store.Environment, rev store.Revision) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO environments (id, team, name, metadata, revision, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET
			team = COALESCE(NULLIF(excluded.team, ''), team),
			name = COALESCE(NULLIF(excluded.name, ''), name),
			metadata = COALESCE(NULLIF(excluded.metadata, ''), metadata),
			revision = excluded.revision, updated_at = excluded.updated_at`,
		env.ID, env.Team, env.Name, env.Metadata, rev.Number, env.Status, ts(rev.CreatedAt), ts(rev.CreatedAt))
	if err != nil {
		return fmt.Errorf("upsert environment: %w", err)
	}
	return nil
}

// Revision implements store.Store; a missing revision is store.ErrNotFound.
func (s *Store) Revision(ctx context.Context, env string, n int) (store.Revision, error) {
	return revision(ctx, s.q, env, n)
}

// querier is what *sql.DB and *txn have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// rowQuerier is what revision reads with: the statement cache or a
// transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func revision(ctx context.Context, q rowQuerier, env string, n int) (store.Revision, error) {
	query := `SELECT ` + revisionColumns + ` FROM revisions WHERE env = ? AND number = ?`
	args := []any{env, n}
	if n == 0 {
		query = `SELECT ` + revisionColumns + ` FROM revisions WHERE env = ? ORDER BY number DESC LIMIT 1`
		args = args[:1]
	}
	r, err := scanRevision(q.QueryRowContext(ctx, query, args...))
	if err != nil {
		if n == 0 {
			return store.Revision{}, notFound(err, "latest revision of %s", env)
		}
		return store.Revision{}, notFound(err, "revision %d of %s", n, env)
	}
	return r, nil
}

const revisionColumns = `env, number, hash, source, spec, created_at, root, commit_hash, author, message, errors, file, verification`

func scanRevision(sc rowScanner) (store.Revision, error) {
	var r store.Revision
	err := sc.Scan(&r.Env, &r.Number, &r.Hash, &r.Source, &r.Spec, timeCol{&r.CreatedAt}, &r.Root, &r.Commit, &r.Author, &r.Message, &r.Errors, &r.File, &r.Verification)
	return r, err
}

const environmentColumns = `id, team, name, metadata, revision, applied_revision, status, created_at, updated_at`

func scanEnvironment(sc rowScanner) (store.Environment, error) {
	var e store.Environment
	err := sc.Scan(&e.ID, &e.Team, &e.Name, &e.Metadata, &e.Revision, &e.AppliedRevision, &e.Status, timeCol{&e.CreatedAt}, timeCol{&e.UpdatedAt})
	return e, err
}

// Environment implements store.Store; a missing one is store.ErrNotFound.
func (s *Store) Environment(ctx context.Context, id string) (store.Environment, error) {
	row := s.q.QueryRowContext(ctx, `SELECT `+environmentColumns+` FROM environments WHERE id = ?`, id)
	e, err := scanEnvironment(row)
	if err != nil {
		return store.Environment{}, notFound(err, "environment %s", id)
	}
	return e, nil
}

// Environments implements store.Store, ordered by ID.
func (s *Store) Environments(ctx context.Context, f store.EnvironmentFilter) ([]store.Environment, error) {
	query, args := environmentsQuery(f)
	return queryAll(ctx, s.q, "list environments", scanEnvironment, query, args...)
}

// EnvironmentSummaries implements store.Store: the page of Environments,
// each joined with its newest run, in one query.
func (s *Store) EnvironmentSummaries(ctx context.Context, f store.EnvironmentFilter) ([]store.EnvironmentSummary, error) {
	query, args := environmentSummariesQuery(f)
	rows, err := s.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	defer rows.Close()
	var out []store.EnvironmentSummary
	for rows.Next() {
		var es store.EnvironmentSummary
		var r store.Run
		e := &es.Environment
		err := rows.Scan(append([]any{&e.ID, &e.Team, &e.Name, &e.Metadata, &e.Revision, &e.AppliedRevision, &e.Status,
			timeCol{&e.CreatedAt}, timeCol{&e.UpdatedAt}}, joinedRunInto(&r)...)...)
		if err != nil {
			return nil, fmt.Errorf("list environments: %w", err)
		}
		if r.ID != "" {
			es.LastRun = &r
		}
		out = append(out, es)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	return out, nil
}

// environmentSummariesQuery builds the query for EnvironmentSummaries.
func environmentSummariesQuery(f store.EnvironmentFilter) (string, []any) {
	where, args := environmentsWhere(f, "e.")
	return `SELECT e.id, e.team, e.name, e.metadata, e.revision, e.applied_revision, e.status, e.created_at, e.updated_at,
		` + joinedRun("r") + `
		FROM environments e
		LEFT JOIN runs r ON r.rowid = (SELECT rowid FROM runs WHERE env = e.id AND source <> 'preview' ORDER BY started_at DESC, rowid DESC LIMIT 1)` +
		where + ` ORDER BY e.id` + limitClause(f.Limit), args
}

// EnvironmentVersions implements store.Store.
func (s *Store) EnvironmentVersions(ctx context.Context, f store.EnvironmentFilter) ([]store.EnvironmentVersion, error) {
	where, args := environmentsWhere(f, "")
	rows, err := s.q.QueryContext(ctx, `SELECT id, team, version FROM environments`+where+` ORDER BY id`+limitClause(f.Limit), args...)
	if err != nil {
		return nil, fmt.Errorf("list environment versions: %w", err)
	}
	defer rows.Close()
	var out []store.EnvironmentVersion
	for rows.Next() {
		var v store.EnvironmentVersion
		if err := rows.Scan(&v.ID, &v.Team, &v.Version); err != nil {
			return nil, fmt.Errorf("list environment versions: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list environment versions: %w", err)
	}
	return out, nil
}

// EnvironmentVersion implements store.Store.
func (s *Store) EnvironmentVersion(ctx context.Context, id string) (int64, error) {
	var v int64
	if err := s.q.QueryRowContext(ctx, `SELECT version FROM environments WHERE id = ?`, id).Scan(&v); err != nil {
		return 0, notFound(err, "environment %s", id)
	}
	return v, nil
}

// environmentsQuery builds the query for Environments. Indexes on team,
// status and both (each followed by id) keep a filtered page from scanning
// every environment.
func environmentsQuery(f store.EnvironmentFilter) (string, []any) {
	where, args := environmentsWhere(f, "")
	return `SELECT ` + environmentColumns + ` FROM environments` + where + ` ORDER BY id` + limitClause(f.Limit), args
}

// environmentsWhere is the WHERE clause of f (empty when f filters
// nothing), its columns prefixed with p.
func environmentsWhere(f store.EnvironmentFilter, p string) (string, []any) {
	var where []string
	var args []any
	add := func(cond string, arg any) { where, args = append(where, p+cond), append(args, arg) }
	if f.Team != "" {
		add("team = ?", f.Team)
	}
	if f.Status != "" {
		add("status = ?", f.Status)
	}
	if len(f.Teams) > 0 {
		cond, targs := teamsIn(p+"team", f.Teams)
		where, args = append(where, cond), append(args, targs...)
	}
	if f.After != "" {
		add("id > ?", f.After)
	}
	if len(where) == 0 {
		return "", nil
	}
	return ` WHERE ` + strings.Join(where, " AND "), args
}

// SetAppliedRevision implements store.Store: revision n of env becomes the
// one the environment is applied at. An unknown environment or revision is
// store.ErrNotFound.
func (s *Store) SetAppliedRevision(ctx context.Context, env string, n int) error {
	return s.write(ctx, func(tx *txn) error {
		if _, err := revision(ctx, tx, env, n); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE environments SET applied_revision = ?, updated_at = ? WHERE id = ?`, n, ts(s.now()), env)
		return affected(res, err, "set applied revision of environment %s", env)
	})
}

// Revisions implements store.Store: newest first, specs included.
func (s *Store) Revisions(ctx context.Context, env string, f store.RevisionFilter) ([]store.Revision, error) {
	query := `SELECT ` + revisionColumns + ` FROM revisions WHERE env = ?`
	args := []any{env}
	if f.Before > 0 {
		query += ` AND number < ?`
		args = append(args, f.Before)
	}
	rows, err := s.q.QueryContext(ctx, query+` ORDER BY number DESC`+limitClause(f.Limit), args...)
	if err != nil {
		return nil, fmt.Errorf("list revisions of %s: %w", env, err)
	}
	defer rows.Close()
	var revs []store.Revision
	for rows.Next() {
		r, err := scanRevision(rows)
		if err != nil {
			return nil, fmt.Errorf("list revisions of %s: %w", env, err)
		}
		revs = append(revs, r)
	}
	return revs, rows.Err()
}

// SetEnvironmentStatus implements store.Store; it also sets UpdatedAt to
// now. A missing environment is store.ErrNotFound.
func (s *Store) SetEnvironmentStatus(ctx context.Context, id string, status store.EnvStatus) error {
	return s.write(ctx, func(tx *txn) error { return s.setEnvironmentStatus(ctx, tx, id, status) })
}

// setEnvironmentStatus is SetEnvironmentStatus inside tx.
func (s *Store) setEnvironmentStatus(ctx context.Context, tx *txn, id string, status store.EnvStatus) error {
	res, err := tx.ExecContext(ctx, `UPDATE environments SET status = ?, updated_at = ? WHERE id = ?`, status, ts(s.now()), id)
	return affected(res, err, "set status of environment %s", id)
}

// affected checks that an UPDATE or DELETE touched a row, returning
// store.ErrNotFound if it did not.
func affected(res sql.Result, err error, what string, args ...any) error {
	if err != nil {
		return fmt.Errorf("%s: %w", fmt.Sprintf(what, args...), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", fmt.Sprintf(what, args...), err)
	}
	if n == 0 {
		return notFound(sql.ErrNoRows, what, args...)
	}
	return nil
}

// DeleteUnappliedEnvironment implements store.Store: one transaction checks
// that the environment was never applied and never ran, then removes it
// (its revisions go with it).
func (s *Store) DeleteUnappliedEnvironment(ctx context.Context, id string) (bool, error) {
	var removed bool
	err := s.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM environments WHERE id = ? AND applied_revision = 0
			AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.env = environments.id)`, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		removed = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("delete environment %s: %w", id, err)
	}
	return removed, nil
}

// orEmpty is b, or an empty blob for nil (the column is NOT NULL).
func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// rowScanner is what *sql.Row and *sql.Rows have in common.
type rowScanner interface{ Scan(...any) error }

// queryAll runs query and scans every row with scan; what names the list
// in errors ("list approvals: …").
func queryAll[T any](ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, what string, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// LastGoodRevision implements store.Store.
func (s *Store) LastGoodRevision(ctx context.Context, env string, before int) (store.Revision, error) {
	if before <= 0 {
		before = math.MaxInt32
	}
	r, err := scanRevision(s.q.QueryRowContext(ctx, `SELECT `+revisionColumns+` FROM revisions
		WHERE env = ? AND number < ? AND verification IN (?, ?) ORDER BY number DESC LIMIT 1`,
		env, before, store.VerificationSuccessful, store.VerificationAccepted))
	if err != nil {
		return store.Revision{}, notFound(err, "a good revision of %s", env)
	}
	return r, nil
}

// RecordVerification implements store.Store.
func (s *Store) RecordVerification(ctx context.Context, d store.VerificationDecision) error {
	return s.write(ctx, func(tx *txn) error {
		r, err := revision(ctx, tx, d.Env, d.Revision)
		if err != nil {
			return err
		}
		if d.From != "" && r.Verification != d.From {
			return fmt.Errorf("revision %d of %s: %w (its verification is %q, not %q)", d.Revision, d.Env, store.ErrConflict, r.Verification, d.From)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE revisions SET verification = ? WHERE env = ? AND number = ?`, d.Verification, d.Env, d.Revision); err != nil {
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
