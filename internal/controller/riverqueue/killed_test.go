package riverqueue_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"knit.dev/knit/internal/controller/queuetest"
	"knit.dev/knit/internal/controller/riverqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools/pgtest"
)

// A replica killed -9 right after its run started, before its first
// event reached the database: nothing ever tells the other replicas that
// the run started (the notice rides on the events). These tests play
// that replica ("ghost-replica": its River job, the run's record and the
// environment's lock, held by a process that is gone).

// TestARunWhoseReplicaDiedBeforeItsFirstEventIsNotQueued: the replica
// that queued the run (it keeps the job in memory, with the caller's
// start callback) and another replica (which reads the job's row) both
// stop answering that the run waits once it is recorded, whatever became
// of the dead replica's job: still running (its replica not yet judged
// dead), re-queued by River's rescuer and not yet worked again, or
// cancelled by the leader. The caller's start callback hears that it
// started when the leader resumes it. (They answered queued, for good on
// the replica that queued it, and its callback was never called: GitOps
// kept such an environment's want in flight.)
func TestARunWhoseReplicaDiedBeforeItsFirstEventIsNotQueued(t *testing.T) {
	pg := pgtest.Start(t)
	for _, c := range []struct {
		name string
		// job is the dead replica's job as left once it recorded its run.
		job string
	}{
		{"JobStillRunning", `state = 'running'`},
		{"JobRescuedByRiver", `state = 'retryable', scheduled_at = now() + interval '1 hour'`},
		{"JobCancelledByTheLeader", `state = 'cancelled', finalized_at = now()`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := pg.DB(t)
			dirA := t.TempDir()
			h, a := replica(t, dsn, dirA, queuetest.Setup{Max: 2})
			_, b := replica(t, dsn, copiedKey(t, dirA), queuetest.Setup{Max: 2})
			env := applyDirect(t, h.Knit)
			id, heard := enqueueHeard(t, a, env)
			ghostTook(t, a, id)
			h.Start(t) // a works and leads: it resumes the dead replica's run
			waitFor(t, "the replica to listen for notices", func() bool { return listening(t, a) })
			ghostRecorded(t, a, h.Store, env, id, c.job)
			hear(t, heard)
			resumed := riverqueue.ResumedID(id, 0)
			waitFor(t, "the resume to end", func() bool { return ended(t, h.Knit, resumed) })
			if r, _ := h.Knit.RunRecord(ctx, id); r.Status != store.StatusInterrupted {
				t.Fatalf("the dead run: %s, want interrupted", r.Status)
			}
			for name, q := range map[string]*riverqueue.Queue{"the replica that queued it": a, "another replica": b} {
				if j, ok := q.Job(id); ok {
					t.Errorf("%s: run %s is a job still queued (%+v); its record says interrupted", name, id, j)
				}
				if env, ok := q.Queued(id); ok {
					t.Errorf("%s: run %s queued for %s", name, id, env)
				}
			}
		})
	}
}

// TestAReplicaHearsOfAStartItWasNotListeningFor: the run's replica died
// after recording it, while the replica that queued it was not listening
// for notices (down, or connecting again): as it starts listening, it
// learns that the run started, with no leader to resume it.
func TestAReplicaHearsOfAStartItWasNotListeningFor(t *testing.T) {
	pg := pgtest.Start(t)
	h, q := harness(t, pg, queuetest.Setup{Max: 2})
	env := applyDirect(t, h.Knit)
	id, heard := enqueueHeard(t, q, env)
	ghostTook(t, q, id)
	ghostRecorded(t, q, h.Store, env, id, `state = 'running'`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }() // no Reap: no leader
	t.Cleanup(func() { cancel(); <-done })
	hear(t, heard)
	if _, ok := q.Job(id); ok {
		t.Errorf("run %s is a job still queued; it is recorded", id)
	}
}

// TestARescuedJobOfARecordedRunIsNotWorkedAgain: River's rescuer
// re-queues a dead replica's job before the leader cancels it (its row
// still looks alive): the replica that works the rescued job finds the
// run recorded and runs nothing. The job's run applies a changed spec; its
// resume applies the environment's applied revision (unchanged), so the
// runner planning or applying anything would be the job run twice.
func TestARescuedJobOfARecordedRunIsNotWorkedAgain(t *testing.T) {
	pg := pgtest.Start(t)
	var ops atomic.Int32
	h, q := harness(t, pg, queuetest.Setup{Max: 2, Hook: func(_ context.Context, op, _ string) error {
		ops.Add(1)
		return nil
	}})
	ctx := context.Background()
	env := applyDirect(t, h.Knit)
	before := ops.Load()
	id, err := q.Enqueue(knit.RunRequest{Kind: engine.KindApply, Env: one(t, "echo changed"), Actor: "t"}, env)
	if err != nil {
		t.Fatal(err)
	}
	// Last renewed an hour ago: past River's rescue horizon (two leases).
	ghostTook(t, q, id)
	ghostRecorded(t, q, h.Store, env, id, `state = 'running', attempted_at = now() - interval '1 hour'`)
	h.Start(t)

	resumed := riverqueue.ResumedID(id, 0)
	var state, errs string
	waitFor(t, "the rescued job to be worked and the resume to end", func() bool {
		if err := q.Pool().QueryRow(ctx, `SELECT state, coalesce(errors::text, '') FROM river_job WHERE args->>'run_id' = $1`,
			id).Scan(&state, &errs); err != nil {
			t.Fatal(err)
		}
		return state == "completed" && ended(t, h.Knit, resumed)
	})
	if !strings.Contains(errs, "rescued") {
		t.Fatalf("the dead replica's job was not rescued by River (errors %s): the test played nothing", errs)
	}
	if n := ops.Load() - before; n != 0 {
		t.Errorf("the runner planned or applied %d times after the replica died, want none (the job ran again)", n)
	}
	if r, _ := h.Knit.RunRecord(ctx, resumed); r.Status != store.StatusSucceeded {
		t.Errorf("the resume: %s %s", r.Status, r.Error)
	}
	if r, _ := h.Knit.RunRecord(ctx, id); r.Status != store.StatusInterrupted {
		t.Errorf("the dead run: %s, want interrupted", r.Status)
	}
}

// enqueueHeard queues an apply of env on q, whose start callback sends
// to heard.
func enqueueHeard(t *testing.T, q *riverqueue.Queue, env string) (id string, heard <-chan error) {
	t.Helper()
	c := make(chan error, 1)
	id, err := q.EnqueueWith(knit.RunRequest{Kind: engine.KindApply, EnvRef: env, Actor: "t"}, env, func(err error) { c <- err })
	if err != nil {
		t.Fatal(err)
	}
	return id, c
}

// hear waits for the start callback: it must say the run started (on
// the dead replica).
func hear(t *testing.T, heard <-chan error) {
	t.Helper()
	select {
	case err := <-heard:
		if err != nil {
			t.Errorf("the start callback: %v, want nil (the run started, on the dead replica)", err)
		}
	case <-time.After(time.Minute): // hang guard
		t.Error("the start callback was never called")
	}
}

// ghostTook plays a replica that took run id's job and was killed -9:
// its process is gone, its row in knit_river_clients still fresh (the
// leader judges a replica dead a lease and a quarter after its last beat;
// here, never).
func ghostTook(t *testing.T, q *riverqueue.Queue, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := q.Pool().Exec(ctx, `INSERT INTO knit_river_clients (id, seen) VALUES ('ghost-replica', now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	if tag, err := q.Pool().Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(),
		attempted_by = ARRAY['ghost-replica'] WHERE args->>'run_id' = $1`, id); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("play the dead replica's job: %v %v", tag, err)
	}
}

// ghostRecorded plays what the dead replica did before it was killed: it
// recorded run id and took env's lock, but none of its events reached the
// database. set is what became of its job since.
func ghostRecorded(t *testing.T, q *riverqueue.Queue, st store.Store, env, id, set string) {
	t.Helper()
	strand(t, st, store.Run{ID: id, Env: env, Kind: engine.KindApply})
	if _, err := q.Pool().Exec(context.Background(), `UPDATE river_job SET `+set+` WHERE args->>'run_id' = $1`, id); err != nil {
		t.Fatalf("play what became of the dead replica's job: %v", err)
	}
}

// listening reports whether q's hub listens for run notices (its
// connection's last statement is its LISTEN).
func listening(t *testing.T, q *riverqueue.Queue) bool {
	var n int
	if err := q.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN knit_runs'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// ended reports whether run id is recorded and over.
func ended(t *testing.T, k *knit.Knit, id string) bool {
	r, err := k.RunRecord(context.Background(), id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil && r.Status != store.StatusRunning
}

// copiedKey is a new data dir holding a copy of dir's key: another
// replica's.
func copiedKey(t *testing.T, dir string) string {
	t.Helper()
	other := t.TempDir()
	key, err := os.ReadFile(filepath.Join(dir, keyfile.Name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, keyfile.Name), key, 0o600); err != nil {
		t.Fatal(err)
	}
	return other
}
