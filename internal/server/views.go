package server

import (
	"encoding/json"

	"knit.dev/knit/internal/view"
)

// planJSON is a stored plan as the API shows it: a JSON object (not the
// base64 a []byte would marshal to), without where its plan file lies.
func planJSON(stored []byte) json.RawMessage {
	var p map[string]any
	if len(stored) == 0 || json.Unmarshal(stored, &p) != nil {
		return nil
	}
	delete(p, "file")
	out, _ := json.Marshal(p)
	return out
}

// approvalJSON is an approval as the API shows it.
type approvalJSON struct {
	view.Approval
	PlanFile string          `json:"planFile,omitempty"` // never set: the data dir is the server's business
	Plan     json.RawMessage `json:"plan"`
}

// approvalView is an approval without where its plan file lies.
func approvalView(a view.Approval) approvalJSON {
	return approvalJSON{Approval: a, Plan: planJSON(a.Plan)}
}

// componentRunJSON is a component run as the API shows it.
type componentRunJSON struct {
	view.ComponentRun
	PlanSummary json.RawMessage `json:"plan,omitempty"`
}

func componentRunViews(crs []view.ComponentRun) []componentRunJSON {
	out := make([]componentRunJSON, len(crs))
	for i, cr := range crs {
		out[i] = componentRunJSON{ComponentRun: cr, PlanSummary: planJSON(cr.PlanSummary)}
	}
	return out
}
