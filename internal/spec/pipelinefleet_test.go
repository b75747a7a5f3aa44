package spec

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

const fleetPipeline = `apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: stages/dev.yaml}
    - name: fleet
      selector: {matchLabels: {ring: main}}
      waves: {maxParallel: "25%", maxFailed: 1, soakEach: 10m}
`

// TestAStageMayNameASelectorWithWaves: a fleet stage decodes its
// selector and waves, and plans its environments maxParallel at a time.
func TestAStageMayNameASelectorWithWaves(t *testing.T) {
	p, ds := ParsePipeline("web.yaml", []byte(fleetPipeline))
	if len(ds) != 0 {
		t.Fatal(ds)
	}
	st := p.Spec.Stages[1]
	if !st.IsFleet() || st.File != "" || st.Selector.MatchLabels["ring"] != "main" || st.Waves.MaxFailed != 1 ||
		st.Waves.SoakEach != "10m" || p.Spec.Stages[0].IsFleet() {
		t.Fatalf("stage: %+v", st)
	}
	if id := FleetID("shop", "web", "fleet"); id != "shop/web.fleet" {
		t.Errorf("fleet ID %s", id)
	}
	var ms []WaveMember
	for i := 6; i >= 1; i-- {
		ms = append(ms, WaveMember{ID: fmt.Sprintf("shop/f%02d", i)})
	}
	var got []string
	for _, w := range st.Waves.Plan(ms) {
		got = append(got, w.Step+": "+strings.Join(w.IDs, " "))
	}
	want := []string{"1-2 of 6: shop/f01 shop/f02", "3-4 of 6: shop/f03 shop/f04", "5-6 of 6: shop/f05 shop/f06"}
	if !slices.Equal(got, want) {
		t.Errorf("waves (25%% of 6 rounds up to 2):\n got %q\nwant %q", got, want)
	}
	if none := st.Waves.Plan(nil); len(none) != 1 || len(none[0].IDs) != 0 || none[0].Note == "" {
		t.Errorf("no environments: %+v", none)
	}
	// Steps, when given, plan as a set's do.
	w := &SetWaves{Steps: []WaveStep{{Selector: &Selector{MatchLabels: map[string]string{"canary": "yes"}}}, {Percent: 100}}}
	ms[2].Labels = map[string]string{"canary": "yes"}
	if pl := w.Plan(ms); len(pl) != 2 || !slices.Equal(pl[0].IDs, []string{"shop/f04"}) || len(pl[1].IDs) != 5 {
		t.Errorf("steps: %+v", pl)
	}
}

// TestBadFleetStagesSayWhereAndHowToFix: a file and a selector, a
// selector without waves, waves without a selector, a selector first,
// bad percentages: each at its line, field and fix.
func TestBadFleetStagesSayWhereAndHowToFix(t *testing.T) {
	src := `apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, selector: {matchLabels: {ring: dev}}, waves: {}}
    - {name: both, file: stages/both.yaml, selector: {matchLabels: {ring: main}}, waves: {}}
    - {name: nowaves, selector: {matchLabels: {ring: main}}}
    - {name: nosel, file: stages/one.yaml, waves: {maxFailed: 1}}
    - name: pct
      selector: {matchLabels: {ring: main}}
      waves: {maxParallel: "150%", maxFailed: -1, soakEach: soon, steps: [{percent: 25}, {percent: 50}]}
    - {name: typo, selector: {matchLabels: {ring: main}}, wave: {}}
`
	_, ds := ParsePipeline("web.yaml", []byte(src))
	got := render(ds)
	want := []string{
		"7:19 spec.stages[0].selector: the first stage dev cannot be a selector: its file names the release",
		"8:44 spec.stages[1].selector: stage both names both a file and a selector",
		"9:7 spec.stages[2].waves: stage nowaves selects environments but has no waves",
		"10:44 spec.stages[3].waves: stage nosel has waves but no selector: it is one environment",
		"13:14 spec.stages[4].waves.maxFailed: maxFailed -1 is negative",
		`13:14 spec.stages[4].waves.maxParallel: maxParallel "150%" is not a positive number or percentage`,
		`13:14 spec.stages[4].waves.soakEach: soakEach "soon" is not a duration`,
		"13:14 spec.stages[4].waves.steps: the last step must reach every environment (percent: 100), or some would never get the release",
		"14:7 spec.stages[5].waves: stage typo selects environments but has no waves",
		`14:59 spec.stages[5].wave: unknown field "wave"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("diagnostics:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}
	hints := map[string]string{}
	for _, d := range ds {
		hints[d.Field] = d.Hint
	}
	for field, hint := range map[string]string{
		"spec.stages[1].selector":          "remove one of them",
		"spec.stages[2].waves":             `waves: {maxParallel: "25%", maxFailed: 1, soakEach: 10m}`,
		"spec.stages[3].waves":             "add selector:",
		"spec.stages[4].waves.maxParallel": `"25%"`,
		"spec.stages[5].wave":              "waves",
	} {
		if !strings.Contains(hints[field], hint) {
			t.Errorf("%s: hint %q does not say %q", field, hints[field], hint)
		}
	}
}
