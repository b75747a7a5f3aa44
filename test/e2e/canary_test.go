package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// canaryAppModule is an app instance: its url output names its version.
const canaryAppModule = `
variable "url" { type = string }
variable "release" { type = string }
resource "terraform_data" "app" { input = var.release }
output "url" { value = "${var.url}?version=${terraform_data.app.output}" }
`

// canaryRouterModule is the router: it writes the weight and both
// upstreams where the test reads them, as a real router's config.
const canaryRouterModule = `
variable "canary_weight" { type = number }
variable "stable" { type = string }
variable "canary" { type = string }
variable "conf" { type = string }
resource "terraform_data" "conf" {
  input            = "${var.canary_weight} ${var.stable} ${var.canary}"
  triggers_replace = "${var.canary_weight} ${var.stable} ${var.canary}"
  provisioner "local-exec" {
    command = "echo '${var.canary_weight} ${var.stable} ${var.canary}' > ${var.conf}"
  }
}
output "weight" { value = var.canary_weight }
`

// canaryEnv is shop/canary: app at version, behind the router, rolled out
// by steps (YAML list items); analysis steps log the router's config as
// they find it in seen.
func canaryEnv(url, version, conf, steps string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: canary}
spec:
  teamName: shop
  envName: canary
  autoApprove: true
  rollout:
    strategy:
      canary:
        traffic: {component: router, weightInput: canary_weight}
        steps:
` + steps + `
  components:
    - name: app
      type: terraform
      canary: true
      module: {source: ./app}
      variables:
        - {name: url, value: "` + url + `"}
        - {name: release, value: "` + version + `"}
      outputs: [{name: url}]
    - name: router
      type: terraform
      module: {source: ./router}
      variables:
        - {name: canary_weight, value: 0}
        - {name: stable, valueFrom: app.url}
        - {name: canary, valueFrom: app-canary.url}
        - {name: conf, value: "` + conf + `"}
      outputs: [{name: weight}]
`
}

// observe is an analysis step that logs the router's config to seen.
func observe(name, conf, seen string) string {
	return `          - analysis:
              - name: ` + name + `
                command: "cat ` + conf + ` >> ` + seen + `"
`
}

// versions is an app endpoint that answers 500 for the versions named.
func versions(t *testing.T, broken string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if req.URL.Query().Get("version") == broken {
			rw.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

type rolloutStatus struct {
	State, Reason string
	Step, Weight  int
	Evidence      []struct {
		Phase, Status, Verification, RunID string
		Step, Weight                       int
	}
}

func (w *world) rollout() rolloutStatus {
	w.t.Helper()
	var s rolloutStatus
	if err := json.Unmarshal([]byte(w.ok("rollout", "status", "shop/canary", "-o", "json").stdout), &s); err != nil {
		w.t.Fatal(err)
	}
	return s
}

// after checks where shop/canary ended: the router's config, the stable
// app's version, and that no canary instance is left.
func (w *world) canaryEndsAt(conf, version string) {
	w.t.Helper()
	if got, _ := os.ReadFile(conf); !strings.HasPrefix(string(got), "0 ") || strings.Count(string(got), "version="+version) != 2 {
		w.t.Errorf("the router's config at the end: %q, want weight 0 and both upstreams at version %s", got, version)
	}
	st := w.ok("status", "shop/canary").stdout
	if strings.Contains(st, "app-canary") {
		w.t.Errorf("the canary instance is left:\n%s", st)
	}
	if out := w.ok("output", "shop/canary", "app", "url").stdout; !strings.Contains(out, "version="+version) {
		w.t.Errorf("the stable app runs %q, want version %s", out, version)
	}
}

// A change of the canary's app rolls out step by step: the canary comes
// up beside the stable app, the router takes each weight with both
// upstreams (what the analysis steps see), and at the end the stable app
// runs the new version, the router is back at 0 and the canary is gone.
func TestCanaryRollsOutStepByStep(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url, conf, seen := versions(t, ""), w.path("router.conf"), w.path("seen")
	steps := "          - setWeight: 10\n" + observe("at-10", conf, seen) + "          - setWeight: 50\n" + observe("at-50", conf, seen) + "          - setWeight: 100\n"
	w.write(map[string]string{"app/main.tf": canaryAppModule, "router/main.tf": canaryRouterModule, "env.yaml": canaryEnv(url, "1", conf, steps)})
	w.ok("apply", "-f", "env.yaml") // the first apply is plain
	if _, err := os.Stat(seen); err == nil {
		t.Fatal("the first apply ran the analysis steps")
	}
	w.canaryEndsAt(conf, "1")

	w.write(map[string]string{"env.yaml": canaryEnv(url, "2", conf, steps)})
	r := w.knit("apply", "-f", "env.yaml")
	if r.code != 0 {
		t.Fatalf("the rollout: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got, _ := os.ReadFile(seen)
	want := "10 " + url + "?version=1 " + url + "?version=2\n50 " + url + "?version=1 " + url + "?version=2\n"
	if string(got) != want {
		t.Errorf("the analyses saw the router at:\n%s\nwant:\n%s", got, want)
	}
	w.canaryEndsAt(conf, "2")
	s := w.rollout()
	if s.State != "succeeded" || s.Weight != 0 {
		t.Errorf("rollout: %+v", s)
	}
	var weights []int
	for _, e := range s.Evidence {
		if e.Phase == "step" {
			weights = append(weights, e.Weight)
		}
	}
	if len(weights) != 5 || weights[0] != 10 || weights[2] != 50 || weights[4] != 100 {
		t.Errorf("the steps ran at weights %v, want 10 10 50 50 100", weights)
	}
	// The environment is the new revision as the file says it.
	rev := w.ok("history", "shop/canary").stdout
	if !strings.Contains(rev, "succeeded") {
		t.Errorf("history:\n%s", rev)
	}
}

// A canary whose analysis fails aborts the rollout: the router goes back
// to 0, the canary is destroyed, the stable app stays on version 1, the
// command fails naming the check and what it saw.
func TestCanaryFailingAnalysisAborts(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url, conf := versions(t, "2"), w.path("router.conf")
	steps := `          - setWeight: 10
          - analysis:
              - name: canary-ok
                http: {url: {valueFrom: app-canary.url}, expectStatus: 200}
          - setWeight: 50
`
	w.write(map[string]string{"app/main.tf": canaryAppModule, "router/main.tf": canaryRouterModule, "env.yaml": canaryEnv(url, "1", conf, steps)})
	w.ok("apply", "-f", "env.yaml")
	w.write(map[string]string{"env.yaml": canaryEnv(url, "2", conf, steps)})
	r := w.knit("apply", "-f", "env.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "rollout aborted") {
		t.Fatalf("the failing rollout: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	w.canaryEndsAt(conf, "1")
	s := w.rollout()
	if s.State != "aborted" || !strings.Contains(s.Reason, "canary-ok") || !strings.Contains(s.Reason, "500") {
		t.Errorf("rollout: %+v", s)
	}
	for _, e := range s.Evidence {
		if e.Weight > 10 {
			t.Errorf("a step ran at weight %d after the failed analysis at 10: %+v", e.Weight, s.Evidence)
		}
	}
}

// A pause without a duration stops knit apply with exit 3; a promote of
// a rollout that is not paused is refused; knit rollout promote goes on
// to the end; an abort of a paused rollout turns it back.
func TestCanaryPausesForAPerson(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url, conf := versions(t, ""), w.path("router.conf")
	steps := "          - setWeight: 10\n          - pause: {}\n          - setWeight: 50\n"
	w.write(map[string]string{"app/main.tf": canaryAppModule, "router/main.tf": canaryRouterModule, "env.yaml": canaryEnv(url, "1", conf, steps)})
	w.ok("apply", "-f", "env.yaml")
	if r := w.knit("rollout", "promote", "shop/canary"); r.code != 1 || !strings.Contains(r.stderr, "no rollout") {
		t.Errorf("promote without a rollout: exit %d\n%s", r.code, r.stderr)
	}
	w.write(map[string]string{"env.yaml": canaryEnv(url, "2", conf, steps)})
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 || !strings.Contains(r.stderr, "knit rollout promote shop/canary") {
		t.Fatalf("apply up to the pause: exit %d\n%s", r.code, r.stderr)
	}
	if s := w.rollout(); s.State != "paused" || s.Weight != 10 || s.Step != 1 {
		t.Errorf("paused rollout: %+v", s)
	}
	if got, _ := os.ReadFile(conf); !strings.HasPrefix(string(got), "10 ") {
		t.Errorf("the router while paused: %q", got)
	}
	w.ok("rollout", "promote", "shop/canary", "--reason", "looks good")
	w.canaryEndsAt(conf, "2")
	if r := w.knit("rollout", "promote", "shop/canary"); r.code != 1 || !strings.Contains(r.stderr, "no rollout under way") {
		t.Errorf("a second promote: exit %d\n%s", r.code, r.stderr)
	}

	// Version 3 pauses at 10 again; an abort goes back to version 2.
	w.write(map[string]string{"env.yaml": canaryEnv(url, "3", conf, steps)})
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("apply of version 3: exit %d\n%s", r.code, r.stderr)
	}
	if r := w.knit("rollout", "abort", "shop/canary", "--reason", "not today"); r.code != 1 || !strings.Contains(r.stderr, "rollout aborted") {
		t.Errorf("abort: exit %d\n%s", r.code, r.stderr)
	}
	w.canaryEndsAt(conf, "2")
	if s := w.rollout(); s.State != "aborted" || !strings.Contains(s.Reason, "not today") {
		t.Errorf("aborted rollout: %+v", s)
	}
}
