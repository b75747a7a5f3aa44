// Package drift is knit serve's drift scheduler: it keeps every
// environment's scheduled drift checks (its file's drift.schedule, each
// component's own, or the server's interval) and queues each as it falls
// due.
package drift

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"knit.dev/knit/internal/controller/clock"
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

// Config is how a Scheduler runs.
type Config struct {
	// Interval, when set, checks every environment for drift this often
	// unless its file schedules otherwise.
	Interval time.Duration
	// MinEvery is the shortest "@every" schedule accepted (default one
	// minute; tests go lower), Tick how often due checks are looked for
	// (default one second).
	MinEvery, Tick time.Duration
	// Actor names the server in the audit trail of the checks.
	Actor  string
	Logger *slog.Logger
	Clock  clock.Clock
}

// Queue is where the checks go (runqueue.Queue).
type Queue interface {
	Enqueue(req knit.RunRequest, env string) (string, error)
	// PendingFor reports whether a run of env waits in the queue.
	PendingFor(env string) bool
}

// Scheduler holds every environment's scheduled checks, rebuilt for an
// environment whenever a run of it finishes (Refresh: its applied spec may
// have changed) and for all at start, and queues them as they fall due.
type Scheduler struct {
	k     *knit.Knit
	q     Queue
	cfg   Config
	log   *slog.Logger
	clock clock.Clock

	mu     sync.Mutex
	checks map[string][]*driftCheck
	ctx    context.Context // Run's, nil before it starts
}

// New is a scheduler over k, queueing its checks on q.
func New(k *knit.Knit, q Queue, cfg Config) *Scheduler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Actor == "" {
		cfg.Actor = "knit-serve"
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	return &Scheduler{k: k, q: q, cfg: cfg, log: cfg.Logger, clock: clock.Or(cfg.Clock), checks: map[string][]*driftCheck{}}
}

// Run loads every environment's schedule, then queues checks as they fall
// due until ctx ends. It returns nil once stopped.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	s.loadAll(ctx)
	t := s.clock.NewTicker(s.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			s.runDue(s.clock.Now()) // now, not the tick's time: a tick may wait in its channel

		}
	}
}

func (s *Scheduler) loadAll(ctx context.Context) {
	err := knit.NewRecords(s.k).EachEnvironment(ctx, func(id string) { s.Refresh(ctx, id) })
	if err != nil && ctx.Err() == nil {
		s.log.Error("drift: list environments", "err", err)
	}
}

// Refresh recomputes one environment's scheduled checks from its
// applied spec: the file's drift.schedule (or the server's interval) for
// the whole environment, and each component's own schedule.
func (s *Scheduler) Refresh(ctx context.Context, env string) {
	checks, err := s.driftChecks(ctx, env)
	if err != nil {
		s.log.Warn("drift: no schedule", "env", env, "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(checks) == 0 {
		delete(s.checks, env)
		return
	}
	s.checks[env] = checks
}

func (s *Scheduler) driftChecks(ctx context.Context, id string) ([]*driftCheck, error) {
	env, rec, err := s.k.AppliedSpec(ctx, id)
	if err != nil || rec.Status == engine.EnvTornDown || engine.Driftable(env) != nil {
		return nil, err
	}
	now := s.clock.Now().UTC()
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
		if s.cfg.MinEvery > 0 {
			opts = append(opts, schedule.MinEvery(s.cfg.MinEvery))
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
	case s.cfg.Interval > 0:
		if err := add("@every "+s.cfg.Interval.String(), nil); err != nil {
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

// RunEnded refreshes env's checks after a run of it ended (its applied
// spec may have changed), while Run goes; before, Run's start loads every
// environment's.
func (s *Scheduler) RunEnded(env string) {
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	if ctx != nil && ctx.Err() == nil {
		s.Refresh(ctx, env)
	}
}

// runDue queues the checks that are due, oldest first.
func (s *Scheduler) runDue(now time.Time) {
	s.mu.Lock()
	var due []*driftCheck
	for _, checks := range s.checks {
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
	s.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].env < due[j].env })
	for _, c := range due {
		if s.q.PendingFor(c.env) {
			continue // a run of it is already waiting: it will see the drift soon enough
		}
		if _, err := s.q.Enqueue(knit.RunRequest{Kind: engine.KindDrift, EnvRef: c.env, Components: c.components,
			Reconcile: true, Policies: c.policies, Actor: s.cfg.Actor, Source: "schedule", Reason: "scheduled drift check"}, c.env); err != nil {
			s.log.Error("drift: queue the check", "env", c.env, "err", err)
		}
	}
}
