package view

import (
	"fmt"
	"time"

	"knit.dev/knit/internal/plan"
	"knit.dev/knit/internal/progress"
)

// Preview is what a branch's commit would do to one environment: the plan
// of its file at that commit against what the environment applied
// (GET /api/v1/previews).
type Preview struct {
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	Env    string `json:"env"`
	Team   string `json:"team"`
	// Change is create (a new file), update or destroy (a removed file).
	Change string `json:"change"`
	// Status is planned, failed (Error says why) or invalid (the file
	// does not validate at the commit).
	Status string `json:"status"`
	// Checksum is the plan's (engine.PlanChecksum): the apply of the merge
	// has the same one if nothing moved in between.
	Checksum     string             `json:"checksum,omitempty"`
	BaseRevision int                `json:"baseRevision"`
	RunID        string             `json:"runId,omitempty"`
	Error        string             `json:"error,omitempty"`
	Components   []PreviewComponent `json:"components"`
	// Decisions are the policies' decisions about the plan.
	Decisions []progress.Decision `json:"decisions"`
	CreatedAt time.Time           `json:"createdAt"`
}

// PreviewComponent is one component's part of a preview.
type PreviewComponent struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Add    int    `json:"add"`
	Change int    `json:"change"`
	// Destroy counts resources destroyed (a replacement counts in Add too).
	Destroy   int                   `json:"destroy"`
	Resources []plan.ResourceChange `json:"resources,omitempty"`
	// Digest is the component's plan checksum (engine.PlanDigest).
	Digest string `json:"digest,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Placeholders name the inputs a preview of an unreviewed branch
	// planned with a placeholder instead of their sensitive value.
	Placeholders []string `json:"placeholders,omitempty"`
	// PlannedAhead name the inputs known only after an upstream
	// component is applied, which the preview planned with placeholders
	// (as a change set plans ahead): the counts are the plan's, the
	// values unknown, and Digest is the plan's resources and actions.
	PlannedAhead []string `json:"plannedAhead,omitempty"`
}

// Counts is the component's changes as "~1 +0 -0".
func (c PreviewComponent) Counts() string { return countsText(c.Add, c.Change, c.Destroy) }

// Totals are the preview's changes over its components.
func (p Preview) Totals() (add, change, destroy int) {
	for _, c := range p.Components {
		add, change, destroy = add+c.Add, change+c.Change, destroy+c.Destroy
	}
	return add, change, destroy
}

// Short is the preview's commit as people read it.
func (p Preview) Short() string { return p.Commit[:min(10, len(p.Commit))] }

func countsText(add, change, destroy int) string {
	return fmt.Sprintf("~%d +%d -%d", change, add, destroy)
}
