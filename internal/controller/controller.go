// Package controller runs knit serve's controllers as one: the fair run
// queue (runqueue), the GitOps reconciler (gitops), the drift scheduler
// (drift), the expiry of ephemeral environments (ttl), the health
// scheduler (health), the promotion pipelines (promotion), and the notifications of what they do. knit serve
// (internal/cli/serve.go) builds a Set, hands its Queue and Git to the
// HTTP server, and runs it beside the server; the server only routes,
// authenticates and encodes.
package controller

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/controller/drift"
	"knit.dev/knit/internal/controller/gitops"
	"knit.dev/knit/internal/controller/health"
	"knit.dev/knit/internal/controller/promotion"
	"knit.dev/knit/internal/controller/rollout"
	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/controller/ttl"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
)

// Config is how the controllers run.
type Config struct {
	// MaxConcurrentRuns bounds runs at once across environments (default 4).
	MaxConcurrentRuns int
	// Actor names the server in the audit trail for what it starts itself
	// (default knit-serve).
	Actor  string
	Logger *slog.Logger
	// Clock is the controllers' time (default: the real clock).
	Clock clock.Clock
	// Git, when set, switches on GitOps (its Actor, Logger, Clock and
	// Notify are this Config's).
	Git *gitops.Config
	// Drift is the drift scheduler's (its Actor, Logger and Clock are this
	// Config's).
	Drift drift.Config
	// TTL is the expiry controller's (its Actor, Logger and Clock are this
	// Config's).
	TTL ttl.Config
	// Health is the health scheduler's (its Logger and Clock are this
	// Config's).
	Health health.Config
	// Pipelines, when set, switches on the promotion controller (its
	// Actor, Logger and Clock are this Config's).
	Pipelines *promotion.Config
	// Notify are the sinks told about failed runs, drift, approvals needed,
	// teardowns, successes and invalid environment files.
	Notify []notify.Sink
	// RunURL, when set, is the dashboard page of a run, for the links
	// notifications carry.
	RunURL func(id string) string
	// Queue, when set, is the run queue (riverqueue's, when replicas
	// share a store); default an in-process runqueue.Queue.
	Queue Queue
	// Leader, when set, runs the singletons (GitOps, drift, expiry,
	// health, LeaderTasks) only while this replica leads; default: they
	// always run.
	Leader Leader
	// LeaderTasks run beside the singletons while this replica leads.
	LeaderTasks []func(context.Context) error
}

// Queue is a run queue as the controllers and the server use it.
type Queue interface {
	Run(ctx context.Context) error
	Resume(ctx context.Context) error
	Enqueue(req knit.RunRequest, env string) (string, error)
	EnqueueWith(req knit.RunRequest, env string, onStart func(error)) (string, error)
	PendingFor(env string) bool
	Queued(id string) (env string, ok bool)
	Job(id string) (*runqueue.Job, bool)
	Cancel(id string) error
	Depth() (queued, running int)
	OnFinish(fn func(runqueue.Outcome))
}

// Leader elects the replica that runs the singletons (leader.Elector).
type Leader interface {
	Run(ctx context.Context, lead func(ctx context.Context)) error
}

// endsElsewhere is a queue whose runs may end in another replica: the
// schedulers here hear of those ends too.
type endsElsewhere interface {
	OnEnded(fn func(env string))
}

// Set is the controllers of one knit serve.
type Set struct {
	Queue Queue
	// Git is the GitOps reconciler (nil: GitOps off).
	Git   *gitops.Reconciler
	Drift *drift.Scheduler
	// TTL tears expired ephemeral environments down.
	TTL *ttl.Controller
	// Health re-checks environments' health on spec.health.schedule.
	Health *health.Scheduler
	// Promotion moves releases through pipelines (nil: none configured).
	Promotion *promotion.Controller
	// Rollout carries rollouts by an environment's strategy on.
	Rollout *rollout.Driver

	k      *knit.Knit
	log    *slog.Logger
	actor  string
	notify *notify.Dispatcher
	runURL func(string) string
	leader Leader
	tasks  []func(context.Context) error
}

// New builds the controllers over k. Nothing runs until Run. Bad
// notification sinks are an error.
func New(k *knit.Knit, cfg Config) (*Set, error) {
	if cfg.Actor == "" {
		cfg.Actor = "knit-serve"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d, err := notify.New(cfg.Notify, notify.Options{Logger: cfg.Logger, Outbox: k.Outbox()})
	if err != nil {
		return nil, err
	}
	s := &Set{k: k, log: cfg.Logger, actor: cfg.Actor, notify: d, runURL: cfg.RunURL, leader: cfg.Leader, tasks: cfg.LeaderTasks, Queue: cfg.Queue}
	if s.Queue == nil {
		s.Queue = runqueue.New(k, runqueue.Config{Max: cfg.MaxConcurrentRuns, Actor: cfg.Actor, Logger: cfg.Logger, Clock: cfg.Clock})
	}
	dc := cfg.Drift
	dc.Actor, dc.Logger, dc.Clock = cfg.Actor, cfg.Logger, cfg.Clock
	s.Drift = drift.New(k, s.Queue, dc)
	tc := cfg.TTL
	tc.Actor, tc.Logger, tc.Clock = cfg.Actor, cfg.Logger, cfg.Clock
	s.TTL = ttl.New(k, s.Queue, d, tc)
	hc := cfg.Health
	hc.Logger, hc.Clock = cfg.Logger, cfg.Clock
	s.Health = health.New(k, hc)
	if cfg.Git != nil {
		gc := *cfg.Git
		gc.Actor, gc.Logger, gc.Clock, gc.Notify = cfg.Actor, cfg.Logger, cfg.Clock, d
		s.Git = gitops.New(k, s.Queue, gc)
	}
	if cfg.Pipelines != nil {
		pc := *cfg.Pipelines
		pc.Actor, pc.Logger, pc.Clock, pc.Notify = cfg.Actor, cfg.Logger, cfg.Clock, d
		s.Promotion = promotion.New(k, s.Queue, pc)
	}
	s.Rollout = rollout.New(k, s.Queue, cfg.Clock, cfg.Logger)
	knit.SetRolloutNotify(k, s.notifyRollout)
	s.Queue.OnFinish(s.runEnded)
	if q, ok := s.Queue.(endsElsewhere); ok {
		q.OnEnded(s.schedulesFollow)
	}
	return s, nil
}

// notifyRollout tells a rollout's audit entry (knit.SetRolloutNotify),
// with its run's link.
func (s *Set) notifyRollout(ev notify.Event) {
	if s.runURL != nil && ev.RunID != "" {
		ev.URL = s.runURL(ev.RunID)
	}
	s.notify.Notify(ev)
}

// schedulesFollow has the schedules follow the end of a run of env,
// wherever it ran (their leader may not be the replica that ran it).
func (s *Set) schedulesFollow(env string) {
	s.Drift.RunEnded(env)
	s.TTL.RunEnded(env)
	s.Health.RunEnded(env)
	if s.Git != nil {
		s.Git.WakeWaves() // a set's rollout in waves may move on
	}
}

// runEnded carries out what the library decides follows a run's end
// (knit.After): the notices, the pipeline's record of a rollback, the
// rollback a failed rollout asks for (in its environment's turn in the
// queue); and the schedules follow the environment's new spec.
func (s *Set) runEnded(o runqueue.Outcome) {
	if o.Refused != nil {
		return
	}
	if _, elsewhere := s.Queue.(endsElsewhere); !elsewhere {
		s.schedulesFollow(o.Job.Env)
	}
	s.Rollout.RunEnded(o.Job.Req, o.Result)
	after := knit.After(o.Job.Req, o.Result, s.actor)
	for _, ev := range after.Notices {
		if s.runURL != nil {
			ev.URL = s.runURL(ev.RunID)
		}
		s.notify.Notify(ev)
	}
	if after.Downstream {
		s.consumersFollow(o)
	}
	if after.StageRollback && s.Promotion != nil {
		if err := s.Promotion.RollbackEnded(context.Background(), o.Job.Env, o.Job.ID); err != nil {
			s.log.Error("record a rollback in its pipeline", "env", o.Job.Env, "run", o.Job.ID, "err", err)
		}
	}
	if after.Rollback == nil {
		return
	}
	id, err := s.Queue.Enqueue(*after.Rollback, o.Job.Env)
	if err != nil {
		s.log.Error("start the rollback of a failed rollout", "env", o.Job.Env, "err", err)
	} else if s.Promotion != nil { // a pipeline stage's history names it
		if err := s.Promotion.RolledBack(context.Background(), o.Job.ID, id); err != nil {
			s.log.Error("record the rollback in its pipeline", "env", o.Job.Env, "run", id, "err", err)
		}
	}
}

// consumersFollow queues an apply of each environment that reads outputs
// o's run changed (knit.Consumers.Runs), in its turn in the queue.
func (s *Set) consumersFollow(o runqueue.Outcome) {
	reqs, err := knit.NewConsumers(s.k).Runs(context.Background(), o.Job.Env, o.Job.ID, s.actor)
	if err != nil {
		s.log.Error("list the consumers of changed exports", "env", o.Job.Env, "err", err)
	}
	for _, req := range reqs {
		if _, err := s.Queue.Enqueue(req, req.EnvRef); err != nil {
			s.log.Error("start a consumer's apply after its producer changed", "env", req.EnvRef, "producer", o.Job.Env, "err", err)
		}
	}
}

// Resume queues again the runs a crash or a shutdown interrupted (see
// runqueue.Queue.Resume). Call it once, before Run.
func (s *Set) Resume(ctx context.Context) error {
	if err := s.Queue.Resume(ctx); err != nil {
		return err
	}
	return s.Rollout.Resume(ctx)
}

// Run runs every controller until ctx ends and waits for all of them (the
// queue for the runs ctx's end interrupts), then flushes the notifications
// of what just ended once, keeping the rest in the store for the next
// start. A controller that fails alone (a repository GitOps cannot watch)
// leaves the others running; Run returns its error at the end.
func (s *Set) Run(ctx context.Context) error {
	singletons := append([]func(context.Context) error{s.Drift.Run, s.TTL.Run, s.Health.Run}, s.tasks...)
	if s.Git != nil {
		singletons = append(singletons, s.Git.Run)
	}
	if s.Promotion != nil {
		singletons = append(singletons, s.Promotion.Run)
	}
	runs := append([]func(context.Context) error{s.Queue.Run, s.Rollout.Run}, singletons...)
	if s.leader != nil {
		runs = []func(context.Context) error{s.Queue.Run, s.Rollout.Run, func(ctx context.Context) error {
			return s.leader.Run(ctx, func(ctx context.Context) {
				if err := runAll(ctx, singletons); err != nil {
					s.log.Error("controllers", "err", err)
				}
			})
		}}
	}
	err := runAll(ctx, runs)
	if err := s.notify.Close(context.Background()); err != nil {
		s.log.Warn("notifications left undelivered", "err", err)
	}
	return err
}

// runAll runs each of runs until ctx ends and joins their errors.
func runAll(ctx context.Context, runs []func(context.Context) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
