package client

import (
	"context"
	"net/url"

	"knit.dev/knit/internal/view"
)

// LiveEnvironments lists the live environments a set of team generates
// from, as that team reads them (viewer of team).
func (c *Client) LiveEnvironments(ctx context.Context, team string) ([]view.LiveEnvironment, error) {
	var live []view.LiveEnvironment
	err := c.do(ctx, "GET", "/live-environments", url.Values{"team": {team}}, nil, &live)
	return live, err
}
