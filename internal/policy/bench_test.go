package policy_test

import (
	"context"
	"fmt"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/policy"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// benchPlan is an environment of n components, each creating a file,
// updating a resource and replacing another, with their values.
func benchPlan(n int) *engine.EnvPlan {
	p := envPlan()
	p.Components = nil
	for i := range n {
		name := fmt.Sprintf("c%04d", i)
		p.Components = append(p.Components, engine.PlannedComponent{
			Name: name, Def: &spec.Component{Name: name, Type: spec.TypeTerraform, Module: &spec.Module{Source: "./m"}},
			Plan: &runner.Plan{Add: 2, Change: 1, Destroy: 1, OutputChanges: []string{"id"}, Resources: []runner.ResourceChange{
				{Address: "local_file.f", Action: runner.ActionCreate, After: map[string]any{"filename": "/tmp/" + name, "content": "hello"}},
				{Address: "terraform_data.u", Action: runner.ActionUpdate, Before: map[string]any{"input": "a"}, After: map[string]any{"input": "b"},
					Changes: []runner.ValueChange{{Path: "input", Old: `"a"`, New: `"b"`}}},
				{Address: "terraform_data.r", Action: runner.ActionReplace, Before: map[string]any{"input": "a"}, After: map[string]any{"input": "b"}},
			}},
		})
	}
	return p
}

// BenchmarkJudge measures one judgement (input built, every shipped
// example policy evaluated) of a 20- and a 1,000-component plan.
func BenchmarkJudge(b *testing.B) {
	set, err := policy.Load(context.Background(), "../../policies/examples")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{20, 1000} {
		p := benchPlan(n)
		b.Run(fmt.Sprintf("components=%d", n), func(b *testing.B) {
			for b.Loop() {
				v, err := set.Judge(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				if len(v.Of(engine.DecisionDeny)) != 2*n { // each replace destroys in prod, on a frozen Friday afternoon
					b.Fatalf("%d denials, want %d", len(v.Of(engine.DecisionDeny)), 2*n)
				}
			}
		})
	}
}
