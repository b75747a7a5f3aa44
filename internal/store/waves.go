package store

import (
	"context"
	"time"
)

// WaveRollout is the state of an environment set's rollout in waves (one row
// a set, the newest rollout of its template: a newer one replaces it). The
// store keeps State as the controller wrote it (JSON: which environments
// are in which wave, and where each stands); Version orders writes.
type WaveRollout struct {
	// ID is the set's team/name.
	ID        string    `json:"id"`
	Team      string    `json:"team"`
	Version   int64     `json:"version"`
	State     []byte    `json:"state"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// WaveRollouts is the part of the Store that keeps sets' rollouts in waves.
type WaveRollouts interface {
	// WaveRollout is the rollout of set id (ErrNotFound: none).
	WaveRollout(ctx context.Context, id string) (WaveRollout, error)
	// ListWaveRollouts lists the rollouts of team (every team's when empty), by ID.
	ListWaveRollouts(ctx context.Context, team string) ([]WaveRollout, error)
	// PutWaveRollout records r, provided the stored version is still
	// r.Version (0: none yet), else ErrConflict; it is stored as
	// r.Version+1, with audit, when non-nil, in the same transaction.
	PutWaveRollout(ctx context.Context, r WaveRollout, audit *AuditEvent) error
}
