package knit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Consumers answers which environments read another's outputs: the
// producer's view, the door's teardown rule and the runs a producer's
// changed exports start.
type Consumers struct{ k *Knit }

// NewConsumers is k's consumers.
func NewConsumers(k *Knit) *Consumers { return &Consumers{k: k} }

// of are the environments (TEAM/ENV, sorted) whose applied revision reads
// an output of producer, and that are not torn down: what depends on it.
// Every team's count: a dependency is a fact of the fleet, whoever asks.
func (cs *Consumers) of(ctx context.Context, producer string) ([]string, error) {
	k := cs.k
	all, err := k.store.Environments(ctx, store.EnvironmentFilter{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range all {
		if e.ID == producer || e.AppliedRevision == 0 || e.Status == store.EnvTornDown {
			continue
		}
		env, err := k.appliedSpec(ctx, e)
		if err != nil {
			return nil, err
		}
		if slices.Contains(env.Upstreams(), producer) {
			out = append(out, e.ID)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Consumers lists the environments that read outputs of ref (TEAM/ENV or
// a metadata name), as the producer's view shows them: the caller must
// see the producer; consumers of other teams are named all the same (the
// producer's owners must know who depends on them).
func (rs *Records) Consumers(ctx context.Context, ref string) ([]string, error) {
	e, err := rs.k.resolveEnv(ctx, ref)
	if err != nil {
		return nil, err
	}
	return NewConsumers(rs.k).of(ctx, e.ID)
}

// ErrHasConsumers is a teardown of an environment other environments
// still read outputs of (errors.Is; the error names them).
var ErrHasConsumers = fmt.Errorf("%w: other environments read its outputs", store.ErrConflict)

// envRules are the door's rules about environments reading each other:
// no run of an environment in a cycle of reads (A reads B reads A), and
// no teardown of a producer while consumers depend on it (they go first).
func (a *Run) envRules(ctx context.Context, req RunRequest, env *spec.Environment) error {
	if req.Kind == engine.KindTeardown || env.Spec.Teardown {
		users, err := NewConsumers(a.k).of(ctx, env.ID())
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return fmt.Errorf("%w: %s is read by %s: tear them down first (or remove their valueFrom {environment: %s})",
				ErrHasConsumers, env.ID(), strings.Join(users, ", "), env.ID())
		}
		return nil
	}
	cyc, err := engine.EnvCycle(ctx, a.k.store, env)
	if err != nil {
		return err
	}
	if cyc != nil {
		return fmt.Errorf("%w: %s", store.ErrConflict, cyc)
	}
	return nil
}

// SourceUpstream is the source of the runs a producer's changed exports start.
const SourceUpstream = "upstream"

// Runs are the runs that follow a run (runID) of producer that
// changed outputs it exports (AfterRun.Downstream): an apply of each
// consumer's applied revision, as actor, gated by the consumer's own
// autoApprove (the request approves nothing). At most MaxConsumerRuns,
// in name order; more consumers than that are an error naming how many
// were left out (the run queue bounds how many run at once).
func (cs *Consumers) Runs(ctx context.Context, producer, runID, actor string) ([]RunRequest, error) {
	users, err := cs.of(ctx, producer)
	if err != nil {
		return nil, err
	}
	var out []RunRequest
	for i, c := range users {
		if i == MaxConsumerRuns {
			return out, fmt.Errorf("%s has %d consumers: only the first %d follow its change (MaxConsumerRuns)", producer, len(users), MaxConsumerRuns)
		}
		out = append(out, RunRequest{Kind: engine.KindApply, EnvRef: c, Actor: actor, Source: SourceUpstream,
			Reason: fmt.Sprintf("outputs exported by %s changed (run %s)", producer, runID)})
	}
	return out, nil
}

// MaxConsumerRuns bounds the runs one change of a producer's exports
// starts at once.
const MaxConsumerRuns = 1000

// forView are e's consumers when its applied revision exports
// anything (an environment that exports nothing has none to list).
func (cs *Consumers) forView(ctx context.Context, e store.Environment) ([]string, error) {
	if e.AppliedRevision == 0 {
		return nil, nil
	}
	env, err := cs.k.appliedSpec(ctx, e)
	if err != nil || len(env.Spec.Exports) == 0 {
		return nil, err
	}
	return cs.of(ctx, e.ID)
}
