package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/store"
)

// toolTracker records in the store the process group of each tool a run
// starts, for as long as the group may run: a knit killed outright cannot
// stop its tools (the kernel's parent-death signal reaches the tool alone,
// which may ignore it), so the next knit to run the environment ends them.
type toolTracker struct {
	e        *Engine
	db       context.Context // never cancelled: the records outlive the run's cancellation
	run, env string
}

func (t toolTracker) Started(g procexec.Group) error {
	if err := t.e.Watchdog.Group(t.run, g.ID); err != nil {
		return err // a tool never runs unwatched
	}
	return t.e.Store.RecordToolProcess(t.db, store.ToolProcess{RunID: t.run, Env: t.env, Host: t.e.Host,
		PGID: g.ID, Start: g.Start, StartedAt: t.e.now()})
}

func (t toolTracker) Ended(g procexec.Group) error {
	return errors.Join(t.e.Watchdog.Ended(g.ID), t.e.Store.ForgetToolProcess(t.db, t.run, t.e.Host, g.ID))
}

// EndLeftTools makes sure the tools that runs of env left running on this
// host are gone, for the runs left reports as over: each recorded process
// group gets SIGTERM, then SIGKILL once ToolGrace has passed, and is
// forgotten once gone (groups on other hosts are left to a knit there). A
// new run of env calls it holding the lock, before any component runs, so a
// component never runs twice at once. The error names every group that
// could not be ended; such groups stay recorded.
func (e *Engine) EndLeftTools(ctx context.Context, env string, left func(runID string) (bool, error)) error {
	procs, err := e.Store.ListToolProcesses(ctx, env)
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	for _, p := range procs {
		if p.Host != e.Host {
			continue
		}
		over, err := left(p.RunID)
		if err != nil {
			fail(err)
			continue
		}
		if !over {
			continue
		}
		wg.Go(func() {
			if err := procexec.EndGroup(ctx, procexec.Group{ID: p.PGID, Start: p.Start}, e.toolGrace()); err != nil {
				fail(fmt.Errorf("end the tool (process group %d) that run %s left running: %w", p.PGID, p.RunID, err))
				return
			}
			if err := e.Store.ForgetToolProcess(context.WithoutCancel(ctx), p.RunID, p.Host, p.PGID); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (e *Engine) toolGrace() time.Duration {
	if e.ToolGrace > 0 {
		return e.ToolGrace
	}
	return procexec.Grace
}
