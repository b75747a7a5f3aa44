package spec

import (
	"fmt"
	"strings"
	"testing"
)

func wavesSet(rollout string) string {
	return strings.Replace(setFile(`    - list:
        elements:
          - {name: alpha, labels: {upgrade_testing: "true", ring: canary}, parameters: {size: 1}}
          - {name: beta, parameters: {size: 2}}
          - {name: gamma, labels: {ring: main}, parameters: {size: 3}}
`), "  ttl: 72h\n", "  ttl: 72h\n  rollout:\n"+rollout, 1)
}

func TestASetDeclaresWavesAndItsEnvironmentsGetLabelsAndOnFailure(t *testing.T) {
	s, ds := loadSet(t, wavesSet(`    onFailure: rollback
    waves:
      steps: [{selector: {matchLabels: {upgrade_testing: "true"}}}, {percent: 25}, {percent: 100}]
      maxFailed: 1
      maxParallel: "25%"
      soakEach: 10m
`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	w := s.Waves()
	if w == nil || len(w.Steps) != 3 || w.MaxFailed != 1 || w.Parallel(12) != 3 || w.Soak().Minutes() != 10 {
		t.Fatalf("waves %+v", w)
	}
	envs, ds := s.Expand(nil)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	if got := envs[0].Metadata.Labels["upgrade_testing"]; got != "true" {
		t.Errorf("alpha's labels %v", envs[0].Metadata.Labels)
	}
	for _, e := range envs {
		if e.Spec.OnFailure() != RollbackOnFailure {
			t.Errorf("%s: onFailure %q, want the set's rollback", e.ID(), e.Spec.OnFailure())
		}
	}
}

func TestBadWavesSayWhereAndHowToFix(t *testing.T) {
	for _, tc := range []struct{ rollout, field, want string }{
		{"    waves: {steps: [{percent: 25}]}\n", "spec.rollout.waves.steps", "percent: 100"},
		{"    waves: {steps: []}\n", "spec.rollout.waves.steps", "at least one step"},
		{"    waves: {steps: [{percent: 50}, {percent: 50}, {percent: 100}]}\n", "spec.rollout.waves.steps[1].percent", "does not grow"},
		{"    waves: {steps: [{percent: 0}, {percent: 100}]}\n", "spec.rollout.waves.steps[0].percent", "out of range"},
		{"    waves: {steps: [{selector: {}}, {percent: 100}]}\n", "spec.rollout.waves.steps[0].selector", "empty selector"},
		{"    waves: {steps: [{selector: {matchLabels: {a: b}}, percent: 5}, {percent: 100}]}\n", "spec.rollout.waves.steps[0]", "exactly one"},
		{"    waves: {steps: [{selector: {matchExpressions: [{key: ring, operator: in, values: [a]}]}}, {percent: 100}]}\n",
			"spec.rollout.waves.steps[0].selector.matchExpressions[0].operator", "In"},
		{"    waves: {steps: [{selector: {matchExpressions: [{key: ring, operator: In}]}}, {percent: 100}]}\n",
			"spec.rollout.waves.steps[0].selector.matchExpressions[0].values", "needs at least one value"},
		{"    waves: {steps: [{percent: 100}], maxParallel: 0}\n", "spec.rollout.waves.maxParallel", "not a positive"},
		{"    waves: {steps: [{percent: 100}], maxParallel: \"150%\"}\n", "spec.rollout.waves.maxParallel", "not a positive"},
		{"    waves: {steps: [{percent: 100}], maxFailed: -1}\n", "spec.rollout.waves.maxFailed", "negative"},
		{"    waves: {steps: [{percent: 100}], soakEach: soon}\n", "spec.rollout.waves.soakEach", "not a duration"},
		{"    waves: {steps: [{percent: 100}], maxFaild: 1}\n", "spec.rollout.waves.maxFaild", "unknown field"},
		{"    onFailure: undo\n", "spec.rollout.onFailure", "unknown onFailure"},
	} {
		_, ds := loadSet(t, wavesSet(tc.rollout))
		found := false
		for _, d := range ds {
			if d.Field == tc.field && strings.Contains(d.Message+d.Hint, tc.want) && d.Pos.Line > 0 && d.Hint != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want an error at %s saying %q with a fix; got\n%s", strings.TrimSpace(tc.rollout), tc.field, tc.want, ds)
		}
	}
}

func members(n int, labelled ...int) []WaveMember {
	var out []WaveMember
	for i := 1; i <= n; i++ {
		m := WaveMember{ID: fmt.Sprintf("shop/c%02d", i)}
		for _, l := range labelled {
			if l == i {
				m.Labels = map[string]string{"upgrade_testing": "true"}
			}
		}
		out = append(out, m)
	}
	return out
}

func TestWavesSplitAFleetByTheirStepsRoundingUp(t *testing.T) {
	testing := &Selector{MatchLabels: map[string]string{"upgrade_testing": "true"}}
	w := &SetWaves{Steps: []WaveStep{{Selector: testing}, {Percent: 25}, {Percent: 100}}}
	sizes := func(ws []PlannedWave) string {
		var s []string
		for _, x := range ws {
			s = append(s, fmt.Sprint(len(x.IDs)))
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		n        int
		labelled []int
		want     string
	}{
		{12, []int{5}, "1,2,9"},       // 25% of 12 is 3 reached: the labelled one and two more
		{12, []int{1, 2, 3}, "3,0,9"}, // the selector's wave reaches 25% already
		{3, nil, "0,1,2"},             // nothing labelled: an empty wave; 25% of 3 rounds up to 1
		{1, nil, "0,1,0"},             // one environment: 25% of it is that one
		{4, []int{2}, "1,0,3"},
	} {
		ws := w.Plan(members(tc.n, tc.labelled...))
		if got := sizes(ws); got != tc.want {
			t.Errorf("%d environments, labelled %v: waves %s, want %s (%+v)", tc.n, tc.labelled, got, tc.want, ws)
		}
		for _, x := range ws {
			if len(x.IDs) == 0 && x.Note == "" {
				t.Errorf("%d environments: the empty wave %s says not why", tc.n, x.Step)
			}
		}
	}
	ws := w.Plan(members(12, 5))
	if strings.Join(ws[0].IDs, ",") != "shop/c05" || strings.Join(ws[1].IDs, ",") != "shop/c01,shop/c02" {
		t.Errorf("waves %+v", ws)
	}
	if ws := w.Plan(members(3)); !strings.Contains(ws[0].Note, "matches none of the 3") {
		t.Errorf("a selector matching nobody: %q", ws[0].Note)
	}
}

func TestParseSelectorReadsTheCommandLinesPairs(t *testing.T) {
	if p, err := ParseSelector("ring=main,upgrade_testing=true"); err != nil || !p.Matches(map[string]string{"ring": "main", "upgrade_testing": "true"}) || p.Matches(map[string]string{"ring": "main"}) {
		t.Errorf("ParseSelector: %v %v", p, err)
	}
	for _, bad := range []string{"ring", "=x", "-bad=x"} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("ParseSelector took %q", bad)
		}
	}
	if p, err := ParseSelector(""); p != nil || err != nil {
		t.Errorf("an empty selector: %v %v", p, err)
	}
}
