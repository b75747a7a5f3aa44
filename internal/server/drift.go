package server

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/schedule"
	"knit.dev/knit/internal/spec"
)

// driftCheck is one scheduled drift check: of a whole environment, or of
// components with a schedule of their own (CloudKnit's cronSchedule).
type driftCheck struct {
	env        string
	components []string // nil: every component
	policies   map[string]string
	sched      schedule.Schedule
	base       time.Time // the schedule's own due time
	next       time.Time // base plus this check's jitter
}

// drifts holds every environment's scheduled checks, rebuilt for an
// environment whenever a run of it finishes (its applied spec may have
// changed) and for all at start.
type drifts struct {
	mu     sync.Mutex
	checks map[string][]*driftCheck
}

// driftLoop runs scheduled drift checks as they fall due, through the queue.
func (s *Server) driftLoop(ctx context.Context) {
	s.loadAllDriftSchedules(ctx)
	tick := s.cfg.DriftTick
	if tick <= 0 {
		tick = time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.runDueDriftChecks(now)
		}
	}
}

func (s *Server) loadAllDriftSchedules(ctx context.Context) {
	after := ""
	for ctx.Err() == nil {
		page, err := s.k.Environments(ctx, knit.EnvironmentFilter{After: after, Limit: 1000})
		if err != nil {
			s.log.Error("drift: list environments", "err", err)
			return
		}
		for _, e := range page.Items {
			s.refreshDrift(ctx, e.ID)
		}
		if page.Next == "" {
			return
		}
		after = page.Next
	}
}

// refreshDrift recomputes one environment's scheduled checks from its
// applied spec: the file's drift.schedule (or the server's interval) for
// the whole environment, and each component's own schedule.
func (s *Server) refreshDrift(ctx context.Context, env string) {
	checks, err := s.driftChecks(ctx, env)
	if err != nil {
		s.log.Warn("drift: no schedule", "env", env, "err", err)
	}
	s.drifts.mu.Lock()
	defer s.drifts.mu.Unlock()
	if s.drifts.checks == nil {
		s.drifts.checks = map[string][]*driftCheck{}
	}
	if len(checks) == 0 {
		delete(s.drifts.checks, env)
		return
	}
	s.drifts.checks[env] = checks
}

func (s *Server) driftChecks(ctx context.Context, id string) ([]*driftCheck, error) {
	env, rec, err := s.k.AppliedSpec(ctx, id)
	if err != nil || rec.Status == engine.EnvTornDown || engine.Driftable(env) != nil {
		return nil, err
	}
	now := time.Now().UTC()
	var checks []*driftCheck
	envPolicy := ""
	envSched := ""
	if d := env.Spec.Drift; d != nil {
		envPolicy, envSched = d.Policy, d.Schedule
	}
	policies := map[string]string{}
	var own []*spec.Component
	for _, c := range env.Spec.Components {
		p := envPolicy
		if c.Drift != nil && c.Drift.Policy != "" {
			p = c.Drift.Policy
		}
		if p != "" {
			policies[c.Name] = p
		}
		if c.CronSchedule != "" || (c.Drift != nil && c.Drift.Schedule != "") {
			own = append(own, c)
		}
	}
	add := func(expr string, comps []string) error {
		var opts []schedule.Option
		if s.cfg.MinDriftEvery > 0 {
			opts = append(opts, schedule.MinEvery(s.cfg.MinDriftEvery))
		}
		sched, err := schedule.Parse(expr, opts...)
		if err != nil {
			return err
		}
		c := &driftCheck{env: id, components: comps, policies: policies, sched: sched, base: sched.Next(now)}
		c.next = c.base.Add(c.jitter())
		checks = append(checks, c)
		return nil
	}
	switch {
	case envSched != "":
		if err := add(envSched, nil); err != nil {
			return nil, err
		}
	case s.cfg.DriftInterval > 0:
		if err := add("@every "+s.cfg.DriftInterval.String(), nil); err != nil {
			return nil, err
		}
	}
	for _, c := range own {
		expr := c.CronSchedule
		if c.Drift != nil && c.Drift.Schedule != "" {
			expr = c.Drift.Schedule
		}
		if err := add(expr, []string{c.Name}); err != nil {
			return checks, err
		}
	}
	return checks, nil
}

// jitter delays a check by an amount that depends on what it checks: a
// tenth of its period, at most five minutes, so a hundred environments on
// one schedule do not start in the same second. It is added to the
// schedule's own due times, never accumulated.
func (c *driftCheck) jitter() time.Duration {
	period := c.sched.Next(c.base).Sub(c.base)
	return schedule.Jitter(c.env+"|"+strings.Join(c.components, ","), min(period/10, 5*time.Minute))
}

// runDueDriftChecks queues the checks that are due, oldest first.
func (s *Server) runDueDriftChecks(now time.Time) {
	s.drifts.mu.Lock()
	var due []*driftCheck
	for _, checks := range s.drifts.checks {
		for _, c := range checks {
			if !c.next.After(now) {
				due = append(due, c)
				for !c.base.After(now) { // a check missed while the server was busy runs once
					c.base = c.sched.Next(c.base)
				}
				c.next = c.base.Add(c.jitter())
			}
		}
	}
	s.drifts.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].env < due[j].env })
	for _, c := range due {
		if s.queue.pendingFor(c.env) {
			continue // a run of it is already waiting: it will see the drift soon enough
		}
		if _, err := s.queue.enqueue(knit.RunRequest{Kind: engine.KindDrift, EnvRef: c.env, Components: c.components,
			Reconcile: true, Policies: c.policies, Actor: s.cfg.Actor, Source: "schedule", Reason: "scheduled drift check"}, c.env); err != nil {
			s.log.Error("drift: queue the check", "env", c.env, "err", err)
		}
	}
}
