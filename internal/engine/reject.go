package engine

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/words"
)

// Rejected is where a component, and its environment, stand once a person
// rejected the plan that waited for approval: nothing was applied, and the
// next apply plans again. It replaces awaiting-approval, which no longer
// holds (words.ComponentRejected, store.EnvRejected).
const (
	Rejected    = words.ComponentRejected
	EnvRejected = store.EnvRejected
)

// settleRejected records a rejection where people look: the component's
// state says rejected rather than awaiting approval, and so does the
// environment's status once nothing of it awaits approval any more.
func (e *Engine) settleRejected(ctx context.Context, env, component string) error {
	states, err := e.Store.ComponentStates(ctx, env)
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", env, err)
	}
	if st, ok := states[component]; ok && st.Status == stateAwaiting {
		st.Status, st.UpdatedAt = string(Rejected), e.now()
		if err := e.Store.PutComponentState(ctx, st); err != nil {
			return fmt.Errorf("record %s as rejected: %w", component, err)
		}
	}
	pending, err := e.Store.ListApprovals(ctx, store.ApprovalFilter{Env: env, Statuses: []string{store.ApprovalPending}, Limit: 1})
	if err != nil || len(pending) > 0 {
		return err
	}
	rec, err := e.Store.Environment(ctx, env)
	if err != nil {
		return fmt.Errorf("read %s: %w", env, err)
	}
	if rec.Status != EnvAwaiting {
		return nil
	}
	if err := e.Store.SetEnvironmentStatus(ctx, env, EnvRejected); err != nil {
		return fmt.Errorf("set the status of %s: %w", env, err)
	}
	return nil
}
