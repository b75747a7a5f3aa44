package client

import (
	"context"

	"knit.dev/knit/internal/view"
)

// Rollout is where environment id's newest rollout by its strategy stands.
func (c *Client) Rollout(ctx context.Context, id string) (view.Rollout, error) {
	var v view.Rollout
	p, err := envPath(id)
	if err != nil {
		return v, err
	}
	err = c.do(ctx, "GET", p+"/rollout", nil, nil, &v)
	return v, err
}

// SteerRollout asks the server to promote, abort or retry (action)
// environment id's rollout, for reason: it answers the rollout as it now
// is and the run it queued.
func (c *Client) SteerRollout(ctx context.Context, id, action, reason string) (view.RolloutAction, error) {
	var a view.RolloutAction
	p, err := envPath(id)
	if err != nil {
		return a, err
	}
	err = c.do(ctx, "POST", p+"/rollout/"+action, nil, map[string]string{"reason": reason}, &a)
	return a, err
}
