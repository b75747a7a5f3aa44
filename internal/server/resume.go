package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// resume queues again, as the kind of run they were, the runs a crash left
// running and those a shutdown interrupted: after a graceful stop as after
// kill -9.
func (s *Server) resume(ctx context.Context) error {
	st := s.k.Store()
	kinds := map[string]string{}
	crashed, err := s.k.Recover(ctx)
	if err != nil {
		return fmt.Errorf("recover interrupted runs: %w", err)
	}
	for _, env := range crashed {
		kind, err := s.interruptedKind(ctx, env)
		if err != nil {
			return fmt.Errorf("recover interrupted runs: %w", err)
		}
		kinds[env] = kind
	}
	stopped, err := st.Settings(ctx, settingResume)
	if err != nil {
		return fmt.Errorf("read runs a shutdown interrupted: %w", err)
	}
	done := map[string]string{}
	for key, kind := range stopped {
		env := strings.TrimPrefix(key, settingResume)
		if _, ok := kinds[env]; !ok {
			kinds[env] = kind
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
	if err := st.SetSettings(ctx, done); err != nil {
		return fmt.Errorf("forget resumed runs: %w", err)
	}
	return nil
}

// interruptedKind is the kind of env's newest interrupted run: a teardown
// resumes as a teardown, never as an apply.
func (s *Server) interruptedKind(ctx context.Context, env string) (string, error) {
	runs, err := s.k.Store().Runs(ctx, env, store.RunFilter{Status: store.StatusInterrupted, Limit: 1})
	if err != nil {
		return "", err
	}
	if len(runs) == 1 && runs[0].Kind == engine.KindTeardown {
		return engine.KindTeardown, nil
	}
	return engine.KindApply, nil
}

// interruptedByShutdown remembers a run the server's shutdown interrupted,
// for the next start to resume.
func (s *Server) interruptedByShutdown(j *job) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.k.Store().SetSetting(ctx, settingResume+j.env, j.req.Kind); err != nil {
		s.log.Error("remember a run to resume", "env", j.env, "err", err)
	}
}
