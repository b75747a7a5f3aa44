package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// pathModule manages one file and outputs its path, which a plan already
// knows: components behind it can be planned before it is applied.
const pathModule = `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "1.4.0" }
  }
}
variable "path" { type = string }
variable "content" { type = string }
resource "local_file" "f" {
  filename = var.path
  content  = var.content
}
output "path" { value = local_file.f.filename }
`

// pathComp renders a component of module mod managing files/NAME.txt,
// whose content is the path of the component it takes it from (or its
// own name), gated unless the environment says otherwise.
func pathComp(name, mod, from string, deps ...string) string {
	content := fmt.Sprintf("{name: content, value: %s}", name)
	if from != "" {
		content = fmt.Sprintf("{name: content, valueFrom: %s.path}", from)
	}
	dep := ""
	if len(deps) > 0 {
		dep = fmt.Sprintf("      dependsOn: [%s]\n", strings.Join(deps, ", "))
	}
	return fmt.Sprintf(`    - name: %[1]s
      type: terraform
      module: {source: ./modules/%[2]s}
      outputs: [{name: path}]
      variables:
        - {name: path, value: FILES/%[1]s.txt}
        - %[3]s
%[4]s`, name, mod, content, dep)
}

// gatedEnv is qa/NAME with every component gated (autoApprove: false).
func gatedEnv(name string, comps ...string) string {
	return strings.Replace(envFile(name, comps...), "  autoApprove: true\n", "  autoApprove: false\n", 1)
}

// fiveInFourLevels is net ← (db, cache) ← app ← web, every one gated; web
// has a module of its own.
func fiveInFourLevels() string {
	return gatedEnv("cs",
		pathComp("net", "path", ""),
		pathComp("db", "path", "net", "net"),
		pathComp("cache", "path", "net", "net"),
		pathComp("app", "path", "db", "db", "cache"),
		pathComp("web", "web", "app", "app"))
}

// changeSet is a change set as knit approvals --change-sets -o json shows it.
type changeSet struct {
	ID         int64
	Checksum   string
	Status     string
	RunID      string
	Components []struct {
		Component       string
		ApprovalID      int64
		KnownAfterApply string
		Resources       []struct{ Address, Action string }
	}
}

func (w *world) changeSets(env string, extra []string, all bool) []changeSet {
	w.t.Helper()
	args := []string{"approvals", env, "--change-sets", "-o", "json"}
	if all {
		args = append(args, "--all")
	}
	r := w.knitWith(extra, args...)
	if r.code != 0 {
		w.t.Fatalf("knit approvals --change-sets: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var sets []changeSet
	if err := json.Unmarshal([]byte(r.stdout), &sets); err != nil {
		w.t.Fatalf("%v\n%s", err, r.stdout)
	}
	return sets
}

// pendingChange is env's one waiting change set, checked to show every
// one of comps with its resources.
func (w *world) pendingChange(env string, comps ...string) changeSet {
	w.t.Helper()
	sets := w.changeSets(env, nil, false)
	if len(sets) != 1 || sets[0].Status != "pending" || len(sets[0].Checksum) != 64 {
		w.t.Fatalf("change sets of %s: %+v", env, sets)
	}
	var names []string
	for _, c := range sets[0].Components {
		names = append(names, c.Component)
		if c.KnownAfterApply != "" || len(c.Resources) == 0 {
			w.t.Errorf("the change set does not show the plan of %s: %+v", c.Component, c)
		}
	}
	if strings.Join(names, " ") != strings.Join(comps, " ") {
		w.t.Fatalf("the change set shows %v, want %v", names, comps)
	}
	return sets[0]
}

// status is knit status ENV -o json, in part.
type envStatus struct {
	Status     string
	Components []struct{ Name, Status, Reason string }
}

func (w *world) status(env string) envStatus {
	w.t.Helper()
	var st envStatus
	if err := json.Unmarshal([]byte(w.ok("status", env, "-o", "json").stdout), &st); err != nil {
		w.t.Fatal(err)
	}
	return st
}

// Issue 24 item 1: a new environment of five gated components in four
// levels stops once, showing the whole change (every component planned,
// those behind the first planned ahead) under one checksum; one
// `knit approve ENV --change SUM` applies it all, with no further prompt.
func TestAGatedEnvironmentAppliesAfterOneChangeSetApproval(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/path/main.tf": pathModule, "modules/web/main.tf": pathModule})
	w.writeFileEnv(fiveInFourLevels())
	r := w.knit("apply", "-f", "env.yaml")
	if r.code != 3 {
		t.Fatalf("gated apply: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	cs := w.pendingChange("qa/cs", "net", "cache", "db", "app", "web")
	if !strings.Contains(r.stdout, "knit approve qa/cs --change "+cs.Checksum[:12]) {
		t.Errorf("the apply does not say how to approve the whole change:\n%s", r.stdout)
	}
	if out := w.ok("approvals", "qa/cs").stdout; !strings.Contains(out, cs.Checksum[:12]) || !strings.Contains(out, "local_file.f") {
		t.Errorf("knit approvals does not show the change set:\n%s", out)
	}
	if out := w.ok("plan", "qa/cs").stdout; !strings.Contains(out, "change set #1 "+cs.Checksum[:12]) {
		t.Errorf("knit plan does not show the change set waiting:\n%s", out)
	}
	if w.exists("files/net.txt") {
		t.Fatal("net was applied before any approval")
	}

	w.ok("approve", "qa/cs", "--change", cs.Checksum[:12], "--reason", "one review")
	for _, c := range []string{"net", "db", "cache", "app", "web"} {
		if !w.exists("files/" + c + ".txt") {
			t.Errorf("%s was not applied after the change set's approval", c)
		}
	}
	if got := w.read("files/web.txt"); got != w.path("files/app.txt") {
		t.Errorf("web.txt = %q, want app's path", got)
	}
	if st := w.status("qa/cs"); st.Status != "provisioned" {
		t.Fatalf("after one approval: %+v", st)
	}
	if out := w.ok("approvals", "qa/cs").stdout; !strings.Contains(out, "nothing waits for approval") {
		t.Errorf("something still waits:\n%s", out)
	}
	if sets := w.changeSets("qa/cs", nil, true); len(sets) != 1 || sets[0].Status != "applied" {
		t.Errorf("the change set is not recorded applied: %+v", sets)
	}
}

// Issue 24 item 1: a gated teardown took five approvals. Tearing down
// the five gated components stops once, with every destroy plan in one
// change set; one approval destroys them all, dependents first.
func TestAGatedTeardownIsApprovedOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/path/main.tf": pathModule, "modules/web/main.tf": pathModule})
	w.writeFileEnv(fiveInFourLevels())
	w.ok("apply", "-f", "env.yaml", "--auto-approve")
	w.writeFileEnv(strings.Replace(fiveInFourLevels(), "  autoApprove: false\n", "  autoApprove: false\n  teardown: true\n", 1))
	if r := w.knit("apply", "-f", "env.yaml", "--reason", "decommission"); r.code != 3 {
		t.Fatalf("gated teardown: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	cs := w.pendingChange("qa/cs", "net", "cache", "db", "app", "web")
	for _, c := range cs.Components {
		if c.Resources[0].Action != "delete" {
			t.Errorf("%s: %+v, want a destroy", c.Component, c.Resources)
		}
	}
	w.ok("approve", "qa/cs", "--change", cs.Checksum[:12], "--reason", "CAB-42")
	for _, c := range []string{"net", "db", "cache", "app", "web"} {
		if w.exists("files/" + c + ".txt") {
			t.Errorf("%s survived the approved teardown", c)
		}
	}
	if st := w.status("qa/cs"); st.Status != "torn-down" {
		t.Fatalf("after one approval: %+v", st)
	}
}

// A component planned ahead in an approved change set whose fresh plan
// does something the change set did not show (its module gained a
// resource meanwhile) stops for a new approval and says what differs;
// what it does not affect is applied.
func TestADownstreamPlanThatGainsAResourceStopsAndSaysWhy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/path/main.tf": pathModule, "modules/web/main.tf": pathModule})
	w.writeFileEnv(fiveInFourLevels())
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("gated apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cs := w.pendingChange("qa/cs", "net", "cache", "db", "app", "web")
	w.write(map[string]string{"modules/web/main.tf": pathModule + `
resource "local_file" "extra" {
  filename = "${var.path}.extra"
  content  = "not in the reviewed change"
}
`})
	r := w.knit("approve", "qa/cs", "--change", cs.Checksum)
	if r.code != 3 {
		t.Fatalf("approve: exit %d, want 3 (web waits)\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := "plan gained local_file.extra (create), which the approved change did not show"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("the apply does not say why web stopped:\n%s", r.stdout)
	}
	var web string
	for _, c := range w.status("qa/cs").Components {
		if c.Name == "web" {
			web = c.Status + ": " + c.Reason
		}
	}
	if !strings.HasPrefix(web, "awaiting-approval") || !strings.Contains(web, want) {
		t.Errorf("web: %q", web)
	}
	if w.exists("files/web.txt") || w.exists("files/web.txt.extra") || !w.exists("files/app.txt") {
		t.Fatalf("web applied %v/%v, app applied %v", w.exists("files/web.txt"), w.exists("files/web.txt.extra"), w.exists("files/app.txt"))
	}
	// Per component, as before: the new plan is approved and applied.
	w.ok("approve", "qa/cs", "web")
	if !w.exists("files/web.txt.extra") {
		t.Error("web's approved plan was not applied")
	}
}

// Issue 24 item 1: approving database re-planned its sibling, and the
// plan the reviewer had read was gone. Approving db applies db, and
// cache's plan stays the one waiting (same approval, same checksum), so
// approving it by that checksum applies it. Each apply ends the run that
// waited before it as superseded, naming its successor.
func TestApprovingOneSiblingLeavesTheOthersPlanValid(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/path/main.tf": pathModule})
	doc := strings.Replace(envFile("sib",
		pathComp("net", "path", ""),
		pathComp("db", "path", "net", "net")+"      autoApprove: false\n",
		pathComp("cache", "path", "net", "net")+"      autoApprove: false\n"), "FILES", w.path("files"), -1)
	w.write(map[string]string{"env.yaml": doc})
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	first := w.runs("qa/sib")[0]
	approvals := func() map[string]approvalRow {
		out := map[string]approvalRow{}
		var list []approvalRow
		if err := json.Unmarshal([]byte(w.ok("approvals", "qa/sib", "-o", "json").stdout), &list); err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			out[a.Component] = a
		}
		return out
	}
	before := approvals()
	if len(before) != 2 {
		t.Fatalf("want db and cache waiting: %+v", before)
	}
	if r := w.knit("approve", "qa/sib", "db", "--checksum", before["db"].PlanChecksum); r.code != 3 {
		t.Fatalf("approve db: exit %d, want 3 (cache still waits)\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !w.exists("files/db.txt") || w.exists("files/cache.txt") {
		t.Fatalf("after db's approval: db %v cache %v", w.exists("files/db.txt"), w.exists("files/cache.txt"))
	}
	after := approvals()
	if c := after["cache"]; c.ID != before["cache"].ID || c.PlanChecksum != before["cache"].PlanChecksum || c.Status != "pending" {
		t.Fatalf("cache's plan was replaced by db's approval: before %+v, after %+v", before["cache"], c)
	}
	second := w.runs("qa/sib")[0]
	w.ok("approve", "qa/sib", "cache", "--checksum", before["cache"].PlanChecksum)
	if !w.exists("files/cache.txt") {
		t.Fatal("cache was not applied")
	}
	runs := w.runs("qa/sib")
	byID := map[string]runRow{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	for _, pair := range [][2]string{{first.ID, second.ID}, {second.ID, runs[0].ID}} {
		if r := byID[pair[0]]; r.Status != "superseded" || r.SupersededBy != pair[1] {
			t.Errorf("run %s: %s, superseded by %q; want superseded by %s", r.ID, r.Status, r.SupersededBy, pair[1])
		}
	}
	if runs[0].Status != "succeeded" {
		t.Errorf("the last run: %+v", runs[0])
	}
	if out := w.ok("history", "qa/sib").stdout; strings.Contains(out, "awaiting-approval") {
		t.Errorf("knit history still shows a run awaiting approval:\n%s", out)
	}
}

type approvalRow struct {
	ID           int64
	Component    string
	PlanChecksum string
	Status       string
}

type runRow struct {
	ID           string
	Status       string
	SupersededBy string
}

// runs is knit history ENV -o json, newest first.
func (w *world) runs(env string) []runRow {
	w.t.Helper()
	out := w.ok("history", env, "-o", "json").stdout
	var rows []runRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		var page struct{ Items []runRow }
		if err2 := json.Unmarshal([]byte(out), &page); err2 != nil {
			w.t.Fatalf("%v\n%s", err, out)
		}
		rows = page.Items
	}
	return rows
}

// A token of team ops cannot decide the change set of pay/prod, by its ID
// or its metadata name, through the server; nothing is decided or
// applied. A token of every team approves it by its checksum.
func TestATeamTokenCannotDecideAnotherTeamsChangeSet(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	mark := w.path("app-applied")
	w.write(map[string]string{"pay.yaml": teamEnv(mark)})
	if r := w.knit("apply", "-f", "pay.yaml"); r.code != 3 {
		t.Fatalf("apply: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	sets := w.changeSets("pay/prod", nil, false)
	if len(sets) != 1 {
		t.Fatalf("change sets: %+v", sets)
	}
	sum := sets[0].Checksum
	ops := strings.TrimSpace(w.ok("token", "create", "ops-operator", "--role", "operator", "--team", "ops").stdout)
	s := w.startServer()
	defer s.stop()
	asOps := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + ops}
	for _, verb := range []string{"approve", "reject"} {
		for _, ref := range []string{"pay/prod", "ops"} {
			r := w.knitWith(asOps, verb, ref, "--change", sum, "--reason", "not mine")
			if r.code != 1 || strings.Contains(r.stderr, "approved") || strings.Contains(r.stderr, "rejected") {
				t.Errorf("team ops: knit %s %s --change: exit %d\n%s", verb, ref, r.code, r.stderr)
			}
			if ref == "pay/prod" && !strings.Contains(r.stderr, "forbidden") {
				t.Errorf("team ops: knit %s pay/prod --change does not say forbidden:\n%s", verb, r.stderr)
			}
		}
	}
	if code := s.do("POST", "/api/v1/environments/pay/prod/change-set/approve", map[string]string{"reason": "no checksum"}, nil); code != 400 {
		t.Errorf("a change-set approval without the checksum: %d, want 400", code)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("a refused decision applied app")
	}
	if sets := w.changeSets("pay/prod", nil, false); len(sets) != 1 || sets[0].Status != "pending" {
		t.Fatalf("the change set is no longer pending: %+v", sets)
	}
	asRoot := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	if r := w.knitWith(asRoot, "approve", "ops", "--change", sum[:12], "--reason", "reviewed"); r.code != 0 {
		t.Fatalf("knit approve ops --change as root: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the approved change set was not applied: %v", err)
	}
}
