package runqueue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// SettingResume prefixes the setting that remembers, by environment ID,
// the kind of a run a shutdown interrupted.
const SettingResume = "resume:"

// Resume queues again the runs a crash left running and those a shutdown
// interrupted, after a graceful stop as after kill -9, as knit.ResumeKind
// says. Call it before Run, once, at start.
func (q *Queue) Resume(ctx context.Context) error {
	runs := map[string]view.Run{}
	crashed, err := knit.NewRecover(q.k).Run(ctx)
	if err != nil {
		return fmt.Errorf("recover interrupted runs: %w", err)
	}
	for _, env := range crashed {
		if runs[env], _, err = knit.NewRecords(q.k).InterruptedRun(ctx, env); err != nil {
			return fmt.Errorf("recover interrupted runs: %w", err)
		}
	}
	stopped, err := knit.NewRecords(q.k).Settings(ctx, SettingResume)
	if err != nil {
		return fmt.Errorf("read runs a shutdown interrupted: %w", err)
	}
	done := map[string]string{}
	for key, kind := range stopped {
		env := strings.TrimPrefix(key, SettingResume)
		done[key] = ""
		if _, ok := runs[env]; ok {
			continue
		}
		if runs[env], err = q.stoppedRun(ctx, env, store.RunKind(kind)); err != nil {
			return fmt.Errorf("read runs a shutdown interrupted: %w", err)
		}
	}
	for env, r := range runs {
		req, ok := knit.ResumeRequest(r, q.actor, "resume after the server restarted")
		if !ok {
			continue
		}
		q.log.Info("resuming an interrupted run", "env", env, "kind", r.Kind, "as", req.Kind)
		if _, err := q.Enqueue(req, env); err != nil {
			q.log.Error("resume", "env", env, "err", err)
		}
	}
	if err := q.k.State().SetSettings(ctx, done); err != nil {
		return fmt.Errorf("forget resumed runs: %w", err)
	}
	return nil
}

// stoppedRun is the run of kind in env a shutdown interrupted: env's last
// interrupted run when it is of that kind (its record says where a
// rollback went), else only its kind.
func (q *Queue) stoppedRun(ctx context.Context, env string, kind store.RunKind) (view.Run, error) {
	r, ok, err := knit.NewRecords(q.k).InterruptedRun(ctx, env)
	if err != nil || (ok && r.Kind == kind) {
		return r, err
	}
	return view.Run{Env: env, Kind: kind}, nil
}

// interruptedByShutdown remembers a run the queue's shutdown interrupted,
// for the next start to resume (as knit.ResumeKind says).
func (q *Queue) interruptedByShutdown(j *Job) {
	if _, ok := knit.ResumeKind(view.Run{Kind: j.Req.Kind}); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.k.State().SetSettings(ctx, map[string]string{SettingResume + j.Env: string(j.Req.Kind)}); err != nil {
		q.log.Error("remember a run to resume", "env", j.Env, "err", err)
	}
}
