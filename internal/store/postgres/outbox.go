package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// AddNotification implements store.Store.
func (s *Store) AddNotification(ctx context.Context, env string, sinks []string, body []byte) (int64, []int64, error) {
	var seq int64
	ids := make([]int64, len(sinks))
	err := s.write(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO notification_seqs AS n (env, seq) VALUES ($1, 1)
			ON CONFLICT (env) DO UPDATE SET seq = n.seq + 1 RETURNING seq`, env).Scan(&seq)
		if err != nil {
			return err
		}
		now, err := s.now(ctx, tx)
		if err != nil {
			return err
		}
		for i, sink := range sinks {
			err := tx.QueryRow(ctx, `INSERT INTO notification_outbox (sink, env, seq, body, created_at)
				VALUES ($1, $2, $3, $4, $5) RETURNING id`, sink, env, seq, body, ts(now)).Scan(&ids[i])
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
	err := s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM notification_outbox WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete notification %d: %w", id, err)
	}
	return nil
}

// PendingNotifications implements store.Store.
func (s *Store) PendingNotifications(ctx context.Context) ([]store.Notification, error) {
	return queryAll(ctx, s.pool, "pending notifications", func(row pgx.Row) (store.Notification, error) {
		var n store.Notification
		err := row.Scan(&n.ID, &n.Sink, &n.Env, &n.Seq, &n.Body, timeCol{&n.CreatedAt})
		return n, err
	}, `SELECT id, sink, env, seq, body, created_at FROM notification_outbox ORDER BY id`)
}
