package runqueue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// SettingResume prefixes the setting that remembers, by environment ID,
// the kind of a run a shutdown interrupted.
const SettingResume = "resume:"

// Resume queues again the runs a crash left running and those a shutdown
// interrupted, after a graceful stop as after kill -9, as knit.ResumeKind
// says. Call it before Run, once, at start.
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
		req, ok := knit.ResumeRequest(env, kind, q.actor, "resume after the server restarted")
		if !ok {
			continue
		}
		q.log.Info("resuming an interrupted run", "env", env, "kind", kind, "as", req.Kind)
		if _, err := q.Enqueue(req, env); err != nil {
			q.log.Error("resume", "env", env, "err", err)
		}
	}
	if err := q.k.SetSettings(ctx, done); err != nil {
		return fmt.Errorf("forget resumed runs: %w", err)
	}
	return nil
}

// interruptedByShutdown remembers a run the queue's shutdown interrupted,
// for the next start to resume (as knit.ResumeKind says).
func (q *Queue) interruptedByShutdown(j *Job) {
	if _, ok := knit.ResumeKind(j.Req.Kind); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.k.SetSettings(ctx, map[string]string{SettingResume + j.Env: string(j.Req.Kind)}); err != nil {
		q.log.Error("remember a run to resume", "env", j.Env, "err", err)
	}
}
