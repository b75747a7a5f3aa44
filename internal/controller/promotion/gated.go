package promotion

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// awaiting follows the run applying next's release that stopped at its
// environment's approval gate (a require_approval policy, a destroy that
// asks): the stage says AwaitingApproval, naming the change set a person
// approves (its checksum), and keeps the run applying: the run that
// carries the approval out replaces it (successor).
func (c *Controller) awaiting(ctx context.Context, next view.StageState, run view.Run, envID string) error {
	msg, err := c.gateMessage(ctx, run, envID)
	if err != nil {
		return err
	}
	if next.Reason == view.WaitAwaitingApproval && next.Message == msg {
		return nil
	}
	next.Reason, next.Message = view.WaitAwaitingApproval, msg
	err = c.k.SetStage(ctx, next, store.StageApplying, envID)
	if errors.Is(err, store.ErrConflict) {
		return nil // the tick and a follow of the run's end wrote first
	}
	return err
}

// gateMessage says what run, stopped at environment envID's approval
// gate, waits for: the change set a person approves, by its checksum.
func (c *Controller) gateMessage(ctx context.Context, run view.Run, envID string) (string, error) {
	msg := fmt.Sprintf("run %s waits for a person's approval (knit approvals %s)", run.ID, envID)
	sets, err := knit.NewRecords(c.k).ChangeSets(ctx, envID, 0, store.ApprovalPending)
	if err != nil {
		return "", err
	}
	for _, cs := range sets {
		if cs.RunID == run.ID {
			msg = fmt.Sprintf("run %s waits for the approval of change set %s: knit approve %s --change %s", run.ID, cs.Checksum, envID, cs.Checksum)
		}
	}
	return msg, nil
}

// successor is the run that replaced run, when it carries run's change
// on: an apply of the same revision (the apply an approval started). A
// run replaced by anything else (a rollback, another revision) did not
// apply the stage's release: ok is false.
func (c *Controller) successor(ctx context.Context, run view.Run) (by string, ok bool, err error) {
	if run.SupersededBy == "" {
		return "", false, nil
	}
	next, err := c.k.RunRecord(ctx, run.SupersededBy)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return next.Run.ID, next.Run.Kind == engine.KindApply && next.Run.Revision == run.Revision, nil
}
