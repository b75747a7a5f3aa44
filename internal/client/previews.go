package client

import (
	"context"
	"net/url"

	"knit.dev/knit/internal/view"
)

// Previews lists branch's previews (of commit, when set) of the
// environments the token sees.
func (c *Client) Previews(ctx context.Context, branch, commit string) ([]view.Preview, error) {
	q := url.Values{"branch": {branch}}
	if commit != "" {
		q.Set("commit", commit)
	}
	var ps []view.Preview
	err := c.do(ctx, "GET", "/previews", q, nil, &ps)
	return ps, err
}
