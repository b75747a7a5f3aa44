package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/store"
)

// StartRun implements store.Store: PutRevision (when rev is not nil) and
// CreateRun in one transaction.
func (s *Store) StartRun(ctx context.Context, env store.Environment, rev *store.Revision, r store.Run) (store.Revision, error) {
	if r.ID == "" || r.Env == "" {
		return store.Revision{}, errors.New("create run: ID and Env are required")
	}
	var prepared store.Revision
	if rev != nil {
		var err error
		if prepared, err = store.PrepareRevision(env, *rev); err != nil {
			return store.Revision{}, err
		}
	}
	var out store.Revision
	err := s.write(ctx, func(tx pgx.Tx) error {
		run := r
		if rev != nil {
			var err error
			if out, err = s.putRevision(ctx, tx, env, prepared); err != nil {
				return fmt.Errorf("put revision of %s: %w", env.ID, err)
			}
			run.Revision = out.Number
		}
		return s.createRun(ctx, tx, run)
	})
	if err != nil {
		return store.Revision{}, err
	}
	return out, nil
}
