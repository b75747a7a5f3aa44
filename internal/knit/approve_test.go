package knit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// sized is pay/prod with app's size variable at n: a new plan of app.
func sized(n int) string {
	return strings.Replace(envDoc("pay", "prod"), "{name: size, value: 1}", fmt.Sprintf("{name: size, value: %d}", n), 1)
}

// submitted records what the Decide action submits, and fails when told.
type submitted struct {
	reqs []knit.RunRequest
	envs []string
	err  error
}

func (s *submitted) Enqueue(req knit.RunRequest, env string) (string, error) {
	s.reqs, s.envs = append(s.reqs, req), append(s.envs, env)
	return "run-1", s.err
}

// TestApproveAndApplySubmitsTheApply: the one "approve then apply" of the
// API, the dashboard and the CLI. An approval hands the submitter the
// apply that carries it out, of the environment's ID however the request
// named it, with who, why and through what; a rejection, a refused
// decision and a nil submitter submit nothing; a submit that fails
// returns its error with the decision recorded.
func TestApproveAndApplySubmitsTheApply(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	apply(t, k, parse(t, envDoc("pay", "prod")), "alice", false)
	waiting := func() view.Approval {
		t.Helper()
		pending, err := knit.NewRecords(k).Approvals(ctx, "pay/prod", store.ApprovalPending)
		if err != nil || len(pending) != 1 {
			t.Fatalf("approvals %+v %v", pending, err)
		}
		return pending[0]
	}

	var sub submitted
	if _, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: "prod", Component: "app", Approve: true, Actor: "bob",
		PlanChecksum: "not-the-plan"}, &sub).Run(ctx); !errors.Is(err, knit.ErrChecksumMismatch) || len(sub.reqs) != 0 {
		t.Fatalf("a refused decision: %v, submitted %+v", err, sub.reqs)
	}

	a := waiting()
	d, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: "prod", Component: "app", Approve: true, Actor: "bob",
		Reason: "ok", Source: "api", PlanChecksum: a.PlanChecksum}, &sub).Run(ctx)
	if err != nil || d.RunID != "run-1" || d.Approval.Status != store.ApprovalApproved {
		t.Fatalf("approve: %+v %q %v", d, d.RunID, err)
	}
	want := knit.RunRequest{Kind: engine.KindApply, EnvRef: "pay/prod", Actor: "bob", Reason: "ok", Source: "api"}
	if len(sub.reqs) != 1 || sub.envs[0] != "pay/prod" || sub.reqs[0].Kind != want.Kind || sub.reqs[0].EnvRef != want.EnvRef ||
		sub.reqs[0].Actor != want.Actor || sub.reqs[0].Reason != want.Reason || sub.reqs[0].Source != want.Source {
		t.Fatalf("submitted %+v to %v, want %+v to pay/prod", sub.reqs, sub.envs, want)
	}
	// The approved plan applies as submitted.
	if res, err := knit.NewRun(k, sub.reqs[0]).Run(ctx); err != nil || res.Component("app").Status != engine.Applied {
		t.Fatalf("the submitted apply: %+v %v", res, err)
	}

	// A new plan waits; a rejection and a nil submitter submit nothing.
	apply(t, k, parse(t, sized(2)), "alice", false)
	sub = submitted{}
	a = waiting()
	if d, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: "pay/prod", Component: "app", Approve: true,
		Actor: "bob", PlanChecksum: a.PlanChecksum}, nil).Run(ctx); err != nil || d.RunID != "" {
		t.Fatalf("record only: %q %v", d.RunID, err)
	}
	apply(t, k, parse(t, sized(3)), "alice", false)
	a = waiting()
	if d, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: "pay/prod", Component: "app", Approve: false,
		Actor: "bob", PlanChecksum: a.PlanChecksum}, &sub).Run(ctx); err != nil || d.RunID != "" || len(sub.reqs) != 0 {
		t.Fatalf("reject: %q %v, submitted %+v", d.RunID, err, sub.reqs)
	}

	// A queue that refuses: the error comes back, the approval stays.
	apply(t, k, parse(t, sized(4)), "alice", false)
	a = waiting()
	sub = submitted{err: errors.New("the server is shutting down")}
	d, err = knit.NewDecide(k, knit.DecideRequest{EnvRef: "pay/prod", Component: "app", Approve: true,
		Actor: "bob", PlanChecksum: a.PlanChecksum}, &sub).Run(ctx)
	if err == nil || d.Approval.Status != store.ApprovalApproved {
		t.Fatalf("refused submit: %+v %v", d, err)
	}
}
