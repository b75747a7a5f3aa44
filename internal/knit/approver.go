package knit

import (
	"context"
	"fmt"
	"slices"
	"time"

	"knit.dev/knit/internal/store"
)

// Run sources that say how far a run's actor is known. A run the server
// started from a commit names the commit's author; git lets anyone write
// any author, so that name is trusted only when the commit's signature
// verifies against keys the server trusts (gitwatch.Commit.Signer).
const (
	// SourceGit is a run from a commit whose signature did not verify:
	// its actor is the name the commit claims, authenticated by no one.
	SourceGit = "git"
	// SourceGitSigned is a run from a commit signed by a trusted key:
	// its actor is the key's principal.
	SourceGitSigned = "git-signed"
)

// AuditApproveVote is the audit action of an approval that counts toward
// a change whose author nobody authenticated, which takes two approvers.
const AuditApproveVote = "approve-vote"

// ErrSecondApprover: the change's author is not authenticated (an
// unsigned commit's self-declared name), so where the environment
// requires another approver it takes two distinct approvers; this one is
// recorded, and the next one's approval carries it out.
var ErrSecondApprover = fmt.Errorf("%w: a second approver is needed", store.ErrConflict)

// authorVerified reports whether r's actor is who made the change: a
// token, the local user, the server itself, or a verified signature;
// not a name an unsigned commit claims, and not a resume (its actor is
// the server, its change the interrupted run's, whose author may have
// been such a name): either takes two approvers, failing closed.
func authorVerified(r store.Run) bool { return r.Source != SourceGit && r.Source != SourceRecovery }

// unverifiedWhy says why nobody vouches for the author of r's change.
func unverifiedWhy(r store.Run) string {
	if r.Source == SourceRecovery {
		return fmt.Sprintf("its change is a resume (%s) of an interrupted run, whose author is not known for sure", r.Actor)
	}
	return fmt.Sprintf("its change is from a commit whose signature did not verify (its author, %q, is a name anyone can write)", r.Actor)
}

// otherApprover applies requireOtherApprover to actor's approval of the
// change run r planned (of component, "" for the change set, waiting
// since): the author may not approve it, and a change whose author is not
// verified takes approvals of two distinct actors: the first is recorded
// in the audit trail (ErrSecondApprover), the second decides.
func (a *Decide) otherApprover(ctx context.Context, env string, r store.Run, component string, since time.Time, actor, what string) error {
	if authorVerified(r) {
		if r.Actor == actor {
			return fmt.Errorf("%w: %s made the change that %s is for, and %s requires another approver", ErrSelfApproval, r.Actor, what, env)
		}
		return nil
	}
	voters, err := a.votes(ctx, env, r.ID, component, since)
	if err != nil {
		return fmt.Errorf("%s: read its approvals: %w", what, err)
	}
	if slices.ContainsFunc(voters, func(v string) bool { return v != actor }) {
		return nil
	}
	if !slices.Contains(voters, actor) {
		err := a.k.store.AppendAudit(ctx, store.AuditEvent{Env: env, Actor: actor, Action: AuditApproveVote, Component: component,
			RunID: r.ID, Detail: what + ": first of two approvals", Time: a.k.now()})
		if err != nil {
			return fmt.Errorf("%s: record the approval: %w", what, err)
		}
	}
	return fmt.Errorf("%w: %s approved %s; %s, so %s requires approvals from two distinct tokens: another one's approval carries it out",
		ErrSecondApprover, actor, what, unverifiedWhy(r), env)
}

// votes are the actors whose approval of the change run runID planned (of
// component) was recorded since.
func (a *Decide) votes(ctx context.Context, env, runID, component string, since time.Time) ([]string, error) {
	events, err := a.k.store.Audit(ctx, store.AuditFilter{Env: env, Since: since})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range events {
		if e.Action == AuditApproveVote && e.RunID == runID && e.Component == component && !slices.Contains(out, e.Actor) {
			out = append(out, e.Actor)
		}
	}
	return out, nil
}
