package sqlite

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/store"
)

// AddNotification implements store.Store.
func (s *Store) AddNotification(ctx context.Context, env string, sinks []string, body []byte) (int64, []int64, error) {
	var seq int64
	ids := make([]int64, len(sinks))
	err := s.write(ctx, func(tx *txn) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO notification_seqs (env, seq) VALUES (?, 1)
			ON CONFLICT (env) DO UPDATE SET seq = seq + 1 RETURNING seq`, env).Scan(&seq)
		if err != nil {
			return err
		}
		now := ts(s.now())
		for i, sink := range sinks {
			res, err := tx.ExecContext(ctx, `INSERT INTO notification_outbox (sink, env, seq, body, created_at)
				VALUES (?, ?, ?, ?, ?)`, sink, env, seq, body, now)
			if err == nil {
				ids[i], err = res.LastInsertId()
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("record notification of %s: %w", env, err)
	}
	return seq, ids, nil
}

// DeleteNotification implements store.Store.
func (s *Store) DeleteNotification(ctx context.Context, id int64) error {
	err := s.write(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM notification_outbox WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete notification %d: %w", id, err)
	}
	return nil
}

// PendingNotifications implements store.Store.
func (s *Store) PendingNotifications(ctx context.Context) ([]store.Notification, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT id, sink, env, seq, body, created_at FROM notification_outbox ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("pending notifications: %w", err)
	}
	defer rows.Close()
	var out []store.Notification
	for rows.Next() {
		var n store.Notification
		if err := rows.Scan(&n.ID, &n.Sink, &n.Env, &n.Seq, &n.Body, timeCol{&n.CreatedAt}); err != nil {
			return nil, fmt.Errorf("pending notifications: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
