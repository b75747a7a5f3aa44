package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idModule writes its upstream value to a file and outputs the id of a
// terraform_data resource: a value known only after it is applied, like a
// new network's id. EXTRA is replaced with more configuration.
const idModule = `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "1.4.0" }
  }
}
variable "path" { type = string }
variable "rev" {
  type    = string
  default = "1"
}
variable "upstream" {
  type = string
VALIDATION}
resource "terraform_data" "d" {
  input            = var.upstream
  triggers_replace = var.rev
}
resource "local_file" "f" {
  filename = var.path
  content  = var.upstream
}
output "id" { value = terraform_data.d.id }
EXTRA
`

// idComp renders a gated component of module mod writing files/NAME.txt,
// whose upstream is from's id (or its own name when from is "").
func idComp(name, mod, from string) string {
	up, dep := fmt.Sprintf("{name: upstream, value: %s}", name), ""
	if from != "" {
		up, dep = fmt.Sprintf("{name: upstream, valueFrom: %s.id}", from), fmt.Sprintf("      dependsOn: [%s]\n", from)
	}
	return fmt.Sprintf(`    - name: %[1]s
      type: terraform
      module: {source: ./modules/%[2]s}
      outputs: [{name: id}]
      variables:
        - {name: path, value: FILES/%[1]s.txt}
        - %[3]s
%[4]s`, name, mod, up, dep)
}

// idModuleWith is idModule with a validation block for upstream and extra
// configuration.
func idModuleWith(validation, extra string) string {
	return strings.NewReplacer("VALIDATION", validation, "EXTRA", extra).Replace(idModule)
}

// threeLevels is net ← app ← web, every one gated, each taking the id of
// the one before; web has a module of its own.
func (w *world) threeLevels(webModule string) {
	w.write(map[string]string{"modules/id/main.tf": idModuleWith("", ""), "modules/web/main.tf": webModule})
	w.writeFileEnv(gatedEnv("ids", idComp("net", "id", ""), idComp("app", "id", "net"), idComp("web", "web", "app")))
}

// csEntry is one component of a change set as the JSON of knit approvals
// --change-sets shows it.
type csEntry struct {
	Component       string
	KnownAfterApply string
	Placeholders    []string
	Resources       []struct{ Address, Action string }
}

// pendingEntries is env's one pending change set (raw JSON too), by component.
func (w *world) pendingEntries(env string) (string, map[string]csEntry, string) {
	w.t.Helper()
	raw := w.ok("approvals", env, "--change-sets", "-o", "json").stdout
	var sets []struct {
		Checksum, Status string
		Components       []csEntry
	}
	if err := json.Unmarshal([]byte(raw), &sets); err != nil {
		w.t.Fatalf("%v\n%s", err, raw)
	}
	if len(sets) != 1 || sets[0].Status != "pending" {
		w.t.Fatalf("change sets of %s: %s", env, raw)
	}
	out := map[string]csEntry{}
	for _, c := range sets[0].Components {
		out[c.Component] = c
	}
	return sets[0].Checksum, out, raw
}

// componentStatus is "status: reason" of comp in knit status.
func (w *world) componentStatus(env, comp string) string {
	w.t.Helper()
	for _, c := range w.status(env).Components {
		if c.Name == comp {
			return c.Status + ": " + c.Reason
		}
	}
	return ""
}

// noPlaceholderIn fails when the placeholder text is in any file under
// the world's folder that holds state, outputs or what was applied.
func (w *world) noPlaceholderIn(dirs ...string) {
	w.t.Helper()
	for _, d := range dirs {
		_ = filepath.WalkDir(w.path(d), func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || !(strings.HasSuffix(p, ".tfstate") || strings.HasSuffix(p, ".txt")) {
				return err
			}
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "knit-known-after-apply") {
				w.t.Errorf("a placeholder leaked into %s:\n%s", p, b)
			}
			return nil
		})
	}
}

// Issue 24 item 1, for a new environment: every component behind the
// first takes an id known only after its upstream is applied. The change
// set still shows every component's resources (planned with a
// placeholder, marked so, values not shown), and one approval applies
// all three levels with no further prompt, from the real ids.
func TestANewEnvironmentOfUnknownIdsAppliesAfterOneApproval(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.threeLevels(idModuleWith("", ""))
	r := w.knit("apply", "-f", "env.yaml", "-o", "json")
	if r.code != 3 {
		t.Fatalf("gated apply: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "knit-known-after-apply") {
		t.Errorf("the plans ahead show a placeholder as a value:\n%s", r.stdout)
	}
	sum, entries, raw := w.pendingEntries("qa/ids")
	for _, name := range []string{"net", "app", "web"} {
		e := entries[name]
		if e.KnownAfterApply != "" || len(e.Resources) != 2 {
			t.Errorf("the change set does not show the plan of %s: %+v", name, e)
		}
		if want := name != "net"; want != (strings.Join(e.Placeholders, ",") == "upstream") {
			t.Errorf("%s: placeholders %v", name, e.Placeholders)
		}
	}
	if strings.Contains(raw, "knit-known-after-apply") {
		t.Errorf("the change set shows a placeholder as a value:\n%s", raw)
	}
	if out := w.ok("approvals", "qa/ids", "--change-sets").stdout; !strings.Contains(out, "planned with upstream known after apply") {
		t.Errorf("knit approvals does not say what the plan was made without:\n%s", out)
	}
	if w.exists("files/net.txt") || w.exists("files/app.txt") {
		t.Fatal("applied before any approval")
	}

	r = w.knit("approve", "qa/ids", "--change", sum[:12], "--reason", "one review")
	if r.code != 0 {
		t.Fatalf("approve the change set: exit %d, want 0 (no further prompt)\n%s%s", r.code, r.stdout, r.stderr)
	}
	ids := map[string]string{}
	for _, c := range []string{"net", "app"} {
		ids[c] = strings.TrimSpace(w.ok("output", "qa/ids", c, "id").stdout)
	}
	if got := w.read("files/app.txt"); got != ids["net"] || got == "" {
		t.Errorf("app.txt = %q, want net's id %q", got, ids["net"])
	}
	if got := w.read("files/web.txt"); got != ids["app"] || got == "" {
		t.Errorf("web.txt = %q, want app's id %q", got, ids["app"])
	}
	if st := w.status("qa/ids"); st.Status != "provisioned" {
		t.Fatalf("after one approval: %+v", st)
	}
	if sets := w.changeSets("qa/ids", nil, true); len(sets) != 1 || sets[0].Status != "applied" {
		t.Errorf("the change set is not recorded applied: %+v", sets)
	}
	w.noPlaceholderIn("files", ".knit")
}

// A component planned with a placeholder whose real plan, once its
// upstream is applied, gains a resource (one the module creates only for
// a real id) stops for a new approval and says what differs; what the
// change set covered is applied.
func TestAPlaceholderPlanThatGainsAResourceStopsAndSaysWhy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.threeLevels(idModuleWith("", `
resource "local_file" "extra" {
  count    = can(regex("^[0-9a-f]{8}-", var.upstream)) ? 1 : 0
  filename = "${var.path}.extra"
  content  = "only for a real id"
}`))
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("gated apply: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	sum, entries, _ := w.pendingEntries("qa/ids")
	if e := entries["web"]; len(e.Placeholders) != 1 || len(e.Resources) != 2 {
		t.Fatalf("web is not planned with a placeholder: %+v", e)
	}
	r := w.knit("approve", "qa/ids", "--change", sum)
	if r.code != 3 {
		t.Fatalf("approve: exit %d, want 3 (web waits)\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := "plan gained local_file.extra[0] (create), which the approved change did not show"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("the apply does not say why web stopped:\n%s", r.stdout)
	}
	if web := w.componentStatus("qa/ids", "web"); !strings.HasPrefix(web, "awaiting-approval") || !strings.Contains(web, want) {
		t.Errorf("web: %q", web)
	}
	if w.exists("files/web.txt") || !w.exists("files/app.txt") {
		t.Fatalf("web applied %v, app applied %v", w.exists("files/web.txt"), w.exists("files/app.txt"))
	}
	w.ok("approve", "qa/ids", "web")
	if !w.exists("files/web.txt.extra") {
		t.Error("web's approved plan was not applied")
	}
	w.noPlaceholderIn("files", ".knit")
}

// A module whose validation rejects the placeholder cannot be planned
// ahead: its entry says its input is known only after apply and why no
// placeholder served, and after the change set's approval it stops for
// its own approval with that reason, while the rest is applied.
func TestAModuleThatRejectsThePlaceholderStopsForItsOwnApproval(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.threeLevels(idModuleWith(`  validation {
    condition     = can(regex("^[0-9a-f]{8}-", var.upstream))
    error_message = "upstream must be an id."
  }
`, ""))
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("gated apply: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	sum, entries, _ := w.pendingEntries("qa/ids")
	if e := entries["app"]; len(e.Placeholders) != 1 || len(e.Resources) != 2 {
		t.Errorf("app is not planned with a placeholder: %+v", e)
	}
	web := entries["web"]
	if len(web.Resources) != 0 || len(web.Placeholders) != 0 ||
		!strings.Contains(web.KnownAfterApply, "input upstream comes from app.id, known only after app is applied") ||
		!strings.Contains(web.KnownAfterApply, "planned with a placeholder, the plan failed") ||
		!strings.Contains(web.KnownAfterApply, "upstream must be an id") {
		t.Fatalf("web's entry: %+v", web)
	}
	r := w.knit("approve", "qa/ids", "--change", sum)
	if r.code != 3 {
		t.Fatalf("approve: exit %d, want 3 (web waits)\n%s%s", r.code, r.stdout, r.stderr)
	}
	st := w.componentStatus("qa/ids", "web")
	if !strings.HasPrefix(st, "awaiting-approval") || !strings.Contains(st, "could not show the plan of web") || !strings.Contains(st, "upstream must be an id") {
		t.Errorf("web: %q", st)
	}
	if w.exists("files/web.txt") || !w.exists("files/app.txt") {
		t.Fatalf("web applied %v, app applied %v", w.exists("files/web.txt"), w.exists("files/app.txt"))
	}
	w.ok("approve", "qa/ids", "web")
	if got, app := w.read("files/web.txt"), w.read("files/app.txt"); got == "" || got == app {
		t.Errorf("web.txt = %q", got)
	}
	w.noPlaceholderIn("files", ".knit")
}

// An environment already applied whose first component is replaced (a new
// id): the component behind it is planned with a placeholder, and what
// its plan changes from the placeholder is shown as known after apply,
// never as the placeholder. One approval applies both, from the new id.
func TestAValueFromAPlaceholderIsShownAsKnownAfterApply(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.threeLevels(idModuleWith("", ""))
	w.ok("apply", "-f", "env.yaml", "--auto-approve")
	oldID := strings.TrimSpace(w.ok("output", "qa/ids", "net", "id").stdout)
	doc := strings.Replace(w.read("env.yaml"), "net.txt}\n", "net.txt}\n        - {name: rev, value: \"2\"}\n", 1)
	w.write(map[string]string{"env.yaml": doc})
	r := w.knit("apply", "-f", "env.yaml", "-o", "json")
	if r.code != 3 {
		t.Fatalf("gated apply: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "knit-known-after-apply") || !strings.Contains(r.stdout, `"new": "(known after apply)"`) {
		t.Errorf("app's plan shows a placeholder as a value, or no value known after apply:\n%s", r.stdout)
	}
	sum, entries, _ := w.pendingEntries("qa/ids")
	if e := entries["app"]; strings.Join(e.Placeholders, ",") != "upstream" || len(e.Resources) != 2 {
		t.Fatalf("app is not planned with a placeholder: %+v", e)
	}
	if r := w.knit("approve", "qa/ids", "--change", sum); r.code != 0 {
		t.Fatalf("approve: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	newID := strings.TrimSpace(w.ok("output", "qa/ids", "net", "id").stdout)
	if got := w.read("files/app.txt"); got != newID || newID == oldID {
		t.Errorf("app.txt = %q, want net's new id %q (was %q)", got, newID, oldID)
	}
	w.noPlaceholderIn("files", ".knit")
}
