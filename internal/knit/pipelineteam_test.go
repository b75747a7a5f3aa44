package knit_test

import (
	"context"
	"errors"
	"testing"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
)

// TestAPipelineCannotHoldAnotherTeamsStage: the library refuses to record
// a pipeline of team pay whose stage is an environment of team ops, so
// pay's operators can never promote into or roll back ops' environment
// through it; a pipeline whose stages are its team's is recorded.
func TestAPipelineCannotHoldAnotherTeamsStage(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	p := &spec.Pipeline{Metadata: spec.Metadata{Name: "web"}, Spec: spec.PipelineSpec{TeamName: "pay",
		Stages: []spec.Stage{{Name: "dev", File: "dev.yaml"}, {Name: "prod", File: "prod.yaml"}}}}
	err := k.PutPipeline(ctx, p, "c1", map[string]string{"dev": "pay/web-dev", "prod": "ops/web-prod"})
	if !errors.Is(err, knit.ErrForbidden) {
		t.Fatalf("a pipeline of pay with a stage of ops: %v, want ErrForbidden", err)
	}
	if names, _ := knit.NewRecords(k).PipelineNames(ctx); len(names) != 0 {
		t.Fatalf("the refused pipeline was recorded: %v", names)
	}
	if err := k.PutPipeline(ctx, p, "c2", map[string]string{"dev": "pay/web-dev", "prod": "pay/web-prod"}); err != nil {
		t.Fatalf("a pipeline of pay's own stages: %v", err)
	}
}
