package engine_test

import (
	"context"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
)

// gated is the diamond where d waits for a person.
var gated = strings.Replace(diamond, "    - name: d\n", "    - name: d\n      autoApprove: false\n", 1)

func TestTeardownTrueOnAGatedComponentWaitsForApprovalThenDestroys(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, gated), engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	down := parse(t, strings.Replace(gated, "  autoApprove: true\n", "  autoApprove: true\n  teardown: true\n", 1))
	appliesBefore := len(h.r.Calls("apply"))
	res, err := h.e.Apply(ctx, down, engine.Options{Actor: "tester", Reason: "decommission"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusAwaiting || res.Component("d").Status != engine.Awaiting {
		t.Fatalf("run %s, d %s (%s)", res.Status, res.Component("d").Status, res.Component("d").Reason)
	}
	if p := res.Component("d").Plan; p == nil || !p.Destroying || p.Destroy == 0 {
		t.Fatalf("d's plan %+v, want a destroy plan", p)
	}
	// The teardown walks the graph reversed: d is what the others depend
	// on no more, their dependent, not their upstream.
	for _, c := range []string{"a", "b", "c"} {
		if got := res.Component(c); got.Status != engine.Waiting || got.Code != "waiting: dependent d awaiting approval" ||
			got.Reason != "waiting: dependent d awaiting approval by an operator" {
			t.Fatalf("%s: %s %q %q, want waiting on its dependent d", c, got.Status, got.Code, got.Reason)
		}
		wantCause(t, res, c, engine.ReasonDependentAwaitingApproval.Cause("d"))
	}
	if why := res.Component("d").Reason; !strings.HasPrefix(why, "teardown (decommission): will be destroyed") {
		t.Fatalf("d's reason %q, want the teardown and its reason", why)
	}
	if n := len(h.r.Calls("destroy")) + len(h.r.Calls("apply")) - appliesBefore; n != 0 {
		t.Fatalf("something was destroyed before approval (%d calls)", n)
	}
	if _, err := h.e.Decide(ctx, down, "d", true, "alice", "approved in CAB-12"); err != nil {
		t.Fatal(err)
	}
	res, err = h.e.Apply(ctx, down, engine.Options{Actor: "tester"})
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("after approval: %v %v", res, err)
	}
	for _, c := range []string{"a", "b", "c", "d"} {
		if res.Component(c).Status != engine.Destroyed {
			t.Fatalf("%s: %s", c, res.Component(c).Status)
		}
	}
	audit, _ := h.st.Audit(ctx, store.AuditFilter{})
	var approve, teardown bool
	for _, e := range audit {
		approve = approve || e.Action == "approve" && e.Actor == "alice" && e.Reason == "approved in CAB-12"
		teardown = teardown || e.Action == "teardown" && e.Actor == "tester" && e.Reason == "decommission"
	}
	if !approve || !teardown {
		t.Fatalf("audit trail lacks the teardown or the approval: %+v", audit)
	}
}

func TestAComponentRemovedFromTheFileIsPlannedDestroyedAndGated(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, gated), engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	withoutD := parse(t, strings.Split(gated, "    - name: d\n")[0])
	plan, err := h.e.Plan(ctx, withoutD, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if d := plan.Component("d"); d == nil || d.Status != engine.Planned || d.Reason != "removed from file: will be destroyed" {
		t.Fatalf("plan of d: %+v", d)
	}
	res, err := h.e.Apply(ctx, withoutD, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Component("d").Status != engine.Awaiting {
		t.Fatalf("d %s: its last definition said autoApprove: false", res.Component("d").Status)
	}
	// Teardown destroys it too, though the file no longer has it.
	res, err = h.e.Teardown(ctx, withoutD, engine.Options{Actor: "tester", AutoApprove: true})
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("teardown: %v %v", res, err)
	}
	if d := res.Component("d"); d == nil || d.Status != engine.Destroyed {
		t.Fatalf("teardown left d: %+v", d)
	}
	order := []string{}
	for _, c := range h.r.Calls("destroy") {
		order = append(order, c.Component)
	}
	if len(order) != 4 || order[0] != "d" || order[3] != "a" {
		t.Fatalf("destroy order %v: d (a dependent) first, a last", order)
	}
}

func TestAnUngatedRemovedComponentIsDestroyedByApply(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, diamond), engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Apply(ctx, parse(t, strings.Split(diamond, "    - name: d\n")[0]), engine.Options{Actor: "tester"})
	if err != nil || res.Status != store.StatusSucceeded || res.Component("d").Status != engine.Destroyed {
		t.Fatalf("apply without d: %v %v", res, err)
	}
	states, _ := h.st.ComponentStates(ctx, "t/diamond")
	if states["d"].Status != "destroyed" {
		t.Fatalf("d's state %q", states["d"].Status)
	}
}

func TestAPlanOfAnEditedFileMovesNothing(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := parse(t, gated)
	if _, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	edited := parse(t, strings.Replace(gated, "{name: replicas, value: 2}", "{name: replicas, value: 9}", 1))
	if _, err := h.e.Plan(ctx, edited, engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	rec, err := h.st.Environment(ctx, "t/diamond")
	if err != nil || rec.AppliedRevision != 1 || rec.Revision != 1 {
		t.Fatalf("after a plan: %+v %v, want applied and latest revision 1", rec, err)
	}
	res, err := h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, false)
	if err != nil || res.HasDrift() {
		t.Fatalf("drift after a plan of an edited file: %v %v", res, err)
	}
	// A pending approval (d drifted, reconcile waits for a person) survives
	// a plan that plans d from the same inputs (one from other inputs
	// outdates it: TestAPlanFromOtherInputsMakesAnApprovalStale).
	h.r.Drift("d")
	if res, _ := h.e.Drift(ctx, env, engine.Options{Actor: "tester"}, true); res.Component("d").Status != engine.Awaiting {
		t.Fatalf("d %s", res.Component("d").Status)
	}
	if _, err := h.e.Plan(ctx, env, engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Decide(ctx, env, "d", true, "tester", ""); err != nil {
		t.Fatalf("the pending approval went stale after a plan: %v", err)
	}
	if res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"}); err != nil || res.Component("d").Status != engine.Applied {
		t.Fatalf("apply of the approved plan: %v %v", res, err)
	}
}
