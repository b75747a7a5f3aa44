package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fileModule manages one real file through the hashicorp/local provider, so
// editing or deleting the file out of band is real drift.
const fileModule = `
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
output "id" { value = local_file.f.id }
`

// fileComp renders a component managing files/NAME.txt.
func fileComp(name, content, extra string) string {
	return fmt.Sprintf(`    - name: %[1]s
      type: terraform
      module: {source: ./modules/file}
      outputs: [{name: id}]
      variables:
        - {name: path, value: FILES/%[1]s.txt}
        - {name: content, value: "%[2]s"}
%[3]s`, name, content, extra)
}

func (w *world) writeFileEnv(doc string) {
	w.write(map[string]string{"env.yaml": strings.ReplaceAll(doc, "FILES", w.path("files"))})
}

func TestDriftNamesExactlyTheDriftedComponentsInParallel(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	var comps []string
	for i := 0; i < 20; i++ {
		comps = append(comps, fileComp(fmt.Sprintf("f%02d", i), fmt.Sprintf("content %d", i), ""))
	}
	w.writeFileEnv(envFile("drift", comps...))
	w.ok("apply", "-f", "env.yaml", "--parallelism", "4")
	r := w.ok("drift", "qa/drift")
	if !strings.Contains(r.stdout, "20 in sync") {
		t.Errorf("fresh environment not in sync:\n%s", r.stdout)
	}

	// Out of band: one file edited, another deleted.
	w.write(map[string]string{"files/f03.txt": "edited by hand"})
	if err := os.Remove(w.path("files/f11.txt")); err != nil {
		t.Fatal(err)
	}
	r = w.knit("drift", "qa/drift", "-o", "json", "--parallelism", "4")
	if r.code != 2 {
		t.Fatalf("drift exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		RunID      string
		Components []struct {
			Name, Status string
			Resources    []struct{ Address, Action string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	drifted := map[string]string{}
	for _, c := range rep.Components {
		switch c.Status {
		case "in sync":
		case "drifted":
			var addrs []string
			for _, res := range c.Resources {
				addrs = append(addrs, res.Action+" "+res.Address)
			}
			drifted[c.Name] = strings.Join(addrs, ",")
		default:
			t.Errorf("%s: %s", c.Name, c.Status)
		}
	}
	if fmt.Sprint(drifted) != "map[f03:create local_file.f f11:create local_file.f]" {
		t.Errorf("drifted %v", drifted)
	}
	golden(t, "drift20.json", regexp.MustCompile(`"runId": "[^"]+"`).ReplaceAllString(r.stdout, `"runId": "RUN"`))

	// The checks ran in parallel: recorded intervals overlap.
	st := w.openStore()
	crs, err := st.ComponentRuns(context.Background(), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	overlaps := 0
	for i := range crs {
		for j := i + 1; j < len(crs); j++ {
			if crs[i].StartedAt.Before(crs[j].FinishedAt) && crs[j].StartedAt.Before(crs[i].FinishedAt) {
				overlaps++
			}
		}
	}
	if len(crs) != 20 || overlaps == 0 {
		t.Errorf("%d component runs, %d overlapping pairs: drift did not run in parallel", len(crs), overlaps)
	}
	status := w.ok("status", "qa/drift").stdout
	if !strings.Contains(status, "last drift check") || !strings.Contains(status, "drifted: f03, f11") {
		t.Errorf("status does not show the last drift result:\n%s", status)
	}
}

// golden compares got with testdata/NAME, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

func TestReconcileAppliesAutoApprovedAndWaitsForApprovalOfTheRest(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	doc := strings.Replace(envFile("recon",
		fileComp("auto", "auto content", "      autoApprove: true\n"),
		fileComp("manual", "manual content", ""),
		fileComp("after", "after content", "      dependsOn: [manual]\n"),
	), "autoApprove: true\n  components", "autoApprove: false\n  components", 1)
	w.writeFileEnv(doc)
	w.ok("apply", "-f", "env.yaml", "--auto-approve")

	w.write(map[string]string{"files/auto.txt": "tampered", "files/manual.txt": "tampered"})
	r := w.knit("drift", "qa/recon", "--reconcile", "--reason", "nightly reconcile", "-o", "json")
	if r.code != 3 {
		t.Fatalf("reconcile exit %d, want 3 (waiting for approval)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := componentStatuses(t, r.stdout)
	if got["auto"] != "applied" || got["manual"] != "awaiting-approval" || got["after"] != "waiting" {
		t.Errorf("statuses %v", got)
	}
	if w.read("files/auto.txt") != "auto content" {
		t.Error("the autoApprove component was not restored at once")
	}
	if w.read("files/manual.txt") != "tampered" {
		t.Error("the component needing approval was changed without it")
	}
	list := w.ok("approvals", "qa/recon").stdout
	if !strings.Contains(list, "manual") || !strings.Contains(list, "+1 ~0 -0") {
		t.Errorf("approvals:\n%s", list)
	}

	r = w.ok("approve", "qa/recon", "manual", "--reason", "restore the file")
	if w.read("files/manual.txt") != "manual content" {
		t.Errorf("approved plan not applied:\n%s\n%s", r.stdout, r.stderr)
	}
	if list := w.ok("approvals", "qa/recon").stdout; !strings.Contains(list, "nothing waits") {
		t.Errorf("approval still pending:\n%s", list)
	}
	audit := w.ok("audit", "qa/recon", "-o", "json").stdout
	for _, want := range []string{`"action": "reconcile"`, `"reason": "nightly reconcile"`, `"action": "approve"`, `"component": "manual"`, `"reason": "restore the file"`, `"actor": "e2e"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit lacks %s:\n%s", want, audit)
		}
	}
	if r := w.knit("drift", "qa/recon"); r.code != 0 {
		t.Errorf("drift after approval: exit %d\n%s", r.code, r.stdout)
	}
}

func TestStaleApprovalIsRefusedWithAReason(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	doc := strings.Replace(envFile("stale", fileComp("conf", "v1", "")), "autoApprove: true", "autoApprove: false", 1)
	w.writeFileEnv(doc)
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("apply without approval: exit %d, want 3\n%s", r.code, r.stderr)
	}
	w.ok("approve", "qa/stale", "conf", "--no-apply")
	w.writeFileEnv(strings.Replace(doc, `"v1"`, `"v2"`, 1))
	r := w.knit("apply", "-f", "env.yaml")
	if r.code != 3 {
		t.Errorf("apply with a stale approval: exit %d, want 3", r.code)
	}
	if !strings.Contains(r.stdout, "revision 1") || !strings.Contains(r.stdout, "knit approve qa/stale conf") {
		t.Errorf("refusal does not say why and what to do:\n%s", r.stdout)
	}
	if _, err := os.Stat(w.path("files/conf.txt")); err == nil {
		t.Error("the stale plan was applied")
	}
	if all := w.ok("approvals", "qa/stale", "--all").stdout; !strings.Contains(all, "stale") {
		t.Errorf("old approval not marked stale:\n%s", all)
	}
}

func TestUpstreamDriftMarksDependentsAffectedAndReconcileFixesBothInOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	w.writeFileEnv(envFile("up",
		fileComp("base", "base content", ""),
		`    - name: user
      type: terraform
      module: {source: ./modules/file}
      outputs: [{name: id}]
      variables:
        - {name: path, value: FILES/user.txt}
        - {name: content, valueFrom: base.id}
`,
		fileComp("bystander", "unrelated", ""),
	))
	w.ok("apply", "-f", "env.yaml")
	if err := os.Remove(w.path("files/base.txt")); err != nil {
		t.Fatal(err)
	}
	r := w.knit("drift", "qa/up", "-o", "json")
	if r.code != 2 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	got := componentStatuses(t, r.stdout)
	if got["base"] != "drifted" || got["user"] != "affected by upstream drift" || got["bystander"] != "in sync" {
		t.Errorf("statuses %v", got)
	}
	if !strings.Contains(r.stdout, `"base.id"`) {
		t.Errorf("user's report does not name base.id:\n%s", r.stdout)
	}

	r = w.ok("drift", "qa/up", "--reconcile", "-o", "json")
	got = componentStatuses(t, r.stdout)
	if got["base"] != "applied" || (got["user"] != "applied" && got["user"] != "no changes") {
		t.Errorf("after reconcile %v", got)
	}
	if w.read("files/base.txt") != "base content" {
		t.Error("base not restored")
	}
	st := w.openStore()
	var runID struct{ RunID string }
	_ = json.Unmarshal([]byte(r.stdout), &runID)
	crs, _ := st.ComponentRuns(context.Background(), runID.RunID)
	at := map[string]int{}
	for i, cr := range crs {
		at[cr.Component] = i
		if cr.Component == "user" {
			for _, b := range crs {
				// Every component is checked at once; user's reconcile
				// (re-plan and apply) waits for base's fix, so it ends
				// after it (the engine's tests time each call).
				if b.Component == "base" && cr.FinishedAt.Before(b.FinishedAt) {
					t.Error("user's reconcile ended before base's fix")
				}
			}
		}
	}
	if _, ok := at["user"]; !ok {
		t.Error("user was not part of the reconcile")
	}
	if r := w.knit("drift", "qa/up"); r.code != 0 {
		t.Errorf("still drifted after reconcile:\n%s", r.stdout)
	}
}

// A teardown waiting for approval is not undone by drift: knit drift
// --reconcile refuses the environment, as the server's scheduler skips it,
// so a drifted component being torn down is never re-applied.
func TestDriftReconcileLeavesAnEnvironmentBeingTornDownAlone(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	doc := envFile("doomed", fileComp("net", "v1", ""), fileComp("web", "v1", "      dependsOn: [net]\n      autoApprove: false\n"))
	w.writeFileEnv(doc)
	w.ok("apply", "-f", "env.yaml", "--auto-approve")

	// teardown: true in the file; web's destroy waits for approval, net
	// waits for web.
	w.writeFileEnv(strings.Replace(doc, "  autoApprove: true\n", "  autoApprove: true\n  teardown: true\n", 1))
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("apply of teardown: true: exit %d, want 3 (web waits)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	w.write(map[string]string{"files/net.txt": "edited by hand"})
	for _, args := range [][]string{{"drift", "qa/doomed", "--reconcile"}, {"drift", "qa/doomed"}} {
		r := w.knit(args...)
		if r.code != 1 || !strings.Contains(r.stderr, "no drift check of qa/doomed: its teardown is waiting for approval or done") {
			t.Errorf("knit %s: exit %d, want 1 saying the teardown waits\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if got := w.read("files/net.txt"); got != "edited by hand" {
		t.Errorf("net.txt = %q: drift re-applied a component being torn down", got)
	}
	if r := w.ok("approvals", "qa/doomed"); !strings.Contains(r.stdout, "web") || !strings.Contains(r.stdout, "pending") {
		t.Errorf("the teardown's approval no longer waits:\n%s", r.stdout)
	}
}
