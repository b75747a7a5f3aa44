package runqueue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// SettingResume prefixes the setting that remembers, by environment ID,
// the kind of a run a shutdown interrupted.
const SettingResume = "resume:"

// Resume queues again, as the kind of run they were, the runs a crash left
// running and those a shutdown interrupted: after a graceful stop as after
// kill -9. Call it before Run, once, at start.
func (q *Queue) Resume(ctx context.Context) error {
	kinds := map[string]store.RunKind{}
	crashed, err := q.k.Recover(ctx)
	if err != nil {
		return fmt.Errorf("recover interrupted runs: %w", err)
	}
	for _, env := range crashed {
		kind, err := q.k.InterruptedKind(ctx, env)
		if err != nil {
			return fmt.Errorf("recover interrupted runs: %w", err)
		}
		kinds[env] = kind
	}
	stopped, err := q.k.Settings(ctx, SettingResume)
	if err != nil {
		return fmt.Errorf("read runs a shutdown interrupted: %w", err)
	}
	done := map[string]string{}
	for key, kind := range stopped {
		env := strings.TrimPrefix(key, SettingResume)
		if _, ok := kinds[env]; !ok {
			kinds[env] = store.RunKind(kind)
		}
		done[key] = ""
	}
	for env, kind := range kinds {
		q.log.Info("resuming an interrupted run", "env", env, "kind", kind)
		if _, err := q.Enqueue(knit.RunRequest{Kind: kind, EnvRef: env, Actor: q.actor, Source: "recovery",
			Reason: "resume after the server restarted"}, env); err != nil {
			q.log.Error("resume", "env", env, "err", err)
		}
	}
	if err := q.k.SetSettings(ctx, done); err != nil {
		return fmt.Errorf("forget resumed runs: %w", err)
	}
	return nil
}

// interruptedByShutdown remembers a run the queue's shutdown interrupted,
// for the next start to resume.
func (q *Queue) interruptedByShutdown(j *Job) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kind := j.Req.Kind
	if kind == engine.KindRollback {
		// A rollback recorded the revision it goes back to as applied
		// before it ran: applying the applied revision finishes it (a
		// rollback again would go back further).
		kind = engine.KindApply
	}
	if err := q.k.SetSettings(ctx, map[string]string{SettingResume + j.Env: string(kind)}); err != nil {
		q.log.Error("remember a run to resume", "env", j.Env, "err", err)
	}
}
