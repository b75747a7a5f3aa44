package client

import (
	"context"
	"net/url"

	"knit.dev/knit/internal/view"
)

// DiffEnvironments compares environment a with b (GET /diff): each is
// team/env, or team/env@REV for one revision.
func (c *Client) DiffEnvironments(ctx context.Context, a, b string) (view.EnvDiff, error) {
	var d view.EnvDiff
	err := c.do(ctx, "GET", "/diff", url.Values{"a": {a}, "b": {b}}, nil, &d)
	return d, err
}
