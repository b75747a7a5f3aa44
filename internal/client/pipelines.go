package client

import (
	"context"
	"net/url"

	"knit.dev/knit/internal/view"
)

// PipelineStatus is pipeline name's status.
func (c *Client) PipelineStatus(ctx context.Context, name string) (view.Pipeline, error) {
	var p view.Pipeline
	err := c.do(ctx, "GET", "/pipelines/"+url.PathEscape(name), nil, nil, &p)
	return p, err
}

// Releases lists pipeline name's releases, only those that reached stage
// when given.
func (c *Client) Releases(ctx context.Context, name, stage string) ([]view.Release, error) {
	var out struct {
		Items []view.Release `json:"items"`
	}
	q := url.Values{}
	if stage != "" {
		q.Set("stage", stage)
	}
	err := c.do(ctx, "GET", "/pipelines/"+url.PathEscape(name)+"/releases", q, nil, &out)
	return out.Items, err
}

// Promote approves release entering stage of pipeline name, or, with
// change set instead, the change of the stage's own file of that ID
// (force: past every gate, an admin's).
func (c *Client) Promote(ctx context.Context, name, release, change, stage, reason string, force bool) (view.Stage, error) {
	var st view.Stage
	body := map[string]any{"release": release, "stage": stage, "reason": reason, "force": force}
	if change != "" {
		body = map[string]any{"change": change, "stage": stage, "reason": reason, "force": force}
	}
	err := c.do(ctx, "POST", "/pipelines/"+url.PathEscape(name)+"/promote", nil, body, &st)
	return st, err
}

// RollbackStage asks the server to apply again the release stage verified
// before its current one.
func (c *Client) RollbackStage(ctx context.Context, name, stage, reason string) (view.Stage, error) {
	var st view.Stage
	err := c.do(ctx, "POST", "/pipelines/"+url.PathEscape(name)+"/rollback", nil, map[string]any{"stage": stage, "reason": reason}, &st)
	return st, err
}

// PlanRelease asks what release would change in each stage of pipeline
// name (only stages, when given): a plan per stage, applying nothing.
func (c *Client) PlanRelease(ctx context.Context, name, release string, stages []string) (view.ReleasePlan, error) {
	var p view.ReleasePlan
	err := c.do(ctx, "POST", "/pipelines/"+url.PathEscape(name)+"/plan", nil, map[string]any{"release": release, "stages": stages}, &p)
	return p, err
}
