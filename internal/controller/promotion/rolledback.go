package promotion

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// RolledBack records, on the stage whose run failed ended, that the
// environment's rollout policy (onFailure: rollback) started run
// rollback to go back: the release stays failed (VerificationFailed)
// there, and the stage's history names the rollback run.
func (c *Controller) RolledBack(ctx context.Context, failed, rollback string) error {
	for _, file := range c.cfg.Files {
		name := strings.TrimSuffix(path.Base(file), path.Ext(file))
		// A few tries: the controller's own tick may record the failure
		// at the same time (compare-and-set, one wins).
		for try := 0; try < 5; try++ {
			f, err := c.k.Facts(ctx, name)
			if errors.Is(err, store.ErrNotFound) {
				break
			} else if err != nil {
				return err
			}
			var s *view.StageState
			for i := range f.States {
				if f.States[i].RunID == failed {
					s = &f.States[i]
				}
			}
			if s == nil {
				break
			}
			if s.State == store.StageApplying {
				if err := c.follow(ctx, *s, f.Envs[s.Stage]); err != nil {
					return err
				}
				continue
			}
			next := *s
			next.RunID, next.Actor, next.ChangedAt = rollback, c.cfg.Actor, c.clock.Now()
			next.Message = view.RolledBackMessage(s.Stage, rollback, failed, s.Message)
			err = c.k.SetStage(ctx, next, s.State, f.Envs[s.Stage])
			if !errors.Is(err, store.ErrConflict) {
				return err
			}
		}
	}
	return nil
}

// RollbackEnded follows rollback run id of environment env (run kind
// rollback, a person's knit rollback) once it ended: when it succeeded, the release
// of the stage whose revision it went back to is the stage's current
// release again (verified now, by that run), so the pipeline says what
// the environment runs.
func (c *Controller) RollbackEnded(ctx context.Context, env, id string) error {
	run, err := c.k.RunRecord(ctx, id)
	if err != nil || run.Run.Status != store.StatusSucceeded {
		return err
	}
	to, err := knit.NewRecords(c.k).Revision(ctx, env, run.Run.Revision)
	if err != nil {
		return err
	}
	for _, file := range c.cfg.Files {
		name := strings.TrimSuffix(path.Base(file), path.Ext(file))
		for try := 0; try < 5; try++ { // the tick may write the same state at once
			f, err := c.k.Facts(ctx, name)
			if errors.Is(err, store.ErrNotFound) {
				break
			} else if err != nil {
				return err
			}
			s := appliedAs(f, env, id, to.Commit)
			if s == nil {
				break
			}
			next := *s
			next.State, next.RunID, next.Actor, next.Reason = store.StageSucceeded, id, c.cfg.Actor, ""
			next.ChangedAt = c.clock.Now()
			next.VerifiedAt = next.ChangedAt
			next.Message = fmt.Sprintf("back in %s: rollback run %s went back to revision %d", s.Stage, id, to.Number)
			err = c.k.SetStage(ctx, next, s.State, env)
			if !errors.Is(err, store.ErrConflict) {
				return err
			}
		}
	}
	return nil
}
