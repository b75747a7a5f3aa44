// Package health is knit serve's health scheduler: it re-checks each
// applied environment's health on its file's spec.health.schedule, and
// keeps each outcome as the environment's last health check (knit status,
// the API and the dashboard show it).
package health

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/schedule"
	"knit.dev/knit/internal/view"
)

// Config is how a Scheduler runs.
type Config struct {
	// MinEvery is the shortest "@every" schedule accepted (default one
	// minute), Tick how often due checks are looked for (default 1s).
	MinEvery, Tick time.Duration
	Logger         *slog.Logger
	Clock          clock.Clock
	// Checked, when set, hears of every scheduled check's outcome (tests
	// wait on it).
	Checked func(env string, h view.Health, err error)
}

// due is one environment's schedule and its next due time.
type due struct {
	expr  string
	sched schedule.Schedule
	next  time.Time
}

// Scheduler holds every environment's health schedule, rebuilt for an
// environment when a run of it ends (its applied spec may have changed)
// and for all at start. Checks run one after another on Run's goroutine:
// they take no lock and start no run.
type Scheduler struct {
	k     *knit.Knit
	cfg   Config
	log   *slog.Logger
	clock clock.Clock

	mu   sync.Mutex
	envs map[string]*due
	ctx  context.Context // Run's, nil before it starts
}

// New is a scheduler over k.
func New(k *knit.Knit, cfg Config) *Scheduler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	return &Scheduler{k: k, cfg: cfg, log: cfg.Logger, clock: clock.Or(cfg.Clock), envs: map[string]*due{}}
}

// Run loads every environment's schedule, then checks each as it falls
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
			s.runDue(ctx, s.clock.Now()) // now, not the tick's time: a tick may wait in its channel
		}
	}
}

func (s *Scheduler) loadAll(ctx context.Context) {
	err := knit.NewRecords(s.k).EachEnvironment(ctx, func(id string) { s.Refresh(ctx, id) })
	if err != nil && ctx.Err() == nil {
		s.log.Error("health: list environments", "err", err)
	}
}

// Refresh reads env's schedule from its applied spec: none for an
// environment never applied, torn down, or without spec.health.schedule.
func (s *Scheduler) Refresh(ctx context.Context, id string) {
	d, err := s.scheduleOf(ctx, id)
	if err != nil {
		s.log.Warn("health: no schedule", "env", id, "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d == nil {
		delete(s.envs, id)
		return
	}
	if old := s.envs[id]; old != nil && old.expr == d.expr {
		return // same schedule: keep its due time
	}
	s.envs[id] = d
}

func (s *Scheduler) scheduleOf(ctx context.Context, id string) (*due, error) {
	env, rec, err := s.k.AppliedSpec(ctx, id)
	if err != nil || rec.Status == engine.EnvTornDown || env.Spec.Health == nil || env.Spec.Health.Schedule == "" {
		return nil, err
	}
	var opts []schedule.Option
	if s.cfg.MinEvery > 0 {
		opts = append(opts, schedule.MinEvery(s.cfg.MinEvery))
	}
	sched, err := schedule.Parse(env.Spec.Health.Schedule, opts...)
	if err != nil {
		return nil, err
	}
	return &due{expr: env.Spec.Health.Schedule, sched: sched, next: sched.Next(s.clock.Now().UTC())}, nil
}

// RunEnded refreshes env's schedule after a run of it ended, while Run
// goes; before, Run's start loads every environment's.
func (s *Scheduler) RunEnded(env string) {
	s.mu.Lock()
	ctx := s.ctx
	s.mu.Unlock()
	if ctx != nil && ctx.Err() == nil {
		s.Refresh(ctx, env)
	}
}

// runDue checks the environments that are due, by name; one missed
// while the server was busy is checked once.
func (s *Scheduler) runDue(ctx context.Context, now time.Time) {
	s.mu.Lock()
	var ids []string
	for id, d := range s.envs {
		if !d.next.After(now) {
			ids = append(ids, id)
			for !d.next.IsZero() && !d.next.After(now) {
				d.next = d.sched.Next(d.next)
			}
		}
	}
	s.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		h, err := s.k.Health(ctx, id)
		if err != nil {
			s.log.Error("health: scheduled check", "env", id, "err", err)
		} else if h.Verdict != "Successful" {
			s.log.Warn("health: scheduled check", "env", id, "verdict", h.Verdict)
		}
		if s.cfg.Checked != nil {
			s.cfg.Checked(id, h, err)
		}
	}
}
