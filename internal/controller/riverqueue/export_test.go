package riverqueue

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"knit.dev/knit/internal/view"
)

// Pool is the queue's database, for tests that play a dead replica.
func (q *Queue) Pool() *pgxpool.Pool { return q.pool }

// QueueResume queues the resume of run r as Reap does.
func (q *Queue) QueueResume(r view.Run) { q.resume(r, "test") }

// ResumedID is resumedID.
var ResumedID = resumedID
