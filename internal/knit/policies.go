package knit

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/policy"
)

// judge is the Judge of a run: the Config's policy folders and the run's
// own, compiled; nil when there are none. Policies that do not compile
// still make a Judge, one that fails: the run is recorded, failed with
// the file:line of the error, and nothing of it applies.
func (k *Knit) judge(ctx context.Context, dirs []string) (engine.Judge, error) {
	all := append(append([]string{}, k.cfg.Policies...), dirs...)
	if len(all) == 0 {
		return nil, nil
	}
	set, err := policy.Load(ctx, all...)
	if err != nil {
		return brokenPolicies{err}, nil
	}
	return set, nil
}

// brokenPolicies judges nothing: every run it judges fails closed.
type brokenPolicies struct{ err error }

func (b brokenPolicies) Judge(context.Context, *engine.EnvPlan) (*engine.Verdict, error) {
	return nil, fmt.Errorf("the policies do not compile:\n%w", b.err)
}
