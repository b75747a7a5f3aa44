package promotion

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// StageRun is the run that would apply release of pipeline to stage,
// exactly as the controller would queue it (the stage's file at the
// release's commit, or the copy the stage got last, with the release's
// promote parameters), for knit.ReleasePlan to plan; it queues nothing.
// It may be called from any goroutine.
func (c *Controller) StageRun(ctx context.Context, pipeline, release, stage string) (knit.RunRequest, error) {
	if err := c.open(); err != nil {
		return knit.RunRequest{}, err
	}
	file := c.fileOf(pipeline)
	if file == "" {
		return knit.RunRequest{}, fmt.Errorf("%w: this server follows no pipeline %s", store.ErrNotFound, pipeline)
	}
	f, err := c.k.Facts(ctx, pipeline)
	if err != nil {
		return knit.RunRequest{}, err
	}
	r := f.ReleaseByID(release)
	i := f.StageIndex(stage)
	switch {
	case r == nil:
		return knit.RunRequest{}, fmt.Errorf("%w: pipeline %s has no release %s", store.ErrNotFound, pipeline, release)
	case i < 0:
		return knit.RunRequest{}, fmt.Errorf("%w: pipeline %s has no stage %s", store.ErrNotFound, pipeline, stage)
	case f.IsFleet(stage):
		return knit.RunRequest{}, fmt.Errorf("stage %s is a fleet stage: its environments are not planned here (knit fleet status %s shows its rollout)", stage, f.Envs[stage])
	}
	req, _, _, err := c.stageRun(ctx, f, f.Def.Spec.Stages[i], file, *r, f.Envs[stage])
	return req, err
}
