package knit

import (
	"fmt"
	"strings"
	"testing"

	"knit.dev/knit/internal/spec"
)

// blueGreenEnv is a blue/green environment at app version v; scaleDown
// is its scaleDownDelay ("" for none).
func blueGreenEnv(t *testing.T, v, scaleDown string) *spec.Environment {
	t.Helper()
	delay := ""
	if scaleDown != "" {
		delay = "\n        scaleDownDelay: " + scaleDown
	}
	text := `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: bg}
spec:
  teamName: shop
  envName: bg
  rollout:
    strategy:
      blueGreen:
        switch: {component: router, input: active_color}
        previewChecks: [{name: preview, http: {url: {valueFrom: router.preview_url}}}]
        postSwitchChecks: [{name: live, http: {url: {valueFrom: router.url}}}]` + delay + `
  components:
    - name: app
      type: script
      blueGreen: true
      script: {apply: "echo '{\"addr\": \"x\"}'"}
      variables: [{name: version, value: ` + v + `}]
      outputs: [{name: addr}]
    - name: router
      type: script
      script: {apply: "echo '{\"url\": \"u\", \"preview_url\": \"p\"}'"}
      variables:
        - {name: blue, valueFrom: app-blue.addr}
        - {name: green, valueFrom: app-green.addr}
        - {name: active_color, value: blue}
      outputs: [{name: url}, {name: preview_url}]
`
	env, diags := spec.Parse("env.yaml", t.TempDir(), []byte(text))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return env
}

// colorsOf says what a form runs: its components with app's version,
// the router's inputs, and its checks.
func colorsOf(t *testing.T, env *spec.Environment) string {
	t.Helper()
	var parts []string
	for _, c := range env.Spec.Components {
		s := c.Name
		for _, v := range c.Variables {
			switch {
			case v.ValueFrom != "":
				s += " " + v.Name + "<-" + string(v.ValueFrom)
			default:
				s += " " + v.Name + "=" + strings.TrimSpace(toString(v.Value))
			}
		}
		if c.BlueGreen || c.Canary {
			s += " (marked)"
		}
		parts = append(parts, s)
	}
	if env.Spec.Health != nil {
		for _, h := range env.Spec.Health.Checks {
			parts = append(parts, "check "+h.Name)
		}
	}
	if env.Spec.Strategy() != nil {
		parts = append(parts, "strategy")
	}
	return strings.Join(parts, "; ")
}

func toString(v any) string { return fmt.Sprint(v) }

// TestBlueGreenPhasesRunTheseEnvironments: each phase of a blue/green
// rollout runs green beside blue (the marked component itself) or not,
// the switch on the color the phase says, and the checks it says:
// preview checks while blue serves, post-switch checks once green does.
func TestBlueGreenPhasesRunTheseEnvironments(t *testing.T) {
	stable, next := blueGreenEnv(t, "v1", "30s"), blueGreenEnv(t, "v2", "30s")
	want := map[string]string{
		PhaseUp:      "app version=v1; router blue<-app.addr green<-app-green.addr active_color=blue; app-green version=v2; check preview",
		PhaseStep:    "app version=v1; router blue<-app.addr green<-app-green.addr active_color=green; app-green version=v2; check live",
		PhasePromote: "app version=v2; router blue<-app.addr green<-app-green.addr active_color=blue; app-green version=v2",
		PhaseFinish:  "app version=v2 (marked); router blue<-app.addr green<-app.addr active_color=blue; strategy",
		PhaseAbort:   "app version=v1; router blue<-app.addr green<-app-green.addr active_color=blue; app-green version=v2",
		PhaseAborted: "app version=v1 (marked); router blue<-app.addr green<-app.addr active_color=blue; strategy",
	}
	for phase, w := range want {
		env, weight, err := blueGreenRun(phase, stable, next)
		if err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		if got := colorsOf(t, env); got != w {
			t.Errorf("%s:\n got %s\nwant %s", phase, got, w)
		}
		if wantW := map[bool]int{true: 100, false: 0}[phase == PhaseStep]; weight != wantW {
			t.Errorf("%s: weight %d, want %d", phase, weight, wantW)
		}
	}
	if _, _, err := blueGreenRun("sideways", stable, next); err == nil {
		t.Error("an unknown phase ran")
	}
	// The forms are copies: the revisions they come from are unchanged.
	if got := colorsOf(t, next); !strings.Contains(got, "green<-app-green.addr") || !strings.Contains(got, "app-blue") {
		t.Errorf("next changed: %s", got)
	}
}

// TestBlueGreenStepsAreTheFlipThenTheDelay: the rollout's steps are the
// flip (weight 100, post-switch checks) then the delay, a pause that waits
// for a person when there is none.
func TestBlueGreenStepsAreTheFlipThenTheDelay(t *testing.T) {
	for delay, pause := range map[string]string{"30s": "30s", "": ""} {
		steps := rolloutSteps(blueGreenEnv(t, "v2", delay))
		if len(steps) != 2 || steps[0].SetWeight == nil || *steps[0].SetWeight != 100 || len(steps[0].Analysis) != 1 ||
			steps[1].Pause == nil || steps[1].Pause.Duration != pause {
			t.Errorf("delay %q: steps %+v", delay, steps)
		}
	}
	if d := describeStep(PhaseStep, 0, 100, 2, true); !strings.Contains(d, "flips to green") {
		t.Errorf("describe: %s", d)
	}
}
