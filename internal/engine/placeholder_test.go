package engine_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/store"
)

// chain is a ← b ← c, every one gated; a's id is known only after it is
// applied (UnknownUntilApply), b's url is made of its parent.
const chain = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: chain}
spec:
  teamName: t
  envName: chain
  autoApprove: false
  components:
    - name: a
      type: script
      script: {apply: "true"}
      outputs: [{name: id}]
    - name: b
      type: script
      script: {apply: "true"}
      variables: [{name: parent, valueFrom: a.id}]
      outputs: [{name: url}]
    - name: c
      type: script
      script: {apply: "true"}
      variables: [{name: url, valueFrom: b.url}]
`

// placeholders is the fake with runner.PlaceholderPlanner, as careless as
// a runner could be: its plan shows the placeholder as a value and
// claims the outputs it would compute from it.
type placeholders struct{ *fake.Runner }

func (r placeholders) PlanPlaceholders(ctx context.Context, c runner.Component, in runner.Inputs, unknown []string, opts runner.PlanOptions) (*runner.Plan, error) {
	full := maps.Clone(in)
	for _, n := range unknown {
		full[n] = runner.PlaceholderText(n)
	}
	p, err := r.Plan(ctx, c, full, opts)
	if err != nil {
		return nil, err
	}
	p.Resources[0].Changes = []runner.ValueChange{{Path: "input", Old: "(none)", New: runner.PlaceholderText(unknown[0])}}
	p.PlannedOutputs = r.OutputsFor(c.Def.Name, full)
	return p, nil
}

// A component behind a held one whose input is known only after apply is
// planned with a placeholder: the change set shows its resources and the
// input it lacks; no value of that plan is shown or passed on (c behind
// it is planned with a placeholder too, not from a url made of one); and
// after one approval every component is applied from the real values.
func TestAPlanAheadWithPlaceholdersShowsNoValueOfThem(t *testing.T) {
	h := newHarness(t)
	h.r.UnknownUntilApply = map[string]bool{"a": true}
	h.e.Runners["script"] = placeholders{h.r}
	ctx := context.Background()
	env := parse(t, chain)
	res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err != nil || res.Status != store.StatusAwaiting || res.ChangeSet == nil {
		t.Fatalf("apply: %+v, %v", res, err)
	}
	for _, e := range res.ChangeSet.Components[1:] {
		want := map[string]string{"b": "parent", "c": "url"}[e.Component]
		if e.KnownAfterApply != "" || strings.Join(e.Placeholders, ",") != want || len(e.Resources) != 1 {
			t.Errorf("%s: %+v, want planned with a placeholder for %s", e.Component, e, want)
		}
	}
	if ch := res.Component("b").Plan.Resources[0].Changes; len(ch) != 1 || ch[0].New != runner.UnknownValue {
		t.Errorf("b's plan shows %+v, want its value known after apply", ch)
	}
	if p := res.Component("b").Plan; p.File != "" || p.Checksum != "" {
		t.Errorf("b's plan with a placeholder can be applied: %+v", p)
	}
	if _, err := h.e.DecideChange(ctx, env.ID(), res.ChangeSet.Checksum, true, "alice", "one review"); err != nil {
		t.Fatal(err)
	}
	res, err = h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("after the change set's approval: %+v, %v", res, err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Applied, "b": engine.Applied, "c": engine.Applied})
	calls := h.r.Calls("plan")
	if last := calls[len(calls)-1]; last.Component != "c" || last.Inputs["url"] != "http://b/a-1" {
		t.Errorf("c was last planned from %+v, want b's real url", last)
	}
}

// A runner that cannot plan with placeholders (a script) leaves the
// component known after apply, and says so.
func TestAComponentWithoutPlaceholdersIsKnownAfterApply(t *testing.T) {
	h := newHarness(t)
	h.r.UnknownUntilApply = map[string]bool{"a": true}
	res, err := h.e.Apply(context.Background(), parse(t, chain), engine.Options{Actor: "tester"})
	if err != nil || res.ChangeSet == nil {
		t.Fatalf("apply: %+v, %v", res, err)
	}
	b := res.ChangeSet.Components[1]
	if b.Component != "b" || len(b.Placeholders) != 0 ||
		b.KnownAfterApply != "input parent comes from a.id, known only after a is applied; a script component is not planned with placeholders" {
		t.Errorf("b: %+v", b)
	}
}
