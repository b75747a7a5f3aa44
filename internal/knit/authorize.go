package knit

import (
	"context"
	"fmt"
	"strings"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Caller is who asked for a run, as a plain value a queue carries across
// processes and restarts: the name of the token the request was
// authenticated with. Start looks the token up again when the run
// starts, so a token revoked or narrowed while the run waited in a queue
// is refused then. A RunRequest without one is the server's own (GitOps,
// a schedule, a resume) or the local CLI's user's: ctx's caller decides.
type Caller struct {
	Token string `json:"token"`
}

// CallerOf is the Caller of a request authenticated with t.
func CallerOf(t view.Token) *Caller { return &Caller{Token: t.Name} }

// callerOfCtx is ctx's caller as a Caller (nil: none).
func callerOfCtx(ctx context.Context) *Caller {
	if t, ok := caller(ctx); ok {
		return CallerOf(t)
	}
	return nil
}

// withCaller is ctx carrying the live token req.Caller names, when it
// names one: a token revoked since the request is refused.
func (a *Run) withCaller(ctx context.Context, req RunRequest) (context.Context, error) {
	if req.Caller == nil {
		return ctx, nil
	}
	ts, err := a.k.store.ListTokens(ctx)
	if err != nil {
		return ctx, fmt.Errorf("look up token %s: %w", req.Caller.Token, err)
	}
	for _, t := range ts {
		if t.Name == req.Caller.Token && t.RevokedAt.IsZero() {
			return WithCaller(ctx, tokenRecord(t)), nil
		}
	}
	return ctx, fmt.Errorf("%w: token %s, which asked for the run, is revoked (knit token list)", ErrForbidden, req.Caller.Token)
}

// authorize checks that ctx's caller may run req, on the environment it
// resolves to (authorizeRun), before anything of it is resolved further.
func (a *Run) authorize(ctx context.Context, req RunRequest) error {
	if _, ok := caller(ctx); !ok {
		return nil
	}
	id := req.EnvRef
	if req.Env != nil && id == "" {
		id = req.Env.ID()
	} else {
		e, err := a.k.resolveEnv(ctx, req.EnvRef)
		if err != nil {
			return err
		}
		id = e.ID
	}
	return authorizeRun(ctx, id, req)
}

// authorizeRun checks that ctx's caller may run kind on environment id
// (as resolved: the team its ID names, not what the request called it):
// an operator's or admin's token of the environment's team; only an
// admin overrides a policy. Without a caller (the local CLI, the server's
// own runs) every run is allowed.
func authorizeRun(ctx context.Context, id string, req RunRequest) error {
	t, ok := caller(ctx)
	if !ok {
		return nil
	}
	if !CanSee(t, spec.TeamOf(id)) {
		return fmt.Errorf("%w: token %s is limited to teams %s, and %q is an environment of another team",
			ErrForbidden, t.Name, strings.Join(t.Teams, ", "), firstNonEmpty(req.EnvRef, id))
	}
	if !t.Role.AtLeast(store.RoleOperator) {
		return fmt.Errorf("%w: a %s run needs an operator or admin token; token %s is %s", ErrForbidden, req.Kind, t.Name, t.Role)
	}
	if req.OverridePolicy != "" && !t.Role.AtLeast(store.RoleAdmin) {
		return fmt.Errorf("%w: only an admin token may override a policy (--override-policy); token %s is %s", ErrForbidden, t.Name, t.Role)
	}
	return nil
}
