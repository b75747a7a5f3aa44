package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The acceptance of issue 41 item 3: a set's template change rolled out
// in waves, with a counting wrapper around tofu.

// waveModule is an app whose url output names its release and
// environment, so the loopback health endpoint fails exactly the
// releases of environments a test breaks.
const waveModule = `
variable "url" { type = string }
variable "release" { type = string }
resource "terraform_data" "app" { input = var.release }
output "url" { value = var.url }
output "release" { value = terraform_data.app.output }
`

const waveTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: app}
spec:
  parameters:
    - {name: name, type: string, required: true}
    - {name: release, type: string, required: true}
  components:
    - name: app
      type: terraform
      module: {source: ../modules/app}
      variables:
        - {name: url, value: "URL?release=${param.release}-${param.name}"}
        - {name: release, value: "${param.release}"}
      outputs: [{name: url}, {name: release}]
      health:
        - name: http-ok
          http: {url: {valueFrom: app.url}, expectStatus: 200}
          count: 2
          interval: 10ms
`

// waveSet is set shop/fleet of n environments c01…cNN at release, those
// in labelled labelled upgrade_testing, rolled out in waves as waves says.
func waveSet(n int, release, waves string, labelled ...int) string {
	var els []string
	for i := 1; i <= n; i++ {
		el := fmt.Sprintf("{name: c%02d", i)
		if slices.Contains(labelled, i) {
			el += `, labels: {upgrade_testing: "true"}`
		}
		els = append(els, el+"}")
	}
	return `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: fleet}
spec:
  teamName: shop
  envName: "{{ .name }}"
  autoApprove: true
  template: {path: ../templates/app.yaml}
  parameters: {name: "{{ .name }}", release: "` + release + `"}
  rollout:
    onFailure: rollback
    waves:
` + waves + `
  generators:
    - list: {elements: [` + strings.Join(els, ", ") + `]}
`
}

// waveTofu makes tofu a wrapper logging "<command> <env>" to calls.log
// whose apply waits while marks/hold-<env> exists (marks/held-<env> says
// it waits and holds its process ID); an apply is logged once it goes on,
// so one killed while it waits was never applied nor counted.
func (w *world) waveTofu() {
	w.t.Helper()
	marks := w.path("marks")
	if err := os.MkdirAll(marks, 0o755); err != nil {
		w.t.Fatal(err)
	}
	w.write(map[string]string{"bin/tofu": fmt.Sprintf(`#!/bin/sh
env=$(basename "$(dirname "$(dirname "$PWD")")")
if [ "$1" = apply ] && [ -f %[3]s/hold-$env ]; then echo $$ > %[3]s/held-$env; while [ -f %[3]s/hold-$env ]; do sleep 0.1; done; fi
echo "$1 $env" >> %[1]s
exec %[2]s "$@"
`, w.path("calls.log"), tofuBin, marks)})
	if err := os.Chmod(w.path("bin/tofu"), 0o755); err != nil {
		w.t.Fatal(err)
	}
	w.env = append(w.env, "KNIT_TF_BINARY="+w.path("bin/tofu"), "KNIT_TF_CLI_CONFIG="+filepath.Join(repo, ".tools", "tofurc"))
}

// applies are the environments tofu applied since the last call, in order
// (an environment once per apply).
func (w *world) applies() []string {
	w.t.Helper()
	data, _ := os.ReadFile(w.path("calls.log"))
	_ = os.Truncate(w.path("calls.log"), 0)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if cmd, env, _ := strings.Cut(line, " "); cmd == "apply" {
			out = append(out, env)
		}
	}
	return out
}

func (w *world) hold(env string) { w.write(map[string]string{"marks/hold-" + env: "x"}) }

func (w *world) unhold(env string) {
	if err := os.Remove(w.path("marks/hold-" + env)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) heldNow(env string) bool {
	_, err := os.Stat(w.path("marks/held-" + env))
	return err == nil
}

// fleetJSON is knit fleet status -o json, decoded.
type fleetJSON struct {
	Rollout *struct {
		Status, Commit, Replaced, Why string
		Wave                          int
		Waves                         []struct {
			Step string
			IDs  []string
			Note string
		}
	}
	Envs []struct {
		ID, State, Commit, Status, Message string
		Wave, Revision                     int
	}
}

func (w *world) fleet(s *server, args ...string) fleetJSON {
	w.t.Helper()
	return w.fleetOf(s, "fleet", args...)
}

// fleetOf is knit fleet status NAME -o json, decoded.
func (w *world) fleetOf(s *server, name string, args ...string) fleetJSON {
	w.t.Helper()
	out := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}, append([]string{"fleet", "status", name, "-o", "json"}, args...)...)
	var f fleetJSON
	if out.code != 0 || json.Unmarshal([]byte(out.stdout), &f) != nil {
		return fleetJSON{}
	}
	return f
}

func (f fleetJSON) state(env string) string {
	for _, e := range f.Envs {
		if e.ID == "shop/"+env {
			return e.State
		}
	}
	return ""
}

func (f fleetJSON) count(state string) int {
	n := 0
	for _, e := range f.Envs {
		if e.State == state {
			n++
		}
	}
	return n
}

func (w *world) appRelease(env string) string {
	w.t.Helper()
	return strings.TrimSpace(w.ok("output", "shop/"+env, "app", "release").stdout)
}

// waveWorld starts a server over a repository holding set fleet at
// release 1, and waits until its n environments applied it (all at once:
// new environments have no release to keep).
func waveWorld(t *testing.T, n int, waves string, labelled ...int) (*world, *server, *gitRepo, *releases) {
	w := newWorld(t)
	w.waveTofu()
	url, broken := endpoint(t)
	repo := newGitRepo(t, map[string]string{
		"modules/app/main.tf": waveModule,
		"templates/app.yaml":  strings.ReplaceAll(waveTemplate, "URL", url),
		"envs/fleet.yaml":     waveSet(n, "1", waves, labelled...),
	})
	s := w.startServer(gitServerArgs(repo)...)
	for i := 1; i <= n; i++ {
		env := fmt.Sprintf("shop/c%02d", i)
		s.eventually(env+" at release 1", func() bool { e, _ := s.env(env); return e.Status == "provisioned" })
	}
	if got := len(w.applies()); got != n {
		t.Fatalf("the first commit applied %d environments, want all %d", got, n)
	}
	return w, s, repo, broken
}

const acceptanceWaves = `      steps: [{selector: {matchLabels: {upgrade_testing: "true"}}}, {percent: 25}, {percent: 100}]
      maxFailed: 1
      maxParallel: 1`

// A template change to 12 environments with waves [upgrade_testing, 25%,
// 100%], maxFailed 1, maxParallel 1: the labelled environment goes alone
// first; 25% of 12 is 3, so wave 2 adds c01 and c02; c02's health check
// fails and it rolls back (onFailure: rollback), which maxFailed 1
// tolerates; in wave 3, c03 fails too: a second failure halts the
// rollout, and the eight environments no wave reached keep release 1,
// never applied (the counting wrapper saw exactly c05, c01, c02 twice
// and c03 twice). Another team's operator cannot skip the halted wave;
// the set's own operator aborts it.
func TestASetRollsATemplateChangeInWavesAndHaltsAtTheSecondFailure(t *testing.T) {
	t.Parallel()
	w, s, repo, broken := waveWorld(t, 12, acceptanceWaves, 5)
	broken.set("2-c02", "2-c03")
	w.hold("c05")
	change := repo.commit("fleet: release 2", map[string]string{"envs/fleet.yaml": waveSet(12, "2", acceptanceWaves, 5)})
	s.eventually("c05 applies release 2, held", func() bool { return w.heldNow("c05") })
	f := w.fleet(s)
	if f.Rollout == nil || f.Rollout.Commit != change || f.state("c05") != "applying" || f.count("waiting") != 11 || f.Rollout.Wave != 0 {
		t.Fatalf("while the first wave applies: %+v", f)
	}
	if got := len(f.Rollout.Waves[1].IDs); got != 2 || !strings.Contains(f.Rollout.Why, "wave 1 of 3 (upgrade_testing=true)") {
		t.Errorf("wave 2 has %d environments (25%% of 12 is 3, one reached already), why %q", got, f.Rollout.Why)
	}
	human := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}, "fleet", "status", "fleet").stdout
	for _, want := range []string{"wave 1 of 3", "upgrade_testing=true", "shop/c05", "applying", "rev 1 @"} {
		if !strings.Contains(human, want) {
			t.Errorf("knit fleet status does not say %q:\n%s", want, human)
		}
	}
	w.unhold("c05")
	s.eventually("the rollout halts", func() bool { f = w.fleet(s); return f.Rollout != nil && f.Rollout.Status == "halted" })
	if !strings.Contains(f.Rollout.Why, "halted: 2 environments failed") {
		t.Errorf("why: %q", f.Rollout.Why)
	}
	// Wait for c03's rollback to end before counting.
	s.eventually("c03 rolled back", func() bool { return w.appRelease("c03") == "1" && w.appRelease("c02") == "1" })
	for env, want := range map[string]string{"c05": "verified", "c01": "verified", "c02": "failed", "c03": "failed", "c04": "waiting", "c12": "waiting"} {
		if got := f.state(env); got != want {
			t.Errorf("%s is %s in the rollout, want %s", env, got, want)
		}
	}
	// Release 2 in wave order: c05, then c01 and c02, then c03. c02's
	// rollback is a run of its own after its failed one: the next wave
	// may start beside it, so it lands anywhere after c02's first apply.
	applied := w.applies()
	var rest []string
	if len(applied) > 3 {
		rest = slices.Sorted(slices.Values(applied[3:]))
	}
	if len(applied) != 6 || strings.Join(applied[:3], " ") != "c05 c01 c02" || strings.Join(rest, " ") != "c02 c03 c03" {
		t.Errorf("tofu applied %v, want exactly c05 c01 c02 (release 2, wave by wave), then c02's rollback and c03 twice (release 2, its rollback)", applied)
	}
	for env, rel := range map[string]string{"c05": "2", "c01": "2", "c04": "1", "c06": "1", "c12": "1"} {
		if got := w.appRelease(env); got != rel {
			t.Errorf("%s runs release %s, want %s", env, got, rel)
		}
	}
	if revs := s.revisions("shop/c12"); len(revs) != 1 {
		t.Errorf("c12, which no wave reached, has %d revisions, want its first only", len(revs))
	}

	// Another team's operator may not skip the halted wave (nor see it).
	other := strings.TrimSpace(w.ok("token", "create", "pay-ci", "--role", "operator", "--team", "pay").stdout)
	res := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + other}, "fleet", "skip", "shop/fleet")
	if res.code == 0 || !strings.Contains(res.stderr, "another team") {
		t.Errorf("another team's skip: code %d, %s", res.code, res.stderr)
	}
	if f := w.fleet(s); f.Rollout.Status != "halted" || f.count("waiting") != 8 {
		t.Errorf("after a refused skip: %s, %d waiting", f.Rollout.Status, f.count("waiting"))
	}
	out := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}, "fleet", "abort", "fleet", "--reason", "bad release")
	if out.code != 0 || !strings.Contains(out.stdout, "aborted") {
		t.Fatalf("abort: %d %s %s", out.code, out.stdout, out.stderr)
	}
	var audit struct {
		Items []struct{ Action, Actor, Reason, Detail string }
	}
	s.do("GET", "/api/v1/audit?actor=root", nil, &audit)
	found := false
	for _, e := range audit.Items {
		found = found || e.Action == "fleet-abort" && e.Reason == "bad release" && strings.Contains(e.Detail, "8 environments keep their release")
	}
	if !found {
		t.Errorf("no fleet-abort in the audit trail: %+v", audit.Items)
	}
	// A commit the reconciler records after the abort: its rollouts were
	// stepped since, and nothing more may apply.
	later := repo.commit("unrelated", map[string]string{"README.md": "fleet"})
	s.logged("a later commit recorded", committed(later))
	if got := w.applies(); len(got) != 0 {
		t.Errorf("after the abort tofu applied %v", got)
	}
}
