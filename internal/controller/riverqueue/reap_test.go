package riverqueue_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"knit.dev/knit/internal/controller/queuetest"
	"knit.dev/knit/internal/controller/riverqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools/pgtest"
	"knit.dev/knit/internal/view"
)

// TestAResumeWhoseReplicaDiedIsResumedAgain is issue 35 item 4: a run's
// replica dies, the replica that took its resume dies too (its River job
// stays running for a client that is gone). The leader cancels that job
// and queues the resume again under the next attempt's ID (the dead one's
// would be a duplicate, silently dropped), whether the first resume had
// recorded the dead run interrupted or not; no job stays running for the
// dead replica.
func TestAResumeWhoseReplicaDiedIsResumedAgain(t *testing.T) {
	pg := pgtest.Start(t)
	for _, c := range []struct {
		name string
		// interrupted: the first resume took the lock over and recorded
		// the dead run interrupted before its replica died.
		interrupted bool
		// kind of the dead run, and the revision it recorded: a rollback's
		// resume goes there again (to its applied revision 1 here).
		kind     store.RunKind
		revision int
	}{{"StillRecordedRunning", false, engine.KindApply, 0}, {"RecordedInterrupted", true, engine.KindApply, 0},
		{"RollbackStillRecordedRunning", false, engine.KindRollback, 1}} {
		t.Run(c.name, func(t *testing.T) {
			h, q := harness(t, pg, queuetest.Setup{Max: 2})
			ctx := context.Background()
			env := applyDirect(t, h.Knit)
			first := knit.NewRunID()
			strand(t, h.Store, store.Run{ID: first, Env: env, Kind: c.kind, Revision: c.revision})
			if c.interrupted {
				if _, err := h.Store.InterruptRuns(ctx, env, func(int) bool { return false }, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			// The first resume, taken by a replica that died before it
			// recorded its run.
			q.QueueResume(view.Run{ID: first, Env: env, Kind: c.kind, Revision: c.revision})
			if tag, err := q.Pool().Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(),
				attempted_by = ARRAY['ghost-replica'] WHERE args->>'run_id' = $1`, riverqueue.ResumedID(first, 0)); err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("play the dead replica's job: %v %v", tag, err)
			}
			h.Start(t)

			again := riverqueue.ResumedID(first, 1)
			waitFor(t, "the second resume to end", func() bool {
				r, err := h.Knit.RunRecord(ctx, again)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				return err == nil && r.Status != store.StatusRunning
			})
			if r, _ := h.Knit.RunRecord(ctx, again); r.Status != store.StatusSucceeded || r.Kind != c.kind || r.Source != knit.SourceRecovery {
				t.Fatalf("the second resume: %+v", r.Run)
			}
			if r, _ := h.Knit.RunRecord(ctx, first); r.Status != store.StatusInterrupted {
				t.Errorf("the dead run: %s, want interrupted", r.Status)
			}
			var stuck int
			if err := q.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'running'
				AND 'ghost-replica' = ANY(attempted_by)`).Scan(&stuck); err != nil || stuck != 0 {
				t.Errorf("%d jobs still running for the dead replica (%v)", stuck, err)
			}
		})
	}
}

// strand records run r running, holding its environment's lock, for a
// process of this host that is gone: a run whose replica died.
func strand(t *testing.T, st store.Store, r store.Run) {
	t.Helper()
	ctx := context.Background()
	dead := deadPID(t)
	host, _ := os.Hostname()
	r.Status, r.Actor, r.PID, r.StartedAt = store.StatusRunning, "t", dead, time.Now()
	if err := st.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcquireLock(ctx, store.Lock{Env: r.Env, RunID: r.ID, Owner: "t", PID: dead, Host: host},
		time.Millisecond, func(store.Lock) bool { return true }); err != nil {
		t.Fatal(err)
	}
}

// one is an environment of one script component applying apply.
func one(t *testing.T, apply string) *spec.Environment {
	t.Helper()
	env, diags := spec.Parse("one.yaml", t.TempDir(), []byte(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: one}
spec:
  teamName: ops
  envName: one
  autoApprove: true
  components:
    - name: app
      type: script
      script: {apply: "`+apply+`"}
`))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return env
}

// applyDirect applies one environment through the library and returns
// its ID.
func applyDirect(t *testing.T, k *knit.Knit) string {
	t.Helper()
	env := one(t, "true")
	if res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Run(context.Background()); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply: %+v %v", res, err)
	}
	return env.ID()
}

func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestARunOutlivesItsJobTimeout: River's job timeout is a lease (so its
// rescuer rescues the jobs of dead replicas), but a live run going three
// leases is neither cut at its job's deadline nor rescued nor cancelled
// as a dead replica's: its replica renews it, and it ends succeeded,
// worked once.
func TestARunOutlivesItsJobTimeout(t *testing.T) {
	pg := pgtest.Start(t)
	release := make(chan struct{})
	var destroys atomic.Int32
	h, q := harness(t, pg, queuetest.Setup{Max: 2, Hook: func(ctx context.Context, op, _ string) error {
		if op != "destroy" {
			return nil
		}
		destroys.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	ctx := context.Background()
	env := applyDirect(t, h.Knit)
	h.Start(t)
	id, err := h.Queue.Enqueue(knit.RunRequest{Kind: engine.KindTeardown, EnvRef: env, Actor: "t"}, env)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the teardown to destroy", func() bool { return destroys.Load() == 1 })
	time.Sleep(3 * lease) // past the job's timeout, River's rescue horizon and Reap's dead-replica bound
	close(release)
	waitFor(t, "the teardown to end", func() bool {
		r, err := h.Knit.RunRecord(ctx, id)
		return err == nil && r.Status != store.StatusRunning
	})
	if r, _ := h.Knit.RunRecord(ctx, id); r.Status != store.StatusSucceeded {
		t.Fatalf("the long teardown: %s %s", r.Status, r.Error)
	}
	var states []string
	waitFor(t, "River to finish the job", func() bool {
		states = nil
		rows, err := q.Pool().Query(ctx, `SELECT state FROM river_job WHERE args->>'run_id' = $1 OR args->>'resumes' = $1`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			states = append(states, s)
		}
		return len(states) != 1 || states[0] != "running"
	})
	if len(states) != 1 || states[0] != "completed" || destroys.Load() != 1 {
		t.Errorf("the long run's jobs: %v, destroys %d; want one completed job, one destroy", states, destroys.Load())
	}
}
