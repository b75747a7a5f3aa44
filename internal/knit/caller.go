package knit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// ErrForbidden means the caller's token may not act on what it named: an
// environment of a team it is not limited to.
var ErrForbidden = errors.New("forbidden")

type callerKey struct{}

// WithCaller returns ctx carrying the token a request was authenticated
// with. Every adapter that serves other people (the HTTP API, the
// dashboard) sets it; the library then resolves environments as that
// caller sees them: a team-limited token is refused (ErrForbidden) an
// environment of another team however it names it (ID or metadata name),
// and error hints list only environments it may see. A context without a
// caller is the local CLI's, which sees everything.
func WithCaller(ctx context.Context, t view.Token) context.Context {
	return context.WithValue(ctx, callerKey{}, t)
}

// caller is the token ctx carries, and whether it carries one.
func caller(ctx context.Context) (view.Token, bool) {
	t, ok := ctx.Value(callerKey{}).(view.Token)
	return t, ok
}

// mayAct checks that ctx's caller may see e, which ref named (always
// true without a caller). The error names ref, not e: what another team
// has is none of the caller's business.
func mayAct(ctx context.Context, ref string, e store.Environment) error {
	t, ok := caller(ctx)
	if !ok || CanSee(t, e.Team) {
		return nil
	}
	return fmt.Errorf("%w: token %s is limited to teams %s, and %q is an environment of another team",
		ErrForbidden, t.Name, strings.Join(t.Teams, ", "), ref)
}

// visibleTo reports whether ctx's caller may see environments of team.
func visibleTo(ctx context.Context, team string) bool {
	t, ok := caller(ctx)
	return !ok || CanSee(t, team)
}

// callerTeams is the teams ctx's caller is limited to, nil when it sees
// every team: the Teams filter of every list it reads, so the store
// leaves out what it may not see before the page is cut.
func callerTeams(ctx context.Context) []string {
	t, ok := caller(ctx)
	if !ok || len(t.Teams) == 0 {
		return nil
	}
	return t.Teams
}
