package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// A change set is the whole change a gated apply stops at: the exact plans
// of the components that wait for a person and, planned ahead from what
// those plans say they will output, the plans of the components waiting
// behind them. A person approves it once (DecideChange); the apply that
// follows applies the approved plans, plans each component behind them
// again in its turn, and goes on without asking while a plan does to the
// same resources what the approved change showed (covered). A plan that
// differs stops for a new approval, saying what differs.

// changes keeps a run's change sets: it loads the approved one a run goes
// on by (openChange, covered), proposes the whole change a gated apply
// stopped at, planning ahead what waits behind the held plans
// (proposeChange), and closes or outdates change sets as runs end.
type changes struct {
	s         *session
	gate      *gate
	approvals *approvals
	planned   *planned
	// change is the environment's approved change set, if any, for this
	// run's revision: plans it covers go on without asking (covered).
	change *store.ChangeSet
}

// heldPlan is the approval a component waits with in this run.
type heldPlan struct {
	id       int64
	checksum string
}

// proposeChange, after an apply's walk, plans ahead the components waiting
// behind the held ones and records the change set of them all, unless the
// open one is the same change. It changes no resource.
func (ch *changes) proposeChange(ctx context.Context, g *dag.Graph, wr *dag.WalkResult) {
	var held, waiting []string
	for _, name := range g.Vertices() {
		switch wr.Vertices[name].Status {
		case dag.Held:
			if _, ok := ch.approvals.heldPlan(name); ok {
				held = append(held, name)
			}
		case dag.Waiting:
			waiting = append(waiting, name)
		}
	}
	if len(held) == 0 || ctx.Err() != nil {
		if ctx.Err() == nil && len(ch.s.opts.Components) == 0 {
			ch.outdateChange()
		}
		return
	}
	ch.planned.start()
	for _, name := range held {
		ch.s.mu.Lock()
		cr := ch.s.result.Component(name)
		ch.s.mu.Unlock()
		if cr != nil && cr.Plan != nil {
			ch.planned.put(name, cr.Plan)
		}
	}
	entries := make(map[string]store.ChangeSetComponent, len(held)+len(waiting))
	for _, name := range held {
		entries[name] = ch.heldEntry(name)
	}
	ahead := g.Subgraph(waiting).Walk(ctx, ch.s.opts.Parallelism, func(ctx context.Context, name string) error {
		e := ch.planAhead(ctx, name, wr.Vertices[name])
		ch.s.mu.Lock()
		entries[name] = e
		ch.s.mu.Unlock()
		return nil
	})
	for name, vr := range ahead.Vertices {
		if _, ok := entries[name]; !ok && vr.Status != dag.Succeeded {
			return // interrupted: no change set of a part of the change
		}
	}
	ch.recordChange(entries)
}

// hasDependents reports whether any component of the environment depends
// on name.
func (s *session) hasDependents(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.graph == nil {
		s.graph = s.env.Graph()
	}
	return len(s.graph.DependentsOf(name)) > 0
}

// outdateChange marks the waiting change set stale after an apply that
// left nothing waiting: its plans were decided one by one, or planned again.
func (ch *changes) outdateChange() {
	open, err := ch.s.e.Store.ListChangeSets(ch.s.db, store.ChangeSetFilter{Env: ch.s.env.ID(), Statuses: []string{store.ChangeSetPending}})
	if err != nil {
		ch.s.runFailed(fmt.Errorf("read the waiting change set: %w", err))
		return
	}
	for _, cs := range open {
		why := fmt.Sprintf("run %s left nothing waiting for approval", ch.s.run.ID)
		err := ch.s.e.Store.DecideChangeSet(ch.s.db, cs.ID, store.ChangeSetPending, store.ChangeSetStale, ch.s.opts.Actor, why, ch.s.e.now())
		if err != nil && !errors.Is(err, store.ErrConflict) {
			ch.s.runFailed(fmt.Errorf("mark change set #%d stale: %w", cs.ID, err))
		}
	}
}

// heldEntry is a held component's part of the change set.
func (ch *changes) heldEntry(name string) store.ChangeSetComponent {
	h, _ := ch.approvals.heldPlan(name)
	e := store.ChangeSetComponent{Component: name, ApprovalID: h.id, PlanChecksum: h.checksum, Gated: true}
	if cr := ch.s.result.Component(name); cr != nil {
		fillEntry(&e, cr.Plan)
	}
	return e
}

// planAhead plans a component waiting behind a held one, from the outputs
// its producers' plans already know, and records it waiting with that
// plan. An input known only after a producer is applied is marked so.
func (ch *changes) planAhead(ctx context.Context, name string, vr dag.VertexResult) store.ChangeSetComponent {
	st := ch.s.newStep(name, Planning)
	e := store.ChangeSetComponent{Component: name, Gated: !ch.gate.autoApproved(st.c), Resources: []store.ChangeSetResource{}}
	// Its status says why it waits, as for any component behind a hold;
	// what its plan could not show is the change set's to say.
	_, cause, code, reason := ch.s.defaultSettle(name, vr)
	defer func() {
		st.cr.Log = st.log.finish(nil)
		ch.s.setCode(st.cr, Waiting, cause, code, reason)
		_ = ch.s.record(st.op, st.cr, nil, nil)
	}()
	if ch.s.kind == KindTeardown {
		st.op = "destroy"
		if !live(ch.s.state(name)) {
			return e // nothing to destroy
		}
	}
	p, err := st.prepareAhead(ctx)
	if err != nil {
		e.PlanError = firstLine(redact(err.Error(), st.secrets))
		return e
	}
	opts := runner.PlanOptions{Attributes: true, KnownOutputs: ch.s.hasDependents(name), Coming: ch.planned.coming(ch.s.env.Graph(), name)}
	if ch.s.kind == KindTeardown {
		opts = runner.PlanOptions{Destroy: true}
	}
	var plan *runner.Plan
	if len(p.unknown) > 0 {
		if plan, e.KnownAfterApply = st.planPlaceholders(ctx, p, opts); plan == nil {
			return e
		}
		for _, m := range p.unknown {
			e.Placeholders = append(e.Placeholders, m.Variable)
		}
	} else if plan, err = p.r.Plan(ctx, p.rc, p.in, opts); err != nil {
		e.PlanError = "plan: " + firstLine(redact(err.Error(), st.secrets))
		return e
	}
	st.cr.Plan = plan
	ch.planned.put(name, plan)
	fillEntry(&e, plan)
	return e
}

// planPlaceholders plans a component ahead whose inputs p.unknown are
// known only after their producers are applied, with a placeholder for
// each (runner.PlaceholderPlanner). The plan shows resources and actions
// only: every value it would set is shown as known after apply, and it
// tells components behind it no output, so nothing derived from a
// placeholder is ever shown or passed on as real. It is never applied:
// in its turn the component is planned again from the real outputs, and
// that plan must do what this one shows (covered). Without such a plan,
// why says what is known only after apply and why no placeholder served.
func (st *step) planPlaceholders(ctx context.Context, p *prepared, opts runner.PlanOptions) (plan *runner.Plan, why string) {
	var parts, names []string
	for _, m := range p.unknown {
		parts = append(parts, fmt.Sprintf("input %s comes from %s.%s, known only after %s is applied", m.Variable, m.Producer, m.Output, m.Producer))
		names = append(names, m.Variable)
	}
	why = strings.Join(parts, "; ")
	if st.s.kind == KindTeardown {
		return nil, why // a destroy plan takes no inputs it lacks
	}
	pp, ok := p.r.(runner.PlaceholderPlanner)
	if !ok {
		return nil, why + fmt.Sprintf("; a %s component is not planned with placeholders", st.c.Type)
	}
	fmt.Fprintf(&st.log, "knit: planning %s ahead with placeholders for %s (known only after apply); this plan is shown, never applied\n",
		st.c.Name, strings.Join(names, ", "))
	opts.KnownOutputs = false // none is passed on: it may derive from a placeholder
	plan, err := pp.PlanPlaceholders(ctx, p.rc, p.in, names, opts)
	switch {
	case err == runner.ErrUnsupported:
		return nil, why + fmt.Sprintf("; a %s component is not planned with placeholders", st.c.Type)
	case errors.Is(err, runner.ErrUnsupported):
		return nil, why + "; not planned with a placeholder: " + firstLine(strings.TrimPrefix(err.Error(), runner.ErrUnsupported.Error()+": "))
	case err != nil:
		return nil, why + "; planned with a placeholder, the plan failed: " + firstLine(redact(err.Error(), st.secrets))
	}
	plan.File, plan.Checksum, plan.PlannedOutputs = "", "", nil
	for i := range plan.Resources {
		for j := range plan.Resources[i].Changes {
			if c := &plan.Resources[i].Changes[j]; c.New != runner.MaskedValue {
				c.New = runner.UnknownValue
			}
		}
	}
	return plan, ""
}

// fillEntry copies what a change set keeps of plan into e.
func fillEntry(e *store.ChangeSetComponent, plan *runner.Plan) {
	e.Resources = resourcesOf(plan)
	if plan != nil {
		e.Add, e.Change, e.Destroy, e.Destroying = plan.Add, plan.Change, plan.Destroy, plan.Destroying
	}
}

// resourcesOf lists plan's resources and actions, by address.
func resourcesOf(plan *runner.Plan) []store.ChangeSetResource {
	out := []store.ChangeSetResource{}
	if plan == nil {
		return out
	}
	for _, r := range plan.Resources {
		out = append(out, store.ChangeSetResource{Address: r.Address, Action: string(r.Action)})
	}
	slices.SortFunc(out, func(a, b store.ChangeSetResource) int { return strings.Compare(a.Address, b.Address) })
	return out
}

// recordChange records the change set of entries, or keeps the open one
// when it is the same change (a run that found the same plans waiting).
func (ch *changes) recordChange(entries map[string]store.ChangeSetComponent) {
	cs := store.ChangeSet{Env: ch.s.env.ID(), RunID: ch.s.run.ID, Revision: ch.s.run.Revision, CreatedAt: ch.s.e.now()}
	for _, name := range inGraphOrder(ch.s.env, slices.Sorted(maps.Keys(entries))) {
		cs.Components = append(cs.Components, entries[name])
	}
	cs.Checksum = ChangeSetChecksum(cs)
	open, err := ch.s.e.Store.ListChangeSets(ch.s.db, store.ChangeSetFilter{Env: ch.s.env.ID(), Statuses: []string{store.ChangeSetPending}, Limit: 1})
	if err != nil {
		ch.s.runFailed(fmt.Errorf("read the open change set: %w", err))
		return
	}
	if len(open) == 1 && open[0].Checksum == cs.Checksum {
		cs = open[0]
	} else if err := ch.s.e.Store.CreateChangeSet(ch.s.db, &cs); err != nil {
		ch.s.runFailed(fmt.Errorf("record the change set: %w", err))
		return
	}
	ch.s.result.ChangeSet = &cs
}

// inGraphOrder sorts names as they depend on each other: by level in
// env's graph, then by name (as results are).
func inGraphOrder(env *spec.Environment, names []string) []string {
	level := map[string]int{}
	if levels, err := env.Graph().Levels(); err == nil {
		for i, l := range levels {
			for _, n := range l {
				level[n] = i
			}
		}
	}
	slices.SortStableFunc(names, func(a, b string) int { return level[a] - level[b] })
	return names
}

// ChangeSetChecksum is the SHA-256 of what a change set shows: its
// environment, revision and every component's entry.
func ChangeSetChecksum(cs store.ChangeSet) string {
	body, _ := json.Marshal(struct {
		Env        string                     `json:"env"`
		Revision   int                        `json:"revision"`
		Components []store.ChangeSetComponent `json:"components"`
	}{cs.Env, cs.Revision, cs.Components})
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// covered reports whether the approved change set covers plan, a fresh
// plan of a component planned ahead in it; when it does not, differs says
// why ("" when the change set does not name the component).
func (ch *changes) covered(name string, plan *runner.Plan) (ok bool, differs string) {
	cs := ch.change
	if cs == nil {
		return false, ""
	}
	i := slices.IndexFunc(cs.Components, func(c store.ChangeSetComponent) bool { return c.Component == name })
	if i < 0 || cs.Components[i].ApprovalID != 0 {
		return false, "" // not in it, or held: its exact plan was approved
	}
	e := cs.Components[i]
	switch {
	case e.KnownAfterApply != "":
		return false, fmt.Sprintf("the approved change set #%d could not show the plan of %s (%s)", cs.ID, name, e.KnownAfterApply)
	case e.PlanError != "":
		return false, fmt.Sprintf("the approved change set #%d could not show the plan of %s (%s)", cs.ID, name, e.PlanError)
	}
	if d := planDiff(e, plan); d != "" {
		return false, fmt.Sprintf("the plan of %s differs from the approved change set #%d: %s", name, cs.ID, d)
	}
	return true, ""
}

// planDiff says how plan differs from what e showed, by resource address
// and action ("" when it does not).
func planDiff(e store.ChangeSetComponent, plan *runner.Plan) string {
	var diffs []string
	if e.Destroying != plan.Destroying {
		diffs = append(diffs, fmt.Sprintf("the plan is a destroy: %v, the approved change's: %v", plan.Destroying, e.Destroying))
	}
	shown := map[string]string{}
	for _, r := range e.Resources {
		shown[r.Address] = r.Action
	}
	now := resourcesOf(plan)
	for _, r := range now {
		was, ok := shown[r.Address]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("plan gained %s (%s), which the approved change did not show", r.Address, r.Action))
		case was != r.Action:
			diffs = append(diffs, fmt.Sprintf("plan would %s %s, where the approved change showed %s", r.Action, r.Address, was))
		}
		delete(shown, r.Address)
	}
	for _, r := range e.Resources {
		if _, ok := shown[r.Address]; ok {
			diffs = append(diffs, fmt.Sprintf("plan no longer has %s (%s), which the approved change showed", r.Address, r.Action))
		}
	}
	if len(now) == 0 && len(e.Resources) == 0 && (e.Add != plan.Add || e.Change != plan.Change || e.Destroy != plan.Destroy) {
		diffs = append(diffs, fmt.Sprintf("plan has +%d ~%d -%d, the approved change showed +%d ~%d -%d",
			plan.Add, plan.Change, plan.Destroy, e.Add, e.Change, e.Destroy))
	}
	return strings.Join(diffs, "; ")
}

// auditCovered records in the audit trail that a component's plan goes
// on by the approved change set, and whose approval that was.
func (ch *changes) auditCovered(st *step) error {
	cs := ch.change
	if err := ch.s.e.Store.AppendAudit(ch.s.db, store.AuditEvent{Env: ch.s.env.ID(), Actor: cs.DecidedBy, Action: "approve",
		Component: st.c.Name, Revision: ch.s.run.Revision, RunID: ch.s.run.ID, Reason: cs.Reason,
		Detail: fmt.Sprintf("change set #%d (%s): its plan matched the approved change", cs.ID, shortSum(cs.Checksum)),
		Time:   ch.s.e.now()}); err != nil {
		return fmt.Errorf("record the approval by change set #%d: %w", cs.ID, err)
	}
	return nil
}

// openChange loads the environment's approved change set for the run; one
// made for another revision is marked stale and not used.
func (ch *changes) openChange(ctx context.Context) error {
	sets, err := ch.s.e.Store.ListChangeSets(ctx, store.ChangeSetFilter{Env: ch.s.env.ID(), Statuses: []string{store.ChangeSetApproved}, Limit: 1})
	if err != nil || len(sets) == 0 {
		return err
	}
	cs := sets[0]
	if cs.Revision == ch.s.run.Revision {
		ch.change = &cs
		return nil
	}
	if !ch.s.applies() && ch.s.kind != KindTeardown {
		return nil
	}
	why := fmt.Sprintf("change set #%d was for revision %d, and the environment is now at revision %d", cs.ID, cs.Revision, ch.s.run.Revision)
	if err := ch.s.e.Store.DecideChangeSet(ctx, cs.ID, store.ChangeSetApproved, store.ChangeSetStale, ch.s.opts.Actor, why, ch.s.e.now()); err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	return nil
}

// closeChange records the approved change set applied once every
// component of it was applied (or found nothing to do).
func (ch *changes) closeChange() {
	cs := ch.change
	if cs == nil {
		return
	}
	for _, c := range cs.Components {
		cr := ch.s.result.Component(c.Component)
		if cr == nil || (cr.Status != Applied && cr.Status != NoChanges && cr.Status != UpToDate && cr.Status != Destroyed) {
			return
		}
	}
	err := ch.s.e.Store.DecideChangeSet(ch.s.db, cs.ID, store.ChangeSetApproved, store.ChangeSetApplied, cs.DecidedBy, cs.Reason, ch.s.e.now())
	if err != nil && !errors.Is(err, store.ErrConflict) {
		ch.s.runFailed(fmt.Errorf("record change set #%d as applied: %w", cs.ID, err))
	}
}
