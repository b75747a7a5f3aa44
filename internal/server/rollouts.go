package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// rolloutAPI is the API's routes of rollouts by an environment's
// strategy: where one stands, and a person's promote, abort and retry.
type rolloutAPI struct{ s *Server }

// status answers the environment's newest rollout (404: none ever).
func (a rolloutAPI) status(w http.ResponseWriter, r *http.Request) {
	id, err := envID(r)
	if err != nil {
		a.s.fail(w, r, err)
		return
	}
	v, err := knit.NewRollouts(a.s.k).Status(r.Context(), id)
	if errors.Is(err, knit.ErrNoRollout) {
		err = fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	if err != nil {
		a.s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// steerFunc is a person's action on env's rollout, as actor, for reason.
type steerFunc func(ctx context.Context, ro *knit.Rollouts, env, actor, reason string) (knit.RolloutAction, error)

func (rolloutAPI) promote(ctx context.Context, ro *knit.Rollouts, env, actor, reason string) (knit.RolloutAction, error) {
	return ro.Promote(ctx, env, actor, reason)
}

func (rolloutAPI) abort(ctx context.Context, ro *knit.Rollouts, env, actor, reason string) (knit.RolloutAction, error) {
	return ro.Abort(ctx, env, actor, reason)
}

func (rolloutAPI) retry(ctx context.Context, ro *knit.Rollouts, env, actor, reason string) (knit.RolloutAction, error) {
	return ro.Retry(ctx, env, actor, reason)
}

// steer is a POST of a person's action on the rollout, as the token: it
// is recorded (audited) by the library, and what it leads to is carried
// out by the rollouts' driver: its run queued (as the token: the door
// judges it like any run), or its pause waited out. A rollout in no
// state for it answers 409.
func (a rolloutAPI) steer(act steerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := envID(r)
		if err != nil {
			a.s.fail(w, r, err)
			return
		}
		var body struct {
			Reason string `json:"reason"`
		}
		if err := decode(r, &body); err != nil {
			a.s.fail(w, r, err)
			return
		}
		tok := principal(r.Context())
		ro := knit.NewRollouts(a.s.k)
		next, err := act(r.Context(), ro, id, tok.Name, body.Reason)
		if errors.Is(err, knit.ErrNoRollout) {
			err = fmt.Errorf("%w: %w", store.ErrConflict, err)
		}
		if err != nil {
			a.s.fail(w, r, err)
			return
		}
		if next.Run != nil {
			next.Run.Caller = knit.CallerOf(tok)
		}
		runID, err := a.carry(id, next)
		if err != nil {
			a.s.fail(w, r, err)
			return
		}
		v, err := ro.Status(r.Context(), id)
		if err != nil {
			a.s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, view.RolloutAction{Rollout: v, RunID: runID})
	}
}

// carry hands next to the rollouts' driver (without one: its run to the
// queue).
func (a rolloutAPI) carry(env string, next knit.RolloutAction) (string, error) {
	if a.s.cfg.Rollouts != nil {
		return a.s.cfg.Rollouts.Act(env, next)
	}
	if next.Run == nil {
		return "", nil
	}
	return a.s.queue.Enqueue(*next.Run, env)
}
