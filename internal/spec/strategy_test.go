package spec

import (
	"strings"
	"testing"
)

// canaryApps are an app marked canary and a router taking its weight and
// both instances' addresses.
const canaryApps = `    - name: app
      type: script
      script: {apply: x}
      canary: true
      variables: [{name: version, value: v1}]
      outputs: [{name: url}]
    - name: router
      type: script
      script: {apply: x}
      variables:
        - {name: canary_weight, value: 0}
        - {name: stable, valueFrom: app.url}
        - {name: canary, valueFrom: app-canary.url}
`

const canaryRollout = `  rollout:
    strategy:
      canary:
        traffic: {component: router, weightInput: canary_weight}
        steps:
          - setWeight: 10
          - pause: {}
          - analysis:
              - name: errors
                prometheus: {url: "http://127.0.0.1:9090", query: "sum(rate(errors[1m]))", condition: "result < 0.05"}
          - setWeight: 50
          - pause: {duration: 30s}
          - setWeight: 100
`

func TestCanaryStrategyParses(t *testing.T) {
	env := mustParse(t, header+canaryApps+canaryRollout)
	c := env.Spec.Canary()
	if c == nil || c.Traffic.Component != "router" || c.Traffic.WeightInput != "canary_weight" || len(c.Steps) != 6 {
		t.Fatalf("canary: %+v", c)
	}
	if *c.Steps[0].SetWeight != 10 || c.Steps[1].Pause == nil || c.Steps[1].Pause.Duration != "" ||
		len(c.Steps[2].Analysis) != 1 || c.Steps[4].Pause.Duration != "30s" || *c.Steps[5].SetWeight != 100 {
		t.Errorf("steps: %+v", c.Steps)
	}
	if !env.Marked(env.Component("app")) || env.Marked(env.Component("router")) {
		t.Error("only app is marked")
	}
	// The router takes app-canary's outputs; while no canary is up, app's.
	if got := env.Dependencies(env.Component("router")); strings.Join(got, ",") != "app" {
		t.Errorf("router depends on %v, want [app]", got)
	}
	if base, ok := env.InstanceOf("app-canary"); !ok || base.Name != "app" {
		t.Errorf("InstanceOf(app-canary) = %v, %v", base, ok)
	}
	// Without a strategy nothing changes.
	if plain := mustParse(t, header+app); plain.Spec.Strategy() != nil || plain.InstanceSuffixes() != nil {
		t.Error("a file without a strategy has one")
	}
}

func TestBlueGreenStrategyParses(t *testing.T) {
	src := header + strings.Replace(strings.Replace(canaryApps, "canary: true", "blueGreen: true", 1), "app-canary.url", "app-green.url", 1) +
		"  rollout:\n    strategy:\n      blueGreen:\n        switch: {component: router, input: canary_weight}\n" +
		"        previewChecks: [{name: preview, http: {url: {valueFrom: app-green.url}}}]\n        scaleDownDelay: 1m\n"
	env := mustParse(t, src)
	b := env.Spec.Strategy().BlueGreen
	if b == nil || b.Switch.Component != "router" || b.Switch.Input != "canary_weight" || len(b.PreviewChecks) != 1 || b.ScaleDownDelay != "1m" {
		t.Fatalf("blueGreen: %+v", b)
	}
	if _, ok := env.InstanceOf("app-blue"); !ok {
		t.Error("app-blue is no instance of app")
	}
}

// Every mistake in a strategy is reported at its line with a fix.
func TestStrategyValidate(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
		hint string
	}{
		{"router missing", header + canaryApps + strings.Replace(canaryRollout, "component: router", "component: routr", 1),
			[]string{`24:19 spec.rollout.strategy.canary.traffic.component: component "routr" does not exist`}, `did you mean "router"`},
		{"weight input missing", header + canaryApps + strings.Replace(canaryRollout, "weightInput: canary_weight", "weightInput: weight", 1),
			[]string{`24:38 spec.rollout.strategy.canary.traffic.weightInput: component "router" has no variable "weight"`}, "declare it"},
		{"weights fall", header + canaryApps + strings.Replace(canaryRollout, "setWeight: 100", "setWeight: 40", 1),
			[]string{`33:13 spec.rollout.strategy.canary.steps[5].setWeight: weight 40 does not rise above the step before's 50`}, "higher weight"},
		{"weight over 100", header + canaryApps + strings.Replace(canaryRollout, "setWeight: 100", "setWeight: 101", 1),
			[]string{`33:13 spec.rollout.strategy.canary.steps[5].setWeight: 101 is not a share in percent`}, "0 to 100"},
		{"two kinds in a step", header + canaryApps + strings.Replace(canaryRollout, "- setWeight: 50", "- {setWeight: 50, pause: {}}", 1),
			[]string{`31:13 spec.rollout.strategy.canary.steps[3]: set one of setWeight, pause, analysis, not several`}, "split"},
		{"bad pause", header + canaryApps + strings.Replace(canaryRollout, "duration: 30s", "duration: soon", 1),
			[]string{`32:21 spec.rollout.strategy.canary.steps[4].pause.duration: "soon" is not a duration`}, "10s"},
		{"bad analysis", header + canaryApps + strings.Replace(canaryRollout, `condition: "result < 0.05"`, `condition: "low"`, 1),
			[]string{`30:92 spec.rollout.strategy.canary.steps[2].analysis[0].prometheus.condition: "low" is not a condition`}, "result < 0.01"},
		{"nothing marked", header + strings.Replace(canaryApps, "      canary: true\n", "", 1) + canaryRollout,
			[]string{`19:26 spec.components[1].variables[2].valueFrom: component "app-canary" does not exist`,
				`22:7 spec.rollout.strategy.canary: no component is marked canary: true`}, "canary: true"},
		{"canary name taken", header + canaryApps + "    - {name: app-canary, type: script, script: {apply: x}}\n" + canaryRollout,
			[]string{`8:7 spec.components[0].name: the rollout brings "app" up a second time as "app-canary", and a component has that name already`,
				`20:26 spec.components[1].variables[2].valueFrom: component "app-canary" does not declare output "url"`}, "rename"},
		{"mark without strategy", header + canaryApps,
			[]string{`11:7 spec.components[0].canary: canary: true needs spec.rollout.strategy.canary`,
				`20:26 spec.components[1].variables[2].valueFrom: component "app-canary" does not exist`}, "add spec.rollout.strategy.canary"},
		{"router marked", header + strings.Replace(canaryApps, "      variables:\n        - {name: canary_weight", "      canary: true\n      variables:\n        - {name: canary_weight", 1) + canaryRollout,
			[]string{`25:19 spec.rollout.strategy.canary.traffic.component: the router "router" is itself marked for a second instance`}, "remove its mark"},
		{"weight from a value", header + strings.Replace(canaryApps, "{name: canary_weight, value: 0}", "{name: canary_weight, valueFrom: app.url}", 1) + canaryRollout,
			[]string{`24:38 spec.rollout.strategy.canary.traffic.weightInput: variable "canary_weight" of "router" takes valueFrom: the rollout sets it`}, "literal"},
		{"no steps", header + canaryApps + "  rollout:\n    strategy:\n      canary: {traffic: {component: router, weightInput: canary_weight}}\n",
			[]string{`23:7 spec.rollout.strategy.canary.steps: missing required field`}, "setWeight: 10"},
		{"empty strategy", header + canaryApps + "  rollout:\n    strategy: {}\n",
			[]string{`11:7 spec.components[0].canary: canary: true needs spec.rollout.strategy.canary`,
				`20:26 spec.components[1].variables[2].valueFrom: component "app-canary" does not exist`,
				`22:5 spec.rollout.strategy: a strategy needs one of: canary, blueGreen`}, "canary:"},
		{"unknown step field", header + canaryApps + strings.Replace(canaryRollout, "- setWeight: 10", "- setweight: 10", 1),
			[]string{`26:13 spec.rollout.strategy.canary.steps[0]: a step needs one of: setWeight, pause, analysis`,
				`26:13 spec.rollout.strategy.canary.steps[0].setweight: unknown field "setweight"`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := parse(t, tt.src)
			wantDiags(t, ds, tt.want)
			if tt.hint != "" {
				wantHint(t, ds, tt.hint)
			}
		})
	}
}
