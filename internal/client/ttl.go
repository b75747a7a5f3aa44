package client

import (
	"context"
	"time"

	"knit.dev/knit/internal/view"
)

// ExtendTTL moves environment id's expiry by `by` (operator; audited).
func (c *Client) ExtendTTL(ctx context.Context, id string, by time.Duration) (view.Expiry, error) {
	var x view.Expiry
	p, err := envPath(id)
	if err != nil {
		return x, err
	}
	err = c.do(ctx, "POST", p+"/ttl", nil, map[string]string{"extend": by.String()}, &x)
	return x, err
}
