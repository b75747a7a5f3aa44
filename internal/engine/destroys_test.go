package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// appliedSpec loads the spec env is applied at, as knit does for ENV (the
// CLI's and the server's approve, a teardown of a removed git file).
func (h *harness) appliedSpec(t *testing.T, env string) *spec.Environment {
	t.Helper()
	ctx := context.Background()
	rec, err := h.st.Environment(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := h.st.Revision(ctx, env, rec.AppliedRevision)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.FromJSON(rev.Spec, rev.Source, rev.Root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// onlyDestroysSince fails if the fake runner planned or applied
// anything but destroys since calls calls ago.
func (h *harness) onlyDestroysSince(t *testing.T, calls int) {
	t.Helper()
	for _, c := range h.r.Calls("")[calls:] {
		switch c.Op {
		case "destroy", "fingerprint":
		case "apply":
			// The fake's apply of a destroy plan removes the component
			// from its world; of anything else, puts it back.
			if h.r.Applied(c.Component) {
				t.Errorf("%s was applied again", c.Component)
			}
		default:
			t.Errorf("%s ran %s while a teardown was carried on", c.Component, c.Op)
		}
	}
}

// A teardown of ENV (the server's, when an environment's file is removed
// from git; the API's and the dashboard's) waits for approval where
// autoApprove is false. Approving it, and the apply of ENV that follows,
// carries the teardown on: everything is destroyed, nothing applied again.
func TestApprovingAGatedTeardownOfTheAppliedSpecDestroys(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, gated), engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Teardown(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "git", Reason: "the file was removed"})
	if err != nil || res.Status != store.StatusAwaiting || res.Component("d").Status != engine.Awaiting {
		t.Fatalf("gated teardown: %+v %v", res, err)
	}
	if d := res.Component("d"); !strings.HasPrefix(d.Reason, "teardown (the file was removed): will be destroyed") {
		t.Errorf("d waits with %q; want it to say the teardown and its cause", d.Reason)
	}
	calls := len(h.r.Calls(""))
	if _, err := h.e.Decide(ctx, h.appliedSpec(t, "t/diamond"), "d", true, "alice", "decommission"); err != nil {
		t.Fatal(err)
	}
	res, err = h.e.Apply(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Destroyed, "b": engine.Destroyed, "c": engine.Destroyed, "d": engine.Destroyed})
	if res.Kind != engine.KindTeardown || res.Status != store.StatusSucceeded {
		t.Errorf("the approval's run: %s %s, want a teardown that succeeded", res.Kind, res.Status)
	}
	h.onlyDestroysSince(t, calls)
	for _, c := range []string{"a", "b", "c", "d"} {
		if h.r.Applied(c) {
			t.Errorf("%s survived the approved teardown", c)
		}
	}
	if rec, _ := h.st.Environment(ctx, "t/diamond"); rec.Status != "torn-down" {
		t.Errorf("environment %q, want torn-down", rec.Status)
	}
	all, _ := h.st.ListApprovals(ctx, store.ApprovalFilter{Env: "t/diamond"})
	if len(all) != 1 || all[0].Status != store.ApprovalApplied {
		t.Errorf("approvals %+v, want the one applied", all)
	}
	// ENV now means torn down: applying it again re-creates nothing.
	calls = len(h.r.Calls(""))
	if _, err := h.e.Apply(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	h.onlyDestroysSince(t, calls)
}

// A teardown of some components of ENV, gated, destroys those (and what
// depends on them) once approved, and keeps the rest.
func TestApprovingAGatedTeardownOfSomeComponentsDestroysThem(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, gated), engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Teardown(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "tester", Components: []string{"c"}})
	if err != nil || res.Component("d").Status != engine.Awaiting || res.Component("c").Status != engine.Waiting {
		t.Fatalf("gated teardown of c: %+v %v", res, err)
	}
	calls := len(h.r.Calls(""))
	if _, err := h.e.Decide(ctx, h.appliedSpec(t, "t/diamond"), "d", true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	res, err = h.e.Apply(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusSucceeded || res.Component("c").Status != engine.Destroyed || res.Component("d").Status != engine.Destroyed {
		t.Fatalf("after approval: %s, c %s, d %s", res.Status, res.Component("c").Status, res.Component("d").Status)
	}
	h.onlyDestroysSince(t, calls)
	if !h.r.Applied("a") || !h.r.Applied("b") || h.r.Applied("c") || h.r.Applied("d") {
		t.Errorf("a, b must stay and c, d go: a %v b %v c %v d %v", h.r.Applied("a"), h.r.Applied("b"), h.r.Applied("c"), h.r.Applied("d"))
	}
}

// A component removed from the file, gated, is destroyed once approved,
// by the apply of ENV that follows the approval.
func TestApprovingTheDestroyOfARemovedComponentDestroysIt(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, gated), engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	if res, err := h.e.Apply(ctx, parse(t, strings.Split(gated, "    - name: d\n")[0]), engine.Options{Actor: "tester"}); err != nil || res.Component("d").Status != engine.Awaiting {
		t.Fatalf("apply without d: %+v %v", res, err)
	}
	calls := len(h.r.Calls(""))
	if _, err := h.e.Decide(ctx, h.appliedSpec(t, "t/diamond"), "d", true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Apply(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "alice"})
	if err != nil || res.Status != store.StatusSucceeded || res.Component("d").Status != engine.Destroyed {
		t.Fatalf("after approval: %+v %v", res, err)
	}
	h.onlyDestroysSince(t, calls)
	if h.r.Applied("d") {
		t.Error("d survived")
	}
}

// A plan of an edited file that plans a waiting component from other
// inputs outdates its approval: approving it is refused as stale, with the
// reason, and the environment stays as it was. A fresh plan can then be
// approved and applied. A plan from the same inputs leaves it alone.
func TestAPlanFromOtherInputsMakesAnApprovalStale(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, gated), engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(gated, "{name: replicas, value: 2}", "{name: replicas, value: 3}", 1)
	if res, err := h.e.Apply(ctx, parse(t, v2), engine.Options{Actor: "tester"}); err != nil || res.Component("d").Status != engine.Awaiting {
		t.Fatalf("gated apply: %+v %v", res, err)
	}
	// A plan of what is applied, or of an edit elsewhere, plans d from the same inputs.
	for _, doc := range []string{v2, strings.Replace(v2, "{name: size, value: 3}", "{name: size, value: 4}", 1)} {
		if _, err := h.e.Plan(ctx, parse(t, doc), engine.Options{Actor: "tester"}); err != nil {
			t.Fatal(err)
		}
		if a, err := h.st.OpenApproval(ctx, "t/diamond", "d"); err != nil || a.Status != store.ApprovalPending {
			t.Fatalf("a plan from the same inputs disturbed the approval: %+v %v", a, err)
		}
	}
	// knit plan -f of an edited file: d's inputs move.
	if _, err := h.e.Plan(ctx, parse(t, strings.Replace(v2, "{name: replicas, value: 3}", "{name: replicas, value: 4}", 1)), engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.Decide(ctx, h.appliedSpec(t, "t/diamond"), "d", true, "alice", "")
	if !errors.Is(err, engine.ErrStale) || !strings.Contains(err.Error(), "planned d from another spec, module, inputs or upstream outputs") {
		t.Fatalf("approval after a plan from other inputs: %v, want ErrStale saying why", err)
	}
	rec, _ := h.st.Environment(ctx, "t/diamond")
	states, _ := h.st.ComponentStates(ctx, "t/diamond")
	if rec.Status != "awaiting-approval" || states["d"].Status != "awaiting-approval" || rec.AppliedRevision != 2 {
		t.Fatalf("the environment moved: %+v, d %q", rec, states["d"].Status)
	}
	// Planned again (knit apply ENV), approved, applied.
	if res, err := h.e.Apply(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "tester"}); err != nil || res.Component("d").Status != engine.Awaiting {
		t.Fatalf("re-plan: %+v %v", res, err)
	}
	if _, err := h.e.Decide(ctx, h.appliedSpec(t, "t/diamond"), "d", true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Apply(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "alice"})
	if err != nil || res.Status != store.StatusSucceeded || res.Component("d").Status != engine.Applied {
		t.Fatalf("apply of the fresh approval: %+v %v", res, err)
	}
}

// An approved plan the tool refuses as stale (runner.ErrStalePlan: the
// state or the inputs moved, nothing changed) is not a failure: the
// approval is marked stale with the tool's reason and the component is
// planned again, the same kind of change, for a fresh approval. The
// environment keeps waiting; it is never failed.
func TestAnApprovedPlanTheToolRefusesIsPlannedAgainTheSameKind(t *testing.T) {
	for _, destroy := range []bool{false, true} {
		t.Run(map[bool]string{false: "apply", true: "destroy"}[destroy], func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			if _, err := h.e.Apply(ctx, parse(t, gated), engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
				t.Fatal(err)
			}
			var res *engine.Result
			var err error
			if destroy {
				res, err = h.e.Teardown(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "tester"})
			} else {
				res, err = h.e.Apply(ctx, parse(t, strings.Replace(gated, "{name: replicas, value: 2}", "{name: replicas, value: 3}", 1)), engine.Options{Actor: "tester"})
			}
			if err != nil || res.Component("d").Status != engine.Awaiting {
				t.Fatalf("gated run: %+v %v", res, err)
			}
			if _, err := h.e.Decide(ctx, h.appliedSpec(t, "t/diamond"), "d", true, "alice", ""); err != nil {
				t.Fatal(err)
			}
			h.r.Fail = map[string]map[string]error{"d": {"apply": fmt.Errorf("Saved plan is stale: %w", runner.ErrStalePlan)}}
			res, err = h.e.Apply(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			d := res.Component("d")
			if res.Status != store.StatusAwaiting || d.Status != engine.Awaiting || !strings.Contains(d.Reason, "the tool refused it: Saved plan is stale") {
				t.Fatalf("after the refusal: run %s, d %s (%s)", res.Status, d.Status, d.Reason)
			}
			if d.Plan == nil || d.Plan.Destroying != destroy {
				t.Fatalf("d was planned again as %+v, want destroying=%v", d.Plan, destroy)
			}
			rec, _ := h.st.Environment(ctx, "t/diamond")
			all, _ := h.st.ListApprovals(ctx, store.ApprovalFilter{Env: "t/diamond"})
			if rec.Status != "awaiting-approval" || len(all) != 2 || all[0].Status != store.ApprovalStale || all[1].Status != store.ApprovalPending {
				t.Fatalf("environment %q, approvals %+v", rec.Status, all)
			}
			h.r.Fail = nil
			if _, err := h.e.Decide(ctx, h.appliedSpec(t, "t/diamond"), "d", true, "alice", ""); err != nil {
				t.Fatal(err)
			}
			res, err = h.e.Apply(ctx, h.appliedSpec(t, "t/diamond"), engine.Options{Actor: "alice"})
			if err != nil || res.Status != store.StatusSucceeded || h.r.Applied("d") == destroy {
				t.Fatalf("the fresh approval: %+v %v, d exists %v", res, err, h.r.Applied("d"))
			}
		})
	}
}
