package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
)

// countedModule is the smallest module with a resource and an output that
// depends on it.
const countedModule = `
variable "name" { type = string }
variable "extra" {
  type    = string
  default = ""
}
resource "terraform_data" "this" { input = "${var.name}${var.extra}" }
output "id" { value = "${var.name}-${terraform_data.this.id}" }
`

// secretOutput makes countedModule a module with a sensitive output.
const secretOutput = `
output "pw" {
  value     = "pw-${terraform_data.this.id}"
  sensitive = true
}
`

// countingTofu makes the world's tofu a wrapper that logs each invocation
// as "<command> <component>" (the component from the work dir's name)
// before running the real tofu.
func (w *world) countingTofu() {
	w.t.Helper()
	w.write(map[string]string{
		"modules/counted/main.tf": countedModule,
		"modules/secret/main.tf":  countedModule + secretOutput,
		"bin/tofu": fmt.Sprintf("#!/bin/sh\necho \"$1 $(basename \"$(dirname \"$PWD\")\")\" >> %s\nexec %s \"$@\"\n",
			w.path("calls.log"), tofuBin),
	})
	if err := os.Chmod(w.path("bin/tofu"), 0o755); err != nil {
		w.t.Fatal(err)
	}
	w.env = append(w.env, "KNIT_TF_BINARY="+w.path("bin/tofu"), "KNIT_TF_CLI_CONFIG="+filepath.Join(repo, ".tools", "tofurc"))
}

// calls returns the tool commands run since the last call, per component,
// each component's list in order (`version`, asked once per knit process,
// is left out).
func (w *world) calls() map[string][]string {
	w.t.Helper()
	data, _ := os.ReadFile(w.path("calls.log"))
	_ = os.Remove(w.path("calls.log"))
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		cmd, comp, _ := strings.Cut(line, " ")
		if cmd == "" || cmd == "version" {
			continue
		}
		out[comp] = append(out[comp], cmd)
	}
	return out
}

func countedComp(name, extra string) string {
	return fmt.Sprintf(`    - name: %[1]s
      type: terraform
      module: {source: ./modules/counted}
      variables:
        - {name: name, value: %[1]s}
%[2]s`, name, extra)
}

// TestToolProcessesPerComponent counts the tool processes knit starts per
// component, through a wrapper around the real tofu. The environment is
// auto-approved, so a component plans and applies in one process: a new
// component costs init and apply; a changed one apply; an unchanged one
// nothing; sensitive outputs one output -json more; an in-sync drift check
// one plan; a teardown one destroy. TestGatedComponentToolProcesses counts
// the gated path.
func TestToolProcessesPerComponent(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	env := func(extraB string) string {
		return envFile("count",
			countedComp("a", "      outputs: [{name: id}]\n"),
			countedComp("b", extraB+"      dependsOn: [a]\n      outputs: [{name: id}]\n"),
			strings.Replace(countedComp("s", "        - {name: extra, valueFrom: a.id}\n      outputs: [{name: id}, {name: pw, sensitive: true}]\n"),
				"./modules/counted", "./modules/secret", 1),
		)
	}
	check := func(what string, want map[string]string) {
		t.Helper()
		got := w.calls()
		names := map[string]bool{}
		for n := range got {
			names[n] = true
		}
		for n := range want {
			names[n] = true
		}
		var keys []string
		for n := range names {
			keys = append(keys, n)
		}
		sort.Strings(keys)
		for _, n := range keys {
			if g := strings.Join(got[n], " "); g != want[n] {
				t.Errorf("%s: %s ran %q, want %q", what, n, g, want[n])
			}
		}
	}

	w.writeEnv(env(""))
	w.ok("apply", "-f", "env.yaml")
	check("new", map[string]string{"a": "init apply", "b": "init apply", "s": "init apply output"})

	w.ok("apply", "-f", "env.yaml")
	check("unchanged", nil)

	w.writeEnv(env("        - {name: extra, value: x}\n"))
	r := w.ok("apply", "-f", "env.yaml", "-o", "json")
	check("changed", map[string]string{"b": "apply"})
	// Applied in one step, the change is still recorded as a plan.
	var res struct {
		Components []struct {
			Name, Status string
			Plan         *runner.Plan
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("bad JSON result: %v\n%s", err, r.stdout)
	}
	for _, c := range res.Components {
		if c.Name != "b" {
			continue
		}
		if c.Status != "applied" || c.Plan == nil || c.Plan.Change != 1 || len(c.Plan.Resources) != 1 ||
			c.Plan.Resources[0].Address != "terraform_data.this" || c.Plan.Resources[0].Action != runner.ActionUpdate ||
			len(c.Plan.OutputChanges) != 0 { // the id of terraform_data survives an update
			t.Errorf("b after a change: %s, plan %+v", c.Status, c.Plan)
		}
	}
	if hist := w.ok("history", "qa/count").stdout; !strings.Contains(hist, "apply") {
		t.Errorf("history:\n%s", hist)
	}

	w.ok("drift", "qa/count")
	check("drift in sync", map[string]string{"a": "plan", "b": "plan", "s": "plan"})

	w.ok("teardown", "qa/count", "--auto-approve")
	check("teardown", map[string]string{"a": "destroy", "b": "destroy", "s": "destroy"})
}

// TestTwoProcessesShareOneDataDir applies two environments from one data
// dir at the same moment, in two knit processes, each with components that
// install the same provider into the shared plugin cache: both succeed, and
// the cache they filled serves a third environment.
func TestTwoProcessesShareOneDataDir(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	envOf := func(name string) string {
		var comps []string
		for i := range 4 {
			comps = append(comps, fileComp(fmt.Sprintf("f%d", i), name, ""))
		}
		doc := strings.ReplaceAll(envFile(name, comps...), "FILES", w.path("files-"+name))
		return doc
	}
	for _, name := range []string{"one", "two", "three"} {
		w.write(map[string]string{name + ".yaml": envOf(name)})
	}
	done := make(chan result, 2)
	for _, name := range []string{"one", "two"} {
		go func() { done <- w.knit("apply", "-f", name+".yaml", "--parallelism", "4") }()
	}
	for range 2 {
		if r := <-done; r.code != 0 {
			t.Errorf("concurrent apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	w.ok("apply", "-f", "three.yaml")
	for _, name := range []string{"one", "two", "three"} {
		if got := w.read(fmt.Sprintf("files-%s/f3.txt", name)); got != name {
			t.Errorf("%s: f3.txt = %q", name, got)
		}
	}
}

// TestGatedComponentToolProcesses counts the tool processes of a component
// that waits for approval: its plan is saved and, once approved, that file
// is applied. A new component costs init, plan and apply; a changed one
// plan, show (the old and new values of what it updates, for the person
// who decides) and apply.
func TestGatedComponentToolProcesses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	env := func(extra string) string {
		doc := envFile("gcount", countedComp("g", extra+"      outputs: [{name: id}]\n"))
		return strings.Replace(doc, "  autoApprove: true\n", "  autoApprove: false\n", 1)
	}
	for _, step := range []struct {
		extra, want string
	}{
		{"", "init plan apply"},
		{"        - {name: extra, value: x}\n", "plan show apply"},
	} {
		w.writeEnv(env(step.extra))
		if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
			t.Fatalf("gated apply: exit %d, want 3 (approval gate)\n%s%s", r.code, r.stdout, r.stderr)
		}
		w.ok("approve", "qa/gcount", "g")
		if got := strings.Join(w.calls()["g"], " "); got != step.want {
			t.Errorf("gated component ran %q, want %q", got, step.want)
		}
	}
	if out := w.ok("audit", "qa/gcount").stdout; !strings.Contains(out, "approve") {
		t.Errorf("audit lacks the approvals:\n%s", out)
	}
}

// TestTheToolVersionIsAskedOncePerBinary: knit remembers the tool's
// version in the user's cache dir, keyed by the binary's path, size and
// time, so a fresh data dir starts no `version` process; a changed binary
// is asked again.
func TestTheToolVersionIsAskedOncePerBinary(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	w.writeEnv(envFile("count", countedComp("a", "")))
	versions := func() int {
		data, _ := os.ReadFile(w.path("calls.log"))
		_ = os.Remove(w.path("calls.log"))
		return strings.Count(string(data), "version ")
	}
	w.ok("apply", "-f", "env.yaml")
	if n := versions(); n != 1 {
		t.Fatalf("first run: version asked %d times, want 1", n)
	}
	w.knitWith([]string{"KNIT_DATA_DIR=" + w.path("other-data")}, "apply", "-f", "env.yaml")
	if n := versions(); n != 0 {
		t.Errorf("a fresh data dir asked the version again (%d times)", n)
	}
	// A rebuilt binary (here: the wrapper rewritten) may be another version.
	w.countingTofu()
	w.write(map[string]string{"bin/tofu": mustRead(t, w.path("bin/tofu")) + "\n# rebuilt\n"})
	w.ok("apply", "-f", "env.yaml")
	if n := versions(); n != 1 {
		t.Errorf("a changed binary: version asked %d times, want 1", n)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestNewComponentIsInitialisedWhileItsDependencyApplies: b depends on a,
// and a's apply only succeeds once b's init has ended (its provisioner
// waits for the wrapper around tofu to log that), so the apply passes only
// if knit runs b's init ahead, in a slot a leaves idle. b still costs two
// tool processes, and its log starts with the init.
func TestNewComponentIsInitialisedWhileItsDependencyApplies(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	log := w.path("ends.log")
	w.write(map[string]string{
		"modules/counted/main.tf": countedModule,
		"modules/waits/main.tf": fmt.Sprintf(`
resource "terraform_data" "waits" {
  provisioner "local-exec" {
    command = "for i in $(seq 300); do grep -q 'init b' %[1]s && exit 0; sleep 0.1; done; echo 'b was not initialised while a applied' >&2; exit 1"
  }
}
output "id" { value = terraform_data.waits.id }
`, log),
		// Logs "<command> <component>" once the command has ended.
		"bin/tofu": fmt.Sprintf("#!/bin/sh\n%s \"$@\"\nrc=$?\necho \"$1 $(basename \"$(dirname \"$PWD\")\")\" >> %s\nexit $rc\n", tofuBin, log),
	})
	if err := os.Chmod(w.path("bin/tofu"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "KNIT_TF_BINARY="+w.path("bin/tofu"), "KNIT_TF_CLI_CONFIG="+filepath.Join(repo, ".tools", "tofurc"))
	w.writeEnv(envFile("ahead",
		"    - name: a\n      type: terraform\n      module: {source: ./modules/waits}\n      outputs: [{name: id}]\n",
		countedComp("b", "        - {name: extra, valueFrom: a.id}\n"),
	))
	w.ok("apply", "-f", "env.yaml", "--parallelism", "2")

	ends := strings.Fields(w.read("ends.log"))
	var b []string
	for i := 0; i+1 < len(ends); i += 2 {
		if ends[i+1] == "b" && ends[i] != "version" {
			b = append(b, ends[i])
		}
	}
	if strings.Join(b, " ") != "init apply" {
		t.Errorf("b ran %q, want init then apply (tool log %q)", b, ends)
	}
	if logs := w.ok("logs", "qa/ahead", "b").stdout; !strings.Contains(logs, "Initializing") {
		t.Errorf("b's log lacks its init:\n%s", logs)
	}
}
