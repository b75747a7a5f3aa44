package client

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"knit.dev/knit/internal/view"
)

// Fleets lists the sets with a rollout in waves the token may see.
func (c *Client) Fleets(ctx context.Context) ([]string, error) {
	var out struct {
		Items []string `json:"items"`
	}
	err := c.do(ctx, "GET", "/fleets", nil, nil, &out)
	return out.Items, err
}

// Fleet is set ref's rollout (team/name, or a name one set the token sees
// has), its environments those selector matches ("": all).
func (c *Client) Fleet(ctx context.Context, ref, selector string) (view.Fleet, error) {
	var f view.Fleet
	path, err := c.fleetPath(ctx, ref)
	if err != nil {
		return f, err
	}
	q := url.Values{}
	if selector != "" {
		q.Set("selector", selector)
	}
	err = c.do(ctx, "GET", path, q, nil, &f)
	return f, err
}

// FleetAct is an operator's action (resume, retry, skip, abort) on set
// ref's rollout.
func (c *Client) FleetAct(ctx context.Context, ref, action, reason string) (view.Fleet, error) {
	var f view.Fleet
	path, err := c.fleetPath(ctx, ref)
	if err != nil {
		return f, err
	}
	err = c.do(ctx, "POST", path+"/actions", nil, map[string]any{"action": action, "reason": reason}, &f)
	return f, err
}

// fleetPath is the API path of set ref, resolving a bare name through
// the list of fleets.
func (c *Client) fleetPath(ctx context.Context, ref string) (string, error) {
	if team, name, ok := strings.Cut(ref, "/"); ok {
		return "/fleets/" + url.PathEscape(team) + "/" + url.PathEscape(name), nil
	}
	ids, err := c.Fleets(ctx)
	if err != nil {
		return "", err
	}
	var found []string
	for _, id := range ids {
		if strings.HasSuffix(id, "/"+ref) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%d sets with a rollout in waves are named %s (%s): write TEAM/%s", len(found), ref, strings.Join(found, ", "), ref)
	}
	return c.fleetPath(ctx, found[0])
}
