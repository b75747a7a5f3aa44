package riverqueue

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"knit.dev/knit/internal/store"
)

// Pool is the queue's database, for tests that play a dead replica.
func (q *Queue) Pool() *pgxpool.Pool { return q.pool }

// QueueResume queues the resume of run id as Reap does.
func (q *Queue) QueueResume(id, env string, kind store.RunKind) {
	q.resume(store.Run{ID: id, Env: env, Kind: kind}, "test")
}

// ResumedID is resumedID.
var ResumedID = resumedID
