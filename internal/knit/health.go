package knit

import (
	"context"

	"knit.dev/knit/internal/health"
)

// Health runs, now, the health checks of the environment ref is applied
// at (each applied component's, then the environment's) and returns every
// verdict with its evidence. It takes no lock and changes nothing.
func (k *Knit) Health(ctx context.Context, ref string) (health.Report, error) {
	env, _, err := k.AppliedSpec(ctx, ref)
	if err != nil {
		return health.Report{}, err
	}
	return k.engine.CheckHealth(ctx, env)
}
