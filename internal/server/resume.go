package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// resume queues again, as the kind of run they were, the runs a crash left
// running and those a shutdown interrupted: after a graceful stop as after
// kill -9.
func (s *Server) resume(ctx context.Context) error {
	kinds := map[string]store.RunKind{}
	crashed, err := s.k.Recover(ctx)
	if err != nil {
		return fmt.Errorf("recover interrupted runs: %w", err)
	}
	for _, env := range crashed {
		kind, err := s.k.InterruptedKind(ctx, env)
		if err != nil {
			return fmt.Errorf("recover interrupted runs: %w", err)
		}
		kinds[env] = kind
	}
	stopped, err := s.k.Settings(ctx, settingResume)
	if err != nil {
		return fmt.Errorf("read runs a shutdown interrupted: %w", err)
	}
	done := map[string]string{}
	for key, kind := range stopped {
		env := strings.TrimPrefix(key, settingResume)
		if _, ok := kinds[env]; !ok {
			kinds[env] = store.RunKind(kind)
		}
		done[key] = ""
	}
	for env, kind := range kinds {
		s.log.Info("resuming an interrupted run", "env", env, "kind", kind)
		if _, err := s.queue.enqueue(knit.RunRequest{Kind: kind, EnvRef: env, Actor: s.cfg.Actor, Source: "recovery",
			Reason: "resume after the server restarted"}, env); err != nil {
			s.log.Error("resume", "env", env, "err", err)
		}
	}
	if err := s.k.SetSettings(ctx, done); err != nil {
		return fmt.Errorf("forget resumed runs: %w", err)
	}
	return nil
}

// interruptedByShutdown remembers a run the server's shutdown interrupted,
// for the next start to resume.
func (s *Server) interruptedByShutdown(j *job) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.k.SetSettings(ctx, map[string]string{settingResume + j.env: string(j.req.Kind)}); err != nil {
		s.log.Error("remember a run to resume", "env", j.env, "err", err)
	}
}
