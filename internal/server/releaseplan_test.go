package server_test

import (
	"context"
	"errors"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/server"
	"knit.dev/knit/internal/spec"
)

// stageRuns builds each stage's run from envDoc, as the promotion
// controller builds it from the release's commit (the e2e test
// TestPipelinePlanShowsWhatAReleaseChangesInEachStage uses the real one).
type stageRuns struct{ t *testing.T }

func (s stageRuns) StageRun(_ context.Context, pipeline, release, stage string) (knit.RunRequest, error) {
	if stage == "prod" {
		return knit.RunRequest{}, errors.New("stage prod: stages/prod.yaml: no such file at the release's commit")
	}
	env, ds := spec.Parse("env.yaml", s.t.TempDir(), []byte(envDoc("shop", stage, envOpts{})))
	if ds.HasErrors() {
		s.t.Fatal(ds)
	}
	return knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "alice"}, nil
}

// TestPlanRelease: an operator of the pipeline's team gets a plan per
// stage (dev planned; prod, whose file does not load, failed with why)
// and nothing is applied; a viewer and another team's operator are
// refused, an unknown release is named, a server following no pipelines
// says so.
func TestPlanRelease(t *testing.T) {
	h := newHarnessWith(t, server.Config{Pipelines: stageRuns{t}})
	h.seedPipeline()
	bob, viewer, other := h.token("bob", "operator", "shop"), h.token("viewer", "viewer", "shop"), h.token("pay", "operator", "pay")
	plan := func(token string, body map[string]any, want int) response {
		t.Helper()
		return h.do(call{method: "POST", path: "/api/v1/pipelines/web/plan", token: token, body: body}, want)
	}
	var p struct {
		Release string
		Stages  []struct{ Stage, Env, Current, Status, Error string }
	}
	plan(bob, map[string]any{"release": "r-1"}, 200).decode(t, &p)
	if len(p.Stages) != 2 || p.Stages[0].Status != "planned" || p.Stages[0].Current != "r-1" ||
		p.Stages[1].Status != "failed" || p.Stages[1].Error == "" {
		t.Fatalf("the plan of r-1: %+v, want dev planned (holding r-1), prod failed with why", p)
	}
	if _, err := h.k.Health(context.Background(), "shop/dev"); err == nil {
		t.Errorf("planning r-1 created shop/dev")
	}
	plan(bob, map[string]any{"release": "r-1", "stages": []string{"dev"}}, 200).decode(t, &p)
	if len(p.Stages) != 1 || p.Stages[0].Stage != "dev" {
		t.Errorf("stages: [dev] planned %+v", p.Stages)
	}
	h.do(call{method: "POST", path: "/api/v1/pipelines/web/plan", token: bob, body: map[string]any{}, invalid: true}, 400)
	plan(bob, map[string]any{"release": "r-nope"}, 404)
	plan(bob, map[string]any{"release": "r-1", "stages": []string{"qa"}}, 404)
	plan(viewer, map[string]any{"release": "r-1"}, 403)
	plan(other, map[string]any{"release": "r-1"}, 403)
	h.do(call{method: "POST", path: "/api/v1/pipelines/web/plan", invalid: true, body: map[string]any{"release": "r-1"}}, 401)

	none := newHarness(t)
	none.seedPipeline()
	none.do(call{method: "POST", path: "/api/v1/pipelines/web/plan", token: none.token("bob", "operator", "shop"), body: map[string]any{"release": "r-1"}}, 404)
}
