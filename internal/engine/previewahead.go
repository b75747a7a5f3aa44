package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// A preview plans a component whose inputs are known only after an
// upstream component is applied exactly as a change set plans what waits
// behind a held plan (changes.planAhead): with a placeholder for each
// such input (step.planPlaceholders), its plan showing resources and
// actions, never values, and never applied. So a preview counts what the
// merge's apply will change downstream of a changed output, and its
// digest (AheadDigest) is one the apply can compare with its own plan.

// previewAhead, in a preview, plans component st whose input missing
// (and maybe others) is known only after its producer is applied, with
// placeholders; without such a plan (the runner cannot make one, the
// module takes none) it is Deferred as any plan run records it, saying why.
func (pl *planner) previewAhead(ctx context.Context, st *step, missing *missingOutputError) error {
	p, err := st.prepareAhead(ctx)
	if err != nil {
		return st.fail(ctx, err)
	}
	if skipped, err := pl.notPreviewed(st, p, false); skipped {
		return err
	}
	if p.rc, p.in, err = pl.where(st, p); err != nil {
		return st.fail(ctx, err)
	}
	opts := runner.PlanOptions{Attributes: true, KnownOutputs: true, Coming: pl.planned.coming(pl.s.env.Graph(), st.c.Name)}
	plan, why := st.planPlaceholders(ctx, p, opts)
	if plan == nil {
		pl.s.setCode(st.cr, Deferred, ReasonKnownAfterApply.Cause(missing.Producer+"."+missing.Output),
			fmt.Sprintf("known after apply: upstream %s.%s", missing.Producer, missing.Output), why)
		st.cr.Log = st.log.finish(nil)
		return pl.s.record(st.op, st.cr, nil, nil)
	}
	for _, m := range p.unknown {
		st.cr.PlannedAhead = append(st.cr.PlannedAhead, m.Variable)
	}
	sort.Strings(st.cr.PlannedAhead)
	st.cr.Plan = plan
	st.cr.Digest = AheadDigest(plan)
	pl.planned.put(st.c.Name, plan) // what it passes on, as a change set's plan ahead does
	st.cr.Log = st.log.finish(nil)
	reason := fmt.Sprintf("planned ahead with placeholders for %s, known only after %s is applied: the apply plans it again from the real values",
		strings.Join(st.cr.PlannedAhead, ", "), missing.Producer)
	if plan.HasChanges() {
		pl.s.setCode(st.cr, Planned, store.Cause{}, string(Planned), reason)
	} else {
		pl.s.setCode(st.cr, NoChanges, store.Cause{}, string(NoChanges), reason)
	}
	return pl.s.record(st.op, st.cr, nil, nil)
}

// AheadDigest is the digest of a plan made with placeholders for inputs
// known only after apply: whether it destroys, its counts and the
// resources it touches with their actions, without the fingerprint (the
// real inputs are not known yet). The apply that follows has the same
// AheadDigest of its own plan of the component when it does what the
// placeholder plan showed.
func AheadDigest(p *runner.Plan) string {
	if p == nil || !p.HasChanges() {
		return ""
	}
	return digestOf(fmt.Sprintf("knit plan digest ahead v1\ndestroy %t\ncounts %d %d %d\n", p.Destroying, p.Add, p.Change, p.Destroy), p)
}
