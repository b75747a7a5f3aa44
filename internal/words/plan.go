package words

// PlanAction is what a plan does to one resource (a plan's resource
// changes, in the API's Plan, ChangeSet and Preview).
type PlanAction string

// Resource actions.
const (
	ActionCreate  PlanAction = "create"
	ActionUpdate  PlanAction = "update"
	ActionDelete  PlanAction = "delete"
	ActionReplace PlanAction = "replace"
	ActionRead    PlanAction = "read"
	// ActionForget is a resource the plan removes from state without
	// destroying it (OpenTofu's removed blocks).
	ActionForget PlanAction = "forget"
	// ActionKeep is a resource a teardown leaves in place, and why
	// (helm.sh/resource-policy: keep, a CRD of a chart's crds/ folder).
	ActionKeep PlanAction = "keep"
)

// PlanActions is the closed set, in the order the OpenAPI document lists it.
func PlanActions() []PlanAction {
	return []PlanAction{ActionCreate, ActionUpdate, ActionDelete, ActionReplace, ActionRead, ActionForget, ActionKeep}
}
