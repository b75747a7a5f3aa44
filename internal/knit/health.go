package knit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Health runs, now, the health checks of the environment ref is applied
// at (each applied component's, then the environment's), keeps the
// outcome as the environment's last health check and returns it, every
// verdict with its evidence. It takes no lock and changes nothing else.
func (k *Knit) Health(ctx context.Context, ref string) (view.Health, error) {
	env, _, err := k.AppliedSpec(ctx, ref)
	if err != nil {
		return view.Health{}, err
	}
	rep, err := k.engine.CheckHealth(ctx, env)
	if err != nil {
		return view.Health{}, err
	}
	if err := ctx.Err(); err != nil {
		return view.Health{}, err // interrupted: measured nothing worth keeping
	}
	h := engine.HealthView(rep, k.now(), "")
	return h, k.engine.RecordHealth(ctx, h, env.ID())
}

// lastHealth is envID's last health check, nil when none ran.
func (k *Knit) lastHealth(ctx context.Context, envID string) (*view.Health, error) {
	raw, err := k.store.Setting(ctx, engine.HealthSetting+envID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var h view.Health
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return nil, fmt.Errorf("%s's last health check: %w", envID, err)
	}
	return &h, nil
}
