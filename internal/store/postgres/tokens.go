package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

const tokenColumns = `name, hash, role, teams, created_by, created_at, revoked_at`

func scanToken(sc pgx.Row) (store.Token, error) {
	var t store.Token
	var teams string
	err := sc.Scan(&t.Name, &t.Hash, &t.Role, &teams, &t.CreatedBy, timeCol{&t.CreatedAt}, timeCol{&t.RevokedAt})
	if teams != "" {
		t.Teams = strings.Split(teams, ",")
	}
	return t, err
}

// CreateToken implements store.Store. A revoked token's name may be reused.
func (s *Store) CreateToken(ctx context.Context, t store.Token) error {
	if t.Name == "" || t.Hash == "" || !t.Role.Valid() {
		return fmt.Errorf("create token: a name, a hash and a role (viewer, operator, admin) are required")
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		created, err := s.orNow(ctx, tx, t.CreatedAt)
		if err != nil {
			return err
		}
		old, err := scanToken(tx.QueryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE name = $1`, t.Name))
		switch {
		case err == nil && old.RevokedAt.IsZero():
			return fmt.Errorf("create token %s: %w: a live token has that name (knit token revoke %s first)", t.Name, store.ErrConflict, t.Name)
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, NULL)
			ON CONFLICT (name) DO UPDATE SET hash = excluded.hash, role = excluded.role, teams = excluded.teams,
				created_by = excluded.created_by, created_at = excluded.created_at, revoked_at = NULL`,
			t.Name, t.Hash, t.Role, strings.Join(t.Teams, ","), t.CreatedBy, ts(created))
		if err != nil {
			return fmt.Errorf("create token %s: %w", t.Name, err)
		}
		return nil
	})
}

// TokenByHash implements store.Store.
func (s *Store) TokenByHash(ctx context.Context, hash string) (store.Token, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = $1 AND revoked_at IS NULL`, hash))
	if err != nil {
		return store.Token{}, notFound(err, "token")
	}
	return t, nil
}

// ListTokens implements store.Store.
func (s *Store) ListTokens(ctx context.Context) ([]store.Token, error) {
	return queryAll(ctx, s.pool, "list tokens", scanToken, `SELECT `+tokenColumns+` FROM tokens ORDER BY name`)
}

// RevokeToken implements store.Store.
func (s *Store) RevokeToken(ctx context.Context, name string, at time.Time) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE tokens SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL`, ts(at), name)
		return affected(tag, err, "revoke token %s", name)
	})
}

// Setting implements store.Store.
func (s *Store) Setting(ctx context.Context, key string) (string, error) {
	var v string
	if err := s.pool.QueryRow(ctx, `SELECT value FROM settings WHERE key = $1`, key).Scan(&v); err != nil {
		return "", notFound(err, "setting %s", key)
	}
	return v, nil
}

// SetSetting implements store.Store.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	return s.SetSettings(ctx, map[string]string{key: value})
}

// Settings queries: by the range of keys a prefix covers, compared byte by
// byte as the index settings_key_bytes sorts them, or (a prefix with no
// such range: see store.PrefixEnd) by a scan.
const (
	settingsRangeQuery = `SELECT key, value FROM settings WHERE key COLLATE "C" >= $1 AND key COLLATE "C" < $2`
	settingsScanQuery  = `SELECT key, value FROM settings WHERE starts_with(key, $1)`
)

// Settings implements store.Store.
func (s *Store) Settings(ctx context.Context, prefix string) (map[string]string, error) {
	type kv struct{ k, v string }
	query, args := settingsScanQuery, []any{prefix}
	if end, ok := store.PrefixEnd(prefix); ok {
		query, args = settingsRangeQuery, []any{prefix, end}
	}
	list, err := queryAll(ctx, s.pool, "settings "+prefix+"*", func(row pgx.Row) (kv, error) {
		var p kv
		err := row.Scan(&p.k, &p.v)
		return p, err
	}, query, args...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	for _, p := range list {
		out[p.k] = p.v
	}
	return out, nil
}

// SetSettings implements store.Store.
func (s *Store) SetSettings(ctx context.Context, kv map[string]string) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		for k, v := range kv {
			var err error
			if v == "" {
				_, err = tx.Exec(ctx, `DELETE FROM settings WHERE key = $1`, k)
			} else {
				_, err = tx.Exec(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, k, v)
			}
			if err != nil {
				return fmt.Errorf("set %s: %w", k, err)
			}
		}
		return nil
	})
}
