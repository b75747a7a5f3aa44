package view

import "knit.dev/knit/internal/progress"

// ReleasePlan is what a release of a pipeline would change in each of
// its stages: a plan per stage, applying nothing (knit pipeline plan,
// POST /api/v1/pipelines/{name}/plan).
type ReleasePlan struct {
	Pipeline string      `json:"pipeline"`
	Release  string      `json:"release"`
	Commit   string      `json:"commit"`
	Stages   []StagePlan `json:"stages"`
}

// StagePlan is one stage's part of a ReleasePlan.
type StagePlan struct {
	Stage string `json:"stage"`
	Env   string `json:"env"`
	// Current is the release the stage holds now ("" when none).
	Current string `json:"current,omitempty"`
	// Status is planned, failed (Error says why) or locked (a run of the
	// environment holds its lock: plan again later).
	Status     string              `json:"status"`
	RunID      string              `json:"runId,omitempty"`
	Checksum   string              `json:"checksum,omitempty"`
	Error      string              `json:"error,omitempty"`
	Components []PreviewComponent  `json:"components"`
	Decisions  []progress.Decision `json:"decisions"`
}

// Stage plan statuses.
const (
	StagePlanned    = "planned"
	StagePlanFailed = "failed"
	StagePlanLocked = "locked"
)

// Totals are the stage's changes over its components.
func (s StagePlan) Totals() (add, change, destroy int) {
	return Preview{Components: s.Components}.Totals()
}
