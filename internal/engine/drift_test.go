package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

func TestDriftFindsDriftedAndAffectedComponents(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := h.applied(t, diamond)
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.InSync, "b": engine.InSync, "c": engine.InSync, "d": engine.InSync})
	if res.HasDrift() {
		t.Error("drift reported on an untouched environment")
	}

	h.r.Drift("c") // c's resources vanish: its plan re-creates them and changes its outputs
	applies := len(h.r.Calls("apply"))
	res, err = h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.InSync, "b": engine.InSync, "c": engine.Drifted, "d": engine.Affected})
	if got := strings.Join(res.Component("d").AffectedBy, ","); got != "c.token,c.zones" {
		t.Errorf("d affected by %q", got)
	}
	wantCause(t, res, "d", engine.ReasonUpstreamDrifted.Cause("c.token", "c.zones"))
	wantCause(t, res, "c", engine.ReasonDrifted.Cause())
	if !strings.Contains(res.Component("c").Reason, "fake.c") {
		t.Errorf("c's reason does not name the resource: %q", res.Component("c").Reason)
	}
	if len(h.r.Calls("apply")) != applies {
		t.Error("a drift check applied something")
	}
	if e, _ := h.st.Environment(ctx, "t/diamond"); e.Status != "drifted" {
		t.Errorf("environment status %q, want drifted", e.Status)
	}
	events, _ := h.st.Audit(ctx, store.AuditFilter{Env: "t/diamond"})
	if !hasAudit(events, "drift-found", "c") {
		t.Errorf("no drift-found audit event for c: %+v", events)
	}

	// A plain apply now re-applies c (its state says drifted), then d.
	res, err = h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Component("c").Status; st != engine.Applied || !h.r.Applied("c") {
		t.Errorf("apply after drift: c %q", st)
	}
}

// A component whose plan does not look at the world (a script without
// plan) is reported with drift unknown, not in sync, and what takes its
// outputs is checked against the world as usual.
func TestAnUncheckedComponentsDriftIsUnknownAndItsConsumersAreChecked(t *testing.T) {
	h := newHarness(t)
	h.r.Unchecked = map[string]bool{"a": true}
	ctx := context.Background()
	env := h.applied(t, diamond)
	h.r.Drift("c")
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Unknown, "b": engine.InSync, "c": engine.Drifted, "d": engine.Affected})
	if d := res.Component("a").Drift; d != engine.Unknown || !res.HasDrift() {
		t.Errorf("a's drift %q, HasDrift %v", d, res.HasDrift())
	}
}

func TestReconcileRestoresAutoApprovedAndHoldsTheRest(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	// b may be fixed at once; a and c need a person.
	env := parse(t, strings.Replace(strings.Replace(diamond, "autoApprove: true", "autoApprove: false", 1),
		"    - name: b\n", "    - name: b\n      autoApprove: true\n", 1))
	if _, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	h.r.Drift("b")
	h.r.Drift("c")
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, true)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.InSync, "b": engine.Applied, "c": engine.Awaiting, "d": engine.Waiting})
	if !h.r.Applied("b") || h.r.Applied("c") {
		t.Errorf("world after reconcile: b %v c %v", h.r.Applied("b"), h.r.Applied("c"))
	}
	pending, _ := h.st.ListApprovals(ctx, store.ApprovalFilter{Env: "t/diamond", Statuses: []string{store.ApprovalPending}})
	if len(pending) != 1 || pending[0].Component != "c" {
		t.Fatalf("pending approvals %+v", pending)
	}

	// A person approves c's exact plan; applying carries on to d without planning c again.
	plansOfC := countCalls(h, "plan", "c")
	if _, err := h.e.Decide(ctx, env, "c", true, "tester", "looks right"); err != nil {
		t.Fatal(err)
	}
	res, err = h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Component("c").Status; st != engine.Applied || !h.r.Applied("c") {
		t.Errorf("approved c: %q (%s)", st, res.Component("c").Reason)
	}
	if countCalls(h, "plan", "c") != plansOfC {
		t.Error("c was planned again instead of applying the approved plan")
	}
	if a, _ := h.st.Approval(ctx, pending[0].ID); a.Status != store.ApprovalApplied {
		t.Errorf("approval status %q, want applied", a.Status)
	}
	events, _ := h.st.Audit(ctx, store.AuditFilter{Env: "t/diamond"})
	if !hasAudit(events, "approve", "c") {
		t.Error("approval not in the audit trail")
	}
	for _, e := range events {
		if e.Action == "approve" && (e.Actor != "tester" || e.Reason != "looks right") {
			t.Errorf("approve event %+v", e)
		}
	}
}

func TestStaleApprovalIsRefused(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	doc := strings.Replace(diamond, "autoApprove: true", "autoApprove: false", 1)
	env := parse(t, doc)
	res, _ := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if res.Component("a").Status != engine.Awaiting {
		t.Fatalf("a: %q", res.Component("a").Status)
	}
	if _, err := h.e.Decide(ctx, env, "a", true, "tester", ""); err != nil {
		t.Fatal(err)
	}
	// The file changes after the approval: the approved plan must not be applied.
	changed := parse(t, strings.Replace(doc, "{name: size, value: 3}", "{name: size, value: 4}", 1))
	res, err := h.e.Apply(ctx, changed, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Component("a")
	if a.Status != engine.Awaiting || !strings.Contains(a.Reason, "revision 1") || !strings.Contains(a.Reason, "knit approve") {
		t.Errorf("a: %q: %s", a.Status, a.Reason)
	}
	if h.r.Applied("a") {
		t.Error("the stale plan was applied")
	}
	all, _ := h.st.ListApprovals(ctx, store.ApprovalFilter{Env: "t/diamond"})
	if len(all) != 2 || all[0].Status != store.ApprovalStale || all[1].Status != store.ApprovalPending {
		t.Errorf("approvals %+v", all)
	}
	// A plan of what is applied moves nothing: the pending plan (revision
	// 2) can still be approved. (A plan of an edited file that plans a from
	// other inputs outdates it: TestAPlanFromOtherInputsMakesAnApprovalStale.)
	if _, err := h.e.Plan(ctx, changed, engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Decide(ctx, changed, "a", true, "tester", ""); err != nil {
		t.Errorf("approving after a plan of what is applied: %v", err)
	}
	if _, err := h.e.Decide(ctx, env, "nope", true, "tester", ""); !errors.Is(err, engine.ErrNothingToApprove) {
		t.Errorf("decide on a component with nothing pending: %v", err)
	}
}

func TestApplyingANewerPlanClosesTheOpenApproval(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := parse(t, strings.Replace(diamond, "autoApprove: true", "autoApprove: false", 1))
	if res, _ := h.e.Apply(ctx, env, engine.Options{Actor: "tester"}); res.Component("a").Status != engine.Awaiting {
		t.Fatal("a is not waiting for approval")
	}
	if _, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	if pending, _ := h.st.ListApprovals(ctx, store.ApprovalFilter{Env: "t/diamond", Statuses: []string{store.ApprovalPending, store.ApprovalApproved}}); len(pending) != 0 {
		t.Errorf("approvals still open after a newer plan was applied: %+v", pending)
	}
	all, _ := h.st.ListApprovals(ctx, store.ApprovalFilter{Env: "t/diamond"})
	if len(all) != 1 || all[0].Status != store.ApprovalStale || !strings.Contains(all[0].Reason, "superseded") {
		t.Errorf("approvals %+v", all)
	}
}

func TestRejectRecordsWhoAndWhy(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := parse(t, strings.Replace(diamond, "autoApprove: true", "autoApprove: false", 1))
	_, _ = h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	a, err := h.e.Decide(ctx, env, "a", false, "tester", "not during the freeze")
	if err != nil || a.Status != store.ApprovalRejected {
		t.Fatalf("reject: %+v %v", a, err)
	}
	events, _ := h.st.Audit(ctx, store.AuditFilter{Env: "t/diamond"})
	if !hasAudit(events, "reject", "a") {
		t.Error("rejection not audited")
	}
}

func TestSelectiveReconcileLimitsTheRun(t *testing.T) {
	h := newHarness(t)
	doc := strings.Replace(diamond, "  components:\n", "  selectiveReconcile: {tagName: tier, tagValues: [core]}\n  components:\n", 1)
	doc = strings.Replace(doc, "    - name: a\n", "    - name: a\n      tags: [{name: tier, value: core}]\n", 1)
	res, err := h.e.Apply(context.Background(), parse(t, doc), engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Applied})
	skip := strings.Replace(doc, "tagValues: [core]}", "tagValues: [core], skipMode: true}", 1)
	res, err = h.e.Apply(context.Background(), parse(t, skip), engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"b": engine.Applied, "c": engine.Applied, "d": engine.Applied})
}

func countCalls(h *harness, op, comp string) int {
	n := 0
	for _, c := range h.r.Calls(op) {
		if c.Component == comp {
			n++
		}
	}
	return n
}

func hasAudit(events []store.AuditEvent, action, comp string) bool {
	for _, e := range events {
		if e.Action == action && e.Component == comp {
			return true
		}
	}
	return false
}

func TestDriftPoliciesDecidePerComponent(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := parse(t, wideEnv(3)) // independent components, every one autoApprove
	if _, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"c00", "c01", "c02"} {
		h.r.Drift(c)
	}
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "schedule", Policies: map[string]string{
		"c00": spec.DriftReconcile, "c01": spec.DriftApprove, "c02": spec.DriftAlert}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(res); got["c00"] != engine.Applied || got["c01"] != engine.Awaiting || got["c02"] != engine.Drifted {
		t.Fatalf("statuses %v: want c00 applied (reconcile), c01 awaiting (approve), c02 drifted (alert)", got)
	}
	if !h.r.Applied("c00") || h.r.Applied("c02") {
		t.Fatalf("world: c00 fixed %v, c02 fixed %v", h.r.Applied("c00"), h.r.Applied("c02"))
	}
}

// TestAlertOnlyDriftLeavesTheEnvironmentDrifted: a reconciling drift run
// (the schedule's) of components that are all policy: alert fixes
// nothing, so the environment stays drifted and the run is audited as a
// drift check, not a reconcile.
func TestAlertOnlyDriftLeavesTheEnvironmentDrifted(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := parse(t, wideEnv(2))
	if _, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	h.r.Drift("c00")
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "schedule", Policies: map[string]string{
		"c00": spec.DriftAlert, "c01": spec.DriftAlert}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(res); got["c00"] != engine.Drifted || h.r.Applied("c00") {
		t.Fatalf("statuses %v, c00 fixed %v: want c00 drifted and left alone", got, h.r.Applied("c00"))
	}
	if e, _ := h.st.Environment(ctx, env.ID()); e.Status != "drifted" {
		t.Fatalf("environment %s after an alert-only drift run, want drifted", e.Status)
	}
	events, _ := h.st.Audit(ctx, store.AuditFilter{Env: env.ID()})
	var actions []string
	for _, e := range events {
		if e.RunID == res.RunID {
			actions = append(actions, e.Action)
		}
	}
	if !slices.Contains(actions, "drift-check") || slices.Contains(actions, "reconcile") {
		t.Fatalf("the drift run is audited as %q, want a drift-check", actions)
	}
}

// chain4: a → b → c → d, each taking the one before's output.
const chain4 = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: chain}
spec:
  teamName: t
  envName: chain
  autoApprove: true
  components:
    - {name: a, type: script, script: {apply: "true"}, outputs: [{name: id}]}
    - {name: b, type: script, script: {apply: "true"}, outputs: [{name: url}], variables: [{name: parent, valueFrom: a.id}]}
    - {name: c, type: script, script: {apply: "true"}, variables: [{name: parent, valueFrom: a.id}]}
    - {name: d, type: script, script: {apply: "true"}, dependsOn: [c]}
`

func TestDriftChecksEveryComponentAtOnceWhateverTheDepth(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := h.applied(t, chain4)
	// Every plan waits until all four have started: drift only passes if
	// it checks the whole chain at once rather than in dependency order.
	var mu sync.Mutex
	started, all := 0, make(chan struct{})
	h.r.Hook = func(ctx context.Context, op, comp string) error {
		if op != "plan" {
			return nil
		}
		mu.Lock()
		if started++; started == 4 {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-time.After(hangGuard): // never, unless the checks run one after another
			return fmt.Errorf("%s planned alone: drift checks ran one after another", comp)
		}
	}
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester", Parallelism: 4}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.InSync, "b": engine.InSync, "c": engine.InSync, "d": engine.InSync})
}

// TestDriftJudgesAComponentWhileLaterChecksStillRun: without a reconcile,
// a component is judged (its drift run finished in the store) as soon as
// its own check and its upstream's judgements are done, not after every
// check of the environment has ended.
func TestDriftJudgesAComponentWhileLaterChecksStillRun(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := h.applied(t, chain4)
	judged := func(comp string) bool {
		crs, err := h.st.LatestComponentRuns(ctx, env.ID())
		if err != nil {
			t.Error(err)
		}
		for _, cr := range crs {
			if cr.Component == comp && cr.Operation == "drift" && !cr.FinishedAt.IsZero() {
				return true
			}
		}
		return false
	}
	h.r.Hook = func(ctx context.Context, op, comp string) error {
		if op != "plan" || comp != "d" {
			return nil
		}
		for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if judged("a") && judged("b") && judged("c") {
				return nil
			}
		}
		return errors.New("a, b and c were not all judged while d's check ran")
	}
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester", Parallelism: 4}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.InSync, "b": engine.InSync, "c": engine.InSync, "d": engine.InSync})
}

// TestAnInSyncCheckLeavesTheStoredStateAsItIs: a drift check that finds a
// component in sync writes nothing to its state (its time still says when
// it last changed); one that finds drift records it.
func TestAnInSyncCheckLeavesTheStoredStateAsItIs(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := h.applied(t, chain4)
	before, err := h.st.ComponentStates(ctx, env.ID())
	if err != nil {
		t.Fatal(err)
	}
	h.r.Drift("d")
	if _, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, false); err != nil {
		t.Fatal(err)
	}
	after, err := h.st.ComponentStates(ctx, env.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"a", "b", "c"} {
		if !after[c].UpdatedAt.Equal(before[c].UpdatedAt) || after[c].Status != before[c].Status {
			t.Errorf("%s, in sync: state %s at %s, was %s at %s", c, after[c].Status, after[c].UpdatedAt, before[c].Status, before[c].UpdatedAt)
		}
	}
	if after["d"].Status == before["d"].Status || !after["d"].UpdatedAt.After(before["d"].UpdatedAt) {
		t.Errorf("d, drifted: state %s at %s, was %s at %s", after["d"].Status, after["d"].UpdatedAt, before["d"].Status, before["d"].UpdatedAt)
	}
}

func TestADriftCheckThatFailsSkipsWhatDependsOnItAndLeavesNothingRunning(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := h.applied(t, chain4)
	h.r.Fail = map[string]map[string]error{"c": {"plan": errors.New("provider unreachable")}}
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.InSync, "b": engine.InSync, "c": engine.Failed, "d": engine.Skipped})
	if d := res.Component("d"); d.Code != "skipped: upstream c failed" {
		t.Errorf("d code %q", d.Code)
	}
	wantCause(t, res, "d", engine.ReasonUpstreamFailed.Cause("c"))
	// d was checked (all checks run at once) but never judged: its
	// component run is finished as skipped, not left running.
	crs, err := h.st.ComponentRuns(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, cr := range crs {
		got[cr.Component] = cr.Status
		if cr.FinishedAt.IsZero() {
			t.Errorf("%s: component run left unfinished (%s)", cr.Component, cr.Status)
		}
	}
	want := map[string]string{"a": "in sync", "b": "in sync", "c": "failed", "d": "skipped"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored component runs %v, want %v", got, want)
	}
}

func TestReconcileAppliesWhatUpstreamDriftAffectsOnlyAfterTheUpstreamFix(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := h.applied(t, diamond)
	h.r.Drift("c") // re-creating c changes its outputs, which d takes
	start := time.Now()
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Component("d").Status; st != engine.Applied && st != engine.NoChanges {
		t.Fatalf("d after reconcile: %q (%s)", st, res.Component("d").Reason)
	}
	var cFixed time.Time
	for _, call := range h.r.Calls("apply") {
		if call.Component == "c" && call.Start.After(start) {
			cFixed = call.End
		}
	}
	if cFixed.IsZero() {
		t.Fatal("c was not re-applied")
	}
	// d was checked with the others, at once; its reconcile (a new plan
	// with c's new outputs, then the apply) waits for c's fix.
	var replanned bool
	for _, call := range h.r.Calls("") {
		if call.Component != "d" || !call.Start.After(start) {
			continue
		}
		if call.Op == "apply" && call.Start.Before(cFixed) {
			t.Error("d was applied before c's fix ended")
		}
		if call.Op == "plan" && !call.Start.Before(cFixed) {
			replanned = true
			if call.Inputs["token"] != "s3cr3t-token" {
				t.Errorf("d re-planned with inputs %v", call.Inputs)
			}
		}
	}
	if !replanned {
		t.Error("d was not planned again after c's fix")
	}
}
