package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/store"
)

const tokenColumns = `name, hash, role, teams, created_by, created_at, revoked_at`

func scanToken(sc rowScanner) (store.Token, error) {
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
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now()
	}
	return s.write(ctx, func(tx *txn) error {
		old, err := scanToken(tx.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE name = ?`, t.Name))
		switch {
		case err == nil && old.RevokedAt.IsZero():
			return fmt.Errorf("create token %s: %w: a live token has that name (knit token revoke %s first)", t.Name, store.ErrConflict, t.Name)
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, NULL)`,
			t.Name, t.Hash, t.Role, strings.Join(t.Teams, ","), t.CreatedBy, ts(t.CreatedAt))
		if err != nil {
			return fmt.Errorf("create token %s: %w", t.Name, err)
		}
		return nil
	})
}

// TokenByHash implements store.Store.
func (s *Store) TokenByHash(ctx context.Context, hash string) (store.Token, error) {
	t, err := scanToken(s.q.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ? AND revoked_at IS NULL`, hash))
	if err != nil {
		return store.Token{}, notFound(err, "token")
	}
	return t, nil
}

// ListTokens implements store.Store.
func (s *Store) ListTokens(ctx context.Context) ([]store.Token, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	var out []store.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeToken implements store.Store.
func (s *Store) RevokeToken(ctx context.Context, name string, at time.Time) error {
	return s.write(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL`, ts(at), name)
		return affected(res, err, "revoke token %s", name)
	})
}

// Setting implements store.Store.
func (s *Store) Setting(ctx context.Context, key string) (string, error) {
	var v string
	if err := s.q.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v); err != nil {
		return "", notFound(err, "setting %s", key)
	}
	return v, nil
}

// SetSetting implements store.Store.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	return s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		if err != nil {
			return fmt.Errorf("set %s: %w", key, err)
		}
		return nil
	})
}

// Settings queries: by the range of keys a prefix covers, which the
// key's index answers, or (a prefix with no such range: see
// store.PrefixEnd) by a scan.
const (
	settingsRangeQuery = `SELECT key, value FROM settings WHERE key >= ? AND key < ?`
	settingsScanQuery  = `SELECT key, value FROM settings WHERE substr(key, 1, ?) = ?`
)

// Settings implements store.Store.
func (s *Store) Settings(ctx context.Context, prefix string) (map[string]string, error) {
	var rows *sql.Rows
	var err error
	if end, ok := store.PrefixEnd(prefix); ok {
		rows, err = s.q.QueryContext(ctx, settingsRangeQuery, prefix, end)
	} else {
		rows, err = s.q.QueryContext(ctx, settingsScanQuery, len(prefix), prefix)
	}
	if err != nil {
		return nil, fmt.Errorf("settings %s*: %w", prefix, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("settings %s*: %w", prefix, err)
		}
		out[k] = v
	}
	return out, rows.Err()
}

// SetSettings implements store.Store.
func (s *Store) SetSettings(ctx context.Context, kv map[string]string) error {
	return s.write(ctx, func(tx *txn) error {
		for k, v := range kv {
			var err error
			if v == "" {
				_, err = tx.ExecContext(ctx, `DELETE FROM settings WHERE key = ?`, k)
			} else {
				_, err = tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, k, v)
			}
			if err != nil {
				return fmt.Errorf("set %s: %w", k, err)
			}
		}
		return nil
	})
}
