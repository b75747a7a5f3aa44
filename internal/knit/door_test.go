package knit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/view"
)

const noTeardown = "package knit\n\ndeny contains \"no teardown of prod\" if input.run.kind == \"teardown\"\n"

// recordRepoPolicies records, as GitOps does when it processes a commit,
// a policies/ folder denying teardowns, and that GitOps manages envs.
func recordRepoPolicies(t *testing.T, k *knit.Knit, envs ...string) {
	t.Helper()
	tree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree, "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "policies", "no_teardown.rego"), []byte(noTeardown), 0o644); err != nil {
		t.Fatal(err)
	}
	kv, err := knit.RepoPolicySettings("c0ffee", tree)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range envs {
		kv[knit.SettingGitEnv+e] = "{}"
	}
	if err := k.State().SetSettings(context.Background(), kv); err != nil {
		t.Fatal(err)
	}
}

// A run that names a GitOps environment by ID (as the API, the dashboard,
// the CLI, a schedule do: no commit's tree) is judged by the recorded
// repository policies; an environment GitOps does not manage is not.
func TestTheRepositoryPoliciesJudgeARunByName(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	apply(t, k, parse(t, envDoc("pay", "prod")), "alice", true)
	apply(t, k, parse(t, envDoc("pay", "dev")), "alice", true)
	recordRepoPolicies(t, k, "pay/prod")

	res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindTeardown, EnvRef: "pay/prod", AutoApprove: true, Actor: "bob", Source: "api"}).Run(ctx)
	if err != nil && res == nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusFailed || !strings.Contains(res.Error, "denied by policy: policies/no_teardown.rego:3 deny") {
		t.Fatalf("teardown of pay/prod: %s %q, want denied by policies/no_teardown.rego", res.Status, res.Error)
	}
	for _, c := range res.Components {
		if c.ReasonCode != string(engine.ReasonPolicyDenied) {
			t.Errorf("%s: %s, want PolicyDenied", c.Name, c.ReasonCode)
		}
	}
	res, err = knit.NewRun(k, knit.RunRequest{Kind: engine.KindTeardown, EnvRef: "pay/dev", AutoApprove: true, Actor: "bob"}).Run(ctx)
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("teardown of pay/dev, which GitOps does not manage: %+v %v", res, err)
	}
}

// failingSettings is a store whose settings cannot be read.
type failingSettings struct{ store.Store }

func (failingSettings) Setting(context.Context, string) (string, error) {
	return "", errors.New("disk I/O error")
}

// A store that cannot say whether GitOps manages the environment, or
// what its policies are, fails the run closed: never "no policies".
func TestAStoreFailureReadingThePoliciesFailsTheRunClosed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir, Store: failingSettings{st},
		Runners: map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: parse(t, envDoc("pay", "prod")), AutoApprove: true}).Run(ctx)
	if res == nil || res.Status != store.StatusFailed || !strings.Contains(res.Error, "disk I/O error") {
		t.Fatalf("apply with unreadable policies: %+v %v, want failed naming the store's error", res, err)
	}
	for _, c := range res.Components {
		if c.Status == engine.Applied {
			t.Errorf("%s applied although its policies could not be read", c.Name)
		}
	}
}

// The door authorizes the caller a request carries (a queued run's), by
// the live token's teams and role, against the resolved environment:
// another team's token, a viewer, a revoked token are refused, and
// nothing runs.
func TestTheDoorAuthorizesTheCallerARequestCarries(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	apply(t, k, parse(t, strings.Replace(envDoc("pay", "prod"), "metadata: {name: prod}", "metadata: {name: ops}", 1)), "alice", true)
	for _, tok := range []struct{ name, role, team string }{
		{"ops-op", store.RoleOperator, "ops"}, {"pay-viewer", store.RoleViewer, "pay"}, {"pay-op", store.RoleOperator, "pay"}, {"gone", store.RoleAdmin, ""},
	} {
		var teams []string
		if tok.team != "" {
			teams = []string{tok.team}
		}
		if _, _, err := knit.NewCreateToken(k, tok.name, tok.role, teams, "root").Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := knit.NewRevokeToken(k, "gone", "root").Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ token, ref string }{{"ops-op", "pay/prod"}, {"ops-op", "ops"}, {"pay-viewer", "pay/prod"}, {"gone", "pay/prod"}} {
		for _, kind := range []store.RunKind{engine.KindTeardown, engine.KindApply, engine.KindRollback} {
			_, err := knit.NewRun(k, knit.RunRequest{Kind: kind, EnvRef: c.ref, AutoApprove: true, Caller: &knit.Caller{Token: c.token}}).Start(ctx)
			if !errors.Is(err, knit.ErrForbidden) {
				t.Errorf("%s run of %s by %s: %v, want forbidden", kind, c.ref, c.token, err)
			}
		}
	}
	_, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, EnvRef: "pay/prod", Caller: &knit.Caller{Token: "pay-op"},
		OverridePolicy: "because"}).Run(ctx)
	if !errors.Is(err, knit.ErrForbidden) {
		t.Errorf("an operator overriding a policy: %v, want forbidden", err)
	}
	res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindTeardown, EnvRef: "pay/prod", AutoApprove: true, Caller: &knit.Caller{Token: "pay-op"}}).Run(ctx)
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("the team's operator tearing down: %+v %v", res, err)
	}
}

// knit rollback --to N goes only to a revision that applied and verified:
// a revision policy denied, a newer one, an unknown one are refused
// (ErrNoGoodRevision), and nothing runs.
func TestARollbackGoesOnlyToARevisionThatAppliedAndVerified(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deny.rego"), []byte("package knit\n\ndeny contains \"no\" if true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	size := func(n string) *spec.Environment {
		return parse(t, strings.Replace(envDoc("pay", "prod"), "{name: size, value: 1}", "{name: size, value: "+n+"}", 1))
	}
	var firstApply string
	for i, denied := range []bool{false, false, true, false, true} { // revisions 1 to 5: 3 and 5 denied
		var dirs []string
		if denied {
			dirs = []string{dir}
		}
		res, _ := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: size(string(rune('1' + i))), AutoApprove: true, PolicyDirs: dirs}).Run(ctx)
		if res == nil || (res.Status == store.StatusFailed) != denied {
			t.Fatalf("revision %d: %+v", i+1, res)
		}
		if i == 0 {
			firstApply = res.RunID
		}
	}
	e, err := knit.NewRecords(k).ResolveEnv(ctx, "pay/prod")
	if err != nil || e.AppliedRevision != 4 {
		t.Fatalf("pay/prod: %+v %v", e, err)
	}
	for to, want := range map[int]string{5: "newer than its applied revision 4", 3: "never applied and verified", 4: "applied at revision 4 already"} {
		_, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindRollback, EnvRef: "pay/prod", To: to}).Start(ctx)
		if !errors.Is(err, knit.ErrNoGoodRevision) || !strings.Contains(err.Error(), want) {
			t.Errorf("rollback to %d: %v, want %q", to, err, want)
		}
	}
	back, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindRollback, EnvRef: "pay/prod", To: 2}).Run(ctx)
	if err != nil || back.Status != store.StatusSucceeded {
		t.Fatalf("rollback to the good revision 2: %+v %v", back, err)
	}
	// A resume goes where the rollback it resumes went, nowhere else: not
	// to a denied revision, not as the resume of an apply.
	for _, resumes := range []string{back.RunID, firstApply} {
		_, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindRollback, EnvRef: "pay/prod", To: 5, Resumes: resumes}).Start(ctx)
		if !errors.Is(err, knit.ErrNoGoodRevision) || !strings.Contains(err.Error(), "a resume goes only where the rollback it resumes went") {
			t.Errorf("a resume of %s as a rollback to the denied revision 5: %v, want refused", resumes, err)
		}
	}
}

// captured is a Submitter that keeps what it is handed.
type captured struct{ req knit.RunRequest }

func (c *captured) Enqueue(req knit.RunRequest, _ string) (string, error) {
	c.req = req
	return "r", nil
}

// The apply that carries out an approval carries its approver's token:
// the door checks it again when the apply leaves the queue.
func TestTheApplyAfterAnApprovalCarriesTheApprover(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	apply(t, k, parse(t, envDoc("pay", "prod")), "alice", false)
	pending, err := knit.NewRecords(k).Approvals(ctx, "pay/prod", store.ApprovalPending)
	if err != nil || len(pending) != 1 {
		t.Fatalf("approvals %+v %v", pending, err)
	}
	bob := knit.WithCaller(ctx, view.Token{Name: "bob", Role: store.RoleOperator, Teams: []string{"pay"}})
	var sub captured
	if _, err := knit.NewDecide(k, knit.DecideRequest{EnvRef: "pay/prod", Component: "app", Approve: true, Actor: "bob",
		PlanChecksum: pending[0].PlanChecksum, Source: "api"}, &sub).Run(bob); err != nil {
		t.Fatal(err)
	}
	if sub.req.Caller == nil || sub.req.Caller.Token != "bob" {
		t.Fatalf("the apply after the approval carries caller %+v, want bob", sub.req.Caller)
	}
}
