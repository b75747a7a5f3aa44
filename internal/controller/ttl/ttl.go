// Package ttl is knit serve's expiry controller for ephemeral
// environments (spec.ttl): it starts each environment's expiry at its
// first apply, warns (ttl.expiring) a lead time before, and at expiry
// queues a teardown run, gated and ordered like any teardown.
package ttl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Config is how a Controller runs.
type Config struct {
	// WarnBefore is how long before expiry ttl.expiring goes out
	// (default one hour).
	WarnBefore time.Duration
	// Tick is how often expiries are looked at (default one second).
	Tick time.Duration
	// Actor names the server in the audit trail of the teardowns.
	Actor  string
	Logger *slog.Logger
	Clock  clock.Clock
}

// Queue is where teardowns go (runqueue.Queue).
type Queue interface {
	Enqueue(req knit.RunRequest, env string) (string, error)
	PendingFor(env string) bool
}

// Notifier is told of expiries to come (notify.Dispatcher).
type Notifier interface{ Notify(notify.Event) }

// Controller watches every expiry the store holds.
type Controller struct {
	k     *knit.Knit
	q     Queue
	n     Notifier
	cfg   Config
	log   *slog.Logger
	clock clock.Clock

	mu sync.Mutex
	// torn is the expiry each environment's teardown was queued for: one
	// teardown per expiry (a failed or gated one waits for a person).
	torn map[string]time.Time
}

// New is a controller over k, queueing teardowns on q and telling n.
func New(k *knit.Knit, q Queue, n Notifier, cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Actor == "" {
		cfg.Actor = "knit-serve"
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.WarnBefore <= 0 {
		cfg.WarnBefore = time.Hour
	}
	return &Controller{k: k, q: q, n: n, cfg: cfg, log: cfg.Logger, clock: clock.Or(cfg.Clock), torn: map[string]time.Time{}}
}

// Run acts on expiries every tick until ctx ends. (Expiries start with
// each first apply, through knit.Run or this server's queue: nothing to
// load.) It returns nil once stopped.
func (c *Controller) Run(ctx context.Context) error {
	t := c.clock.NewTicker(c.cfg.Tick)
	defer t.Stop()
	c.Check(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			c.Check(ctx)
		}
	}
}

// RunEnded follows a run's end: a first apply starts the expiry, a
// teardown clears it. It runs whether Run has started or not: an expiry
// missed here would never come.
func (c *Controller) RunEnded(env string) {
	if err := c.k.State().SyncExpiry(context.Background(), env); err != nil {
		c.log.Warn("ttl: expiry", "env", env, "err", err)
	}
}

// Check warns of expiries within the lead time and queues the teardown
// of those past.
func (c *Controller) Check(ctx context.Context) {
	xs, err := knit.NewRecords(c.k).Expiries(ctx)
	if err != nil {
		c.log.Error("ttl: list expiries", "err", err)
		return
	}
	now := c.clock.Now()
	for _, x := range xs {
		switch {
		case !x.At.After(now):
			c.expire(ctx, x)
		case !x.At.After(now.Add(c.cfg.WarnBefore)) && !x.WarnedFor.Equal(x.At):
			c.warn(ctx, x, now)
		}
	}
}

// warn sends ttl.expiring once per expiry: it is marked sent first, so a
// restart never sends it again (a crash in between loses it rather than
// doubling it).
func (c *Controller) warn(ctx context.Context, x view.TTL, now time.Time) {
	err := c.k.State().MarkExpiryWarned(ctx, x.Env, x.At)
	if errors.Is(err, store.ErrConflict) {
		return // extended or torn down meanwhile: the next tick sees the new expiry
	} else if err != nil {
		c.log.Error("ttl: mark the warning", "env", x.Env, "err", err)
		return
	}
	c.n.Notify(notify.Event{Kind: notify.KindTTLExpiring, Env: x.Env, Actor: c.cfg.Actor,
		Summary: fmt.Sprintf("%s expires at %s (in %s) and will be torn down; knit ttl %s --extend 24h keeps it longer",
			x.Env, x.At.UTC().Format(time.RFC3339), x.At.Sub(now).Round(time.Second), x.Env)})
}

// expire queues the teardown of an expired environment, once per expiry,
// unless a run of it waits already or its last run is the teardown.
func (c *Controller) expire(ctx context.Context, x view.TTL) {
	c.mu.Lock()
	done := c.torn[x.Env].Equal(x.At)
	c.mu.Unlock()
	if done || c.q.PendingFor(x.Env) {
		return
	}
	reason := knit.ExpiredReason(x.At)
	if runs, err := knit.NewRecords(c.k).History(ctx, x.Env, "", 1); err != nil {
		c.log.Error("ttl: last run", "env", x.Env, "err", err)
		return
	} else if len(runs.Items) == 1 && runs.Items[0].Kind == engine.KindTeardown && runs.Items[0].Reason == reason {
		c.remember(x) // queued before a restart: it runs, waits for approval or failed
		return
	}
	id, err := c.q.Enqueue(knit.RunRequest{Kind: engine.KindTeardown, EnvRef: x.Env, Actor: c.cfg.Actor,
		Source: "ttl", Reason: reason}, x.Env)
	if err != nil {
		c.log.Error("ttl: queue the teardown", "env", x.Env, "err", err)
		return
	}
	c.remember(x)
	if err := c.k.State().AuditExpired(ctx, x.Env, x.At, id, c.cfg.Actor); err != nil {
		c.log.Error("ttl: audit the expiry", "env", x.Env, "err", err)
	}
}

func (c *Controller) remember(x view.TTL) {
	c.mu.Lock()
	c.torn[x.Env] = x.At
	c.mu.Unlock()
}
