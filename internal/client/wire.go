package client

import (
	"encoding/json"

	"knit.dev/knit/internal/view"
)

// The API shows stored plans as JSON objects, where the store's types hold
// them as bytes: these wire types read them and hand back store types.

type approvalWire struct {
	view.Approval
	Plan json.RawMessage `json:"plan"`
}

func (a approvalWire) approval() view.Approval {
	out := a.Approval
	out.Plan = []byte(a.Plan)
	return out
}

type componentRunWire struct {
	view.ComponentRun
	PlanSummary json.RawMessage `json:"plan,omitempty"`
	Log         string          `json:"log"`
}

func (c componentRunWire) componentRun() view.ComponentRun {
	out := c.ComponentRun
	out.PlanSummary, out.Log = []byte(c.PlanSummary), c.Log
	return out
}
