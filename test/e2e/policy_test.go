package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// prodEnv is an auto-approved environment labelled env=prod of counted
// components.
func prodEnv(comps ...string) string {
	doc := envFile("prod", comps...)
	return strings.Replace(doc, "metadata: {name: prod}", "metadata: {name: prod, labels: {env: prod}}", 1)
}

// examplePolicy copies one of the shipped example policies into the world.
func (w *world) examplePolicy(name string) string {
	w.t.Helper()
	text, err := os.ReadFile(filepath.Join(repo, "policies", "examples", name))
	if err != nil {
		w.t.Fatal(err)
	}
	w.write(map[string]string{"policies/" + name: string(text)})
	return "policies/" + name // as knit names it: the path under the --policies folder given
}

// A commit that removes a component from prod, under the shipped policy
// forbidding destroys in prod: the run ends PolicyDenied, tofu destroys
// nothing (the counting wrapper sees no destroy), and the result, its
// JSON and the audit trail name the policy's file and rule.
func TestPolicyDeniesADestroyInProd(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	file := w.examplePolicy("no_prod_destroy.rego")
	w.writeEnv(prodEnv(countedComp("a", ""), countedComp("b", "")))
	w.ok("apply", "-f", "env.yaml", "--policies", "policies")
	w.calls()

	w.writeEnv(prodEnv(countedComp("a", "")))
	// knit policy eval plans and judges, applying nothing.
	r := w.knit("policy", "eval", "-f", "env.yaml", "--policies", "policies")
	if r.code != 1 || !strings.Contains(r.stdout, "policy DENY: "+file+":5 deny: b would destroy terraform_data.this in prod") {
		t.Errorf("policy eval of a destroy in prod: exit %d, want 1 with the denial\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = w.knit("apply", "-f", "env.yaml", "--policies", "policies", "-o", "json")
	if r.code != 1 {
		t.Fatalf("apply of a destroy in prod: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for comp, cmds := range w.calls() {
		for _, c := range cmds {
			if c == "destroy" || c == "apply" {
				t.Errorf("%s: tofu %s ran although the policy denied the run", comp, c)
			}
		}
	}
	var res struct {
		Status     string
		Error      string
		Components []struct{ Name, Status, ReasonCode, Reason string }
		Policy     struct {
			Decisions []struct{ Kind, Message, File, Rule, Component, Resource string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, r.stdout)
	}
	if res.Status != "failed" || !strings.Contains(res.Error, "denied by policy: "+file+":5 deny") {
		t.Errorf("run %s, error %q: want failed, denied by %s:5 deny", res.Status, res.Error, file)
	}
	if len(res.Policy.Decisions) != 1 || res.Policy.Decisions[0].File != file || res.Policy.Decisions[0].Rule != "deny" ||
		res.Policy.Decisions[0].Component != "b" || res.Policy.Decisions[0].Resource != "terraform_data.this" {
		t.Errorf("decisions = %+v", res.Policy.Decisions)
	}
	for _, c := range res.Components {
		if c.ReasonCode != "PolicyDenied" {
			t.Errorf("%s: %s %s, want reason PolicyDenied", c.Name, c.Status, c.ReasonCode)
		}
	}
	audit := w.ok("audit", "qa/prod").stdout
	if !strings.Contains(audit, "policy-deny") || !strings.Contains(audit, "no_prod_destroy.rego:5 deny") {
		t.Errorf("audit trail lacks the denial with its file and rule:\n%s", audit)
	}
	// b still exists: the next apply without the policy destroys it.
	w.ok("apply", "-f", "env.yaml")
	if calls := w.calls(); strings.Join(calls["b"], " ") != "destroy" {
		t.Errorf("without the policy, b: %v, want destroy", calls["b"])
	}
}

const warnAndGate = `package knit

warn contains "the run has no reason" if input.run.reason == ""

require_approval contains {"msg": "a needs a second look", "component": "a"} if {
	some c in input.components
	c.name == "a"
	c.changes.add > 0
}
`

// A warn shows in knit plan's output and JSON and stops nothing; a
// require_approval rule gates a component with autoApprove: true, and
// knit approve applies the exact plan that waited.
func TestPolicyWarnsAndRequiresApproval(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	w.write(map[string]string{"policies/gate.rego": warnAndGate})
	w.writeEnv(envFile("gate", countedComp("a", ""), countedComp("b", "")))

	r := w.ok("plan", "-f", "env.yaml", "--policies", "policies")
	if !strings.Contains(r.stdout, "policy WARN: policies/gate.rego:3 warn: the run has no reason") ||
		!strings.Contains(r.stdout, "policy REQUIRE APPROVAL:") {
		t.Errorf("plan output lacks the decisions:\n%s", r.stdout)
	}
	r = w.ok("plan", "-f", "env.yaml", "--policies", "policies", "-o", "json")
	if !strings.Contains(r.stdout, `"kind": "warn"`) || !strings.Contains(r.stdout, `"rule": "warn"`) {
		t.Errorf("plan JSON lacks the warning:\n%s", r.stdout)
	}
	r = w.ok("plan", "-f", "env.yaml", "--policies", "policies", "-o", "policy-input")
	if !strings.Contains(r.stdout, `"components"`) || !strings.Contains(r.stdout, `"address": "terraform_data.this"`) {
		t.Errorf("policy input:\n%s", r.stdout)
	}
	w.calls()

	r = w.knit("apply", "-f", "env.yaml", "--policies", "policies", "-o", "json")
	if r.code != 3 {
		t.Fatalf("apply: exit %d, want 3 (a waits for approval)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var res struct {
		Components []struct{ Name, Status, Reason string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Components {
		want := map[string]string{"a": "awaiting-approval", "b": "applied"}[c.Name]
		if c.Status != want {
			t.Errorf("%s: %s, want %s (%s)", c.Name, c.Status, want, c.Reason)
		}
		if c.Name == "a" && !strings.Contains(c.Reason, "a policy requires approval") {
			t.Errorf("a's reason does not say a policy gates it: %s", c.Reason)
		}
	}
	w.calls()
	w.ok("approve", "qa/gate", "a")
	if calls := w.calls(); strings.Join(calls["a"], " ") != "apply" {
		t.Errorf("approve ran %v for a, want the saved plan applied (apply only)", calls["a"])
	}
}

// A policy that does not parse fails the plan with its file:line, and
// changes nothing.
func TestPolicySyntaxErrorFailsThePlanWithFileAndLine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	w.write(map[string]string{"policies/bad.rego": "package knit\n\ndeny contains msg if {\n\tmsg := \"x\" +\n}\n"})
	w.writeEnv(envFile("bad", countedComp("a", "")))
	r := w.knit("plan", "-f", "env.yaml", "--policies", "policies")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "policies/bad.rego:5") {
		t.Fatalf("plan with a broken policy: exit %d, want 1 naming bad.rego:5\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if calls := w.calls(); len(calls) > 0 {
		t.Errorf("a plan with policies that do not compile ran tofu: %v (it fails before planning)", calls)
	}
	r = w.knit("apply", "-f", "env.yaml", "--policies", "policies")
	if r.code != 1 {
		t.Fatalf("apply with a broken policy: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if st := w.ok("status", "qa/bad").stdout; !strings.Contains(st, "never applied") {
		t.Errorf("a broken policy let something apply:\n%s", st)
	}
}

// knit policy test passes on the shipped examples, exits 2 when one of
// their tests fails and 1 when one is broken (opa test's exit codes).
func TestPolicyTestOnTheShippedExamples(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	examples := filepath.Join(repo, "policies", "examples")
	r := w.ok("policy", "test", examples)
	if !strings.Contains(r.stdout, "passed") || strings.Contains(r.stdout, "FAIL") {
		t.Errorf("policy test:\n%s", r.stdout)
	}
	copyDir := func(name string) string {
		entries, err := os.ReadDir(examples)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			text, err := os.ReadFile(filepath.Join(examples, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			w.write(map[string]string{name + "/" + e.Name(): string(text)})
		}
		return w.path(name)
	}
	failing := copyDir("failing")
	test := filepath.Join(failing, "freeze_test.rego")
	text, _ := os.ReadFile(test)
	if err := os.WriteFile(test, []byte(strings.Replace(string(text), `run_at("apply", "2026-11-29T09:00:00Z")`, `run_at("apply", "2026-11-30T09:00:00Z")`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := w.knit("policy", "test", failing); r.code != 2 || !strings.Contains(r.stdout, "FAIL") || !strings.Contains(r.stdout, "test_sunday_is_frozen") {
		t.Errorf("a failing example test: exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	broken := copyDir("broken")
	if err := os.WriteFile(filepath.Join(broken, "freeze_test.rego"), append(text, []byte("\ntest_broken if {\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := w.knit("policy", "test", broken); r.code != 1 || !strings.Contains(r.stdout+r.stderr, "freeze_test.rego:") {
		t.Errorf("a broken example test: exit %d, want 1 naming the file\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// In GitOps mode the repository's policies/ folder, at the commit of the
// environment file, judges the run: a commit removing a component from
// prod is denied, tofu destroys nothing, and the API's run shows the
// decision with its file (by repository path) and rule.
func TestGitOpsPolicyDeniesADestroyInProd(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	rule, err := os.ReadFile(filepath.Join(repo, "policies", "examples", "no_prod_destroy.rego"))
	if err != nil {
		t.Fatal(err)
	}
	two := prodEnv(countedComp("a", ""), countedComp("b", ""))
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf":  countedModule,
		"envs/prod.yaml":                two,
		"policies/no_prod_destroy.rego": string(rule),
	})
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("prod applied", func() bool { e, _ := s.env("qa/prod"); return e.Status == "provisioned" })
	w.calls()

	repo.commit("drop b", map[string]string{"envs/prod.yaml": prodEnv(countedComp("a", ""))})
	type run struct {
		ID, Status, Error string
		Policy            struct {
			Decisions []struct{ Kind, File, Rule, Component, Resource string }
		}
	}
	var denied run
	s.eventually("the commit's run denied", func() bool {
		var runs struct{ Items []run }
		s.do("GET", "/api/v1/environments/qa/prod/runs", nil, &runs)
		if len(runs.Items) == 0 || runs.Items[0].Status != "failed" {
			return false
		}
		denied = runs.Items[0]
		return true
	})
	if len(denied.Policy.Decisions) != 1 {
		t.Fatalf("run %s: decisions %+v (error %q)", denied.ID, denied.Policy.Decisions, denied.Error)
	}
	d := denied.Policy.Decisions[0]
	if d.Kind != "deny" || d.File != "policies/no_prod_destroy.rego" || d.Rule != "deny" || d.Component != "b" {
		t.Errorf("decision = %+v, want deny by policies/no_prod_destroy.rego of b", d)
	}
	var rec struct {
		Components []struct{ Component, ReasonCode string }
	}
	s.do("GET", "/api/v1/runs/"+denied.ID, nil, &rec)
	for _, c := range rec.Components {
		if c.ReasonCode != "PolicyDenied" {
			t.Errorf("run record: %s has reason %q, want PolicyDenied", c.Component, c.ReasonCode)
		}
	}
	// The run's server-sent events carry the decision (a recent run's are
	// replayed whole; the stream ends with the run).
	req, _ := http.NewRequest("GET", s.url+"/api/v1/runs/"+denied.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(stream), "event: policy") || !strings.Contains(string(stream), `"file":"policies/no_prod_destroy.rego","line":5,"rule":"deny"`) {
		t.Errorf("the run's events lack the policy decision:\n%s", stream)
	}
	var audit struct {
		Items []struct{ Action, Detail string }
	}
	s.do("GET", "/api/v1/audit?env=qa/prod", nil, &audit)
	found := false
	for _, e := range audit.Items {
		found = found || (e.Action == "policy-deny" && strings.Contains(e.Detail, "policies/no_prod_destroy.rego:5 deny"))
	}
	if !found {
		t.Errorf("the API's audit trail lacks the denial: %+v", audit.Items)
	}
	for comp, cmds := range w.calls() {
		for _, c := range cmds {
			if c == "destroy" || c == "apply" {
				t.Errorf("%s: tofu %s ran although the policy denied the run", comp, c)
			}
		}
	}
}

// A secret a component is given (another's sensitive output, into a
// variable its module does not declare sensitive, so the tool's plan
// shows it) never reaches the policy input.
func TestThePolicyInputHoldsNoSecret(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	w.write(map[string]string{"policies/p.rego": "package knit\n\nwarn contains \"seen\" if true\n"})
	env := func(name string) string {
		return envFile("sec",
			strings.Replace(countedComp("a", "      outputs: [{name: id}, {name: pw, sensitive: true}]\n"), "./modules/counted", "./modules/secret", 1),
			countedComp("s", "        - {name: extra, valueFrom: a.pw}\n"))
	}
	w.writeEnv(env("s"))
	w.ok("apply", "-f", "env.yaml")
	w.writeEnv(strings.Replace(env("s"), "{name: name, value: s}", "{name: name, value: s2}", 1))
	r := w.ok("plan", "-f", "env.yaml", "--policies", "policies", "-o", "policy-input")
	if !strings.Contains(r.stdout, `"(sensitive)"`) || !strings.Contains(r.stdout, `"address": "terraform_data.this"`) {
		t.Errorf("the input should show s's change with the secret masked:\n%s", r.stdout)
	}
	if regexp.MustCompile(`pw-[0-9a-f]{8}-`).MatchString(r.stdout) {
		t.Fatalf("the policy input holds the secret:\n%s", r.stdout)
	}
}

// knit serve --policies judges every run the server starts.
func TestServePoliciesJudgeEveryRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"server-policies/warn.rego": "package knit\n\nwarn contains \"judged by the server\" if true\n"})
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf": countedModule,
		"envs/one.yaml":                envFile("one", countedComp("a", "")),
	})
	s := w.startServer(gitServerArgs(repo, "--policies", w.path("server-policies"))...)
	s.eventually("one applied", func() bool { e, _ := s.env("qa/one"); return e.Status == "provisioned" })
	var runs struct {
		Items []struct {
			Policy struct {
				Decisions []struct{ Kind, Message, File string }
			}
		}
	}
	s.do("GET", "/api/v1/environments/qa/one/runs", nil, &runs)
	if len(runs.Items) == 0 || len(runs.Items[0].Policy.Decisions) != 1 || runs.Items[0].Policy.Decisions[0].Message != "judged by the server" {
		t.Fatalf("the server's run was not judged by --policies: %+v", runs.Items)
	}
	// knit plan --server shows the server's decisions like a local run's.
	r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}, "plan", "qa/one")
	if r.code != 0 || !strings.Contains(r.stdout, "policy WARN: ") || !strings.Contains(r.stdout, "warn.rego:3 warn: judged by the server") {
		t.Errorf("remote plan: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// A policy that loops is stopped by the time bound: the plan fails with a
// clear error, and nothing of an apply runs.
func TestALoopingPolicyIsStoppedByTheTimeBound(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	w.write(map[string]string{"policies/loop.rego": `package knit

deny contains "never" if {
	r := numbers.range(1, 10000)
	some i in r
	some j in r
	some k in r
	i + j + k < 0
}
`})
	w.writeEnv(envFile("loop", countedComp("a", "")))
	r := w.knit("apply", "-f", "env.yaml", "--policies", "policies")
	if r.code != 1 || !strings.Contains(r.stderr, "evaluation stopped after 10s (the time bound") {
		t.Fatalf("apply with a looping policy: exit %d, want 1 naming the time bound\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if calls := w.calls(); strings.Contains(strings.Join(calls["a"], " "), "apply") {
		t.Errorf("a was applied although its policies never decided: %v", calls["a"])
	}
}

// keepModule manages a file that must never be re-created and a value
// updated in place.
const keepModule = `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "1.4.0" }
  }
}
variable "path" { type = string }
variable "note" { type = string }
resource "local_file" "f" {
  filename = var.path
  content  = "keep"
}
resource "terraform_data" "d" { input = var.note }
`

const noRecreate = `package knit

deny contains {"msg": "b's file is never re-created", "component": "b", "resource": r.address} if {
	some c in input.components
	c.name == "b"
	some r in c.resources
	r.address == "local_file.f"
	"create" in r.actions
}
`

// Issue 28: the plan that applies is the plan the policies judged. b's
// judged plan updates a value in place; between the judgement and b's
// turn, a (which b waits for) deletes b's file out of band. The plan the
// tool would make in b's turn re-creates the file, which the policy
// forbids: knit applies the judged plan (the saved file), not that one,
// so the file is not re-created unjudged; the next run that plans b
// (--refresh) plans the re-creation, and the policy denies it.
func TestTheJudgedPlanIsThePlanThatApplies(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/keep/main.tf": keepModule, "policies/keep.rego": noRecreate})
	target := w.path("files/b.txt")
	env := func(round int) string {
		return envFile("keep", fmt.Sprintf(`    - name: a
      type: script
      script: {apply: "rm -f %s; echo '{}'"}
      variables: [{name: round, value: %d}]
    - name: b
      type: terraform
      module: {source: ./modules/keep}
      dependsOn: [a]
      variables:
        - {name: path, value: %s}
        - {name: note, value: "round %d"}
`, target, round, target, round))
	}
	w.writeEnv(env(1))
	w.ok("apply", "-f", "env.yaml") // the policy forbids creating it: it is created before the policy holds
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the first apply did not create b's file: %v", err)
	}

	w.writeEnv(env(2))
	r := w.ok("apply", "-f", "env.yaml", "--policies", "policies")
	if _, err := os.Stat(target); err == nil {
		t.Fatalf("b's file was re-created by a plan the policies never judged:\n%s", r.stdout)
	}

	r = w.knit("apply", "-f", "env.yaml", "--policies", "policies", "--refresh")
	if r.code != 1 || !strings.Contains(r.stdout, "b's file is never re-created") {
		t.Fatalf("the re-creation, planned: exit %d, want 1 with the denial\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("b's file was re-created despite the denial")
	}
}
