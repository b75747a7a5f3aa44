// Package plan holds what a runner's plan says applying would change, and
// the outputs a component has: plain data, a leaf. The runner port
// (internal/runner) names these types by alias; the read models
// (internal/view) and the HTTP client import them from here, so they link
// neither the runners nor the environment file's parser (HCL).
package plan

import "knit.dev/knit/internal/words"

// Output is one output value.
type Output struct {
	Value     any  `json:"value"`
	Sensitive bool `json:"sensitive,omitempty"`
}

// Outputs maps output names to values.
type Outputs map[string]Output

// Action is what a plan does to one resource (words.PlanAction).
type Action = words.PlanAction

// Resource actions (words.Action*).
const (
	ActionCreate  = words.ActionCreate
	ActionUpdate  = words.ActionUpdate
	ActionDelete  = words.ActionDelete
	ActionReplace = words.ActionReplace
	ActionRead    = words.ActionRead
	ActionForget  = words.ActionForget
	ActionKeep    = words.ActionKeep
)

// ResourceChange is one resource a plan touches.
type ResourceChange struct {
	Address string `json:"address"`
	Action  Action `json:"action"`
	// Attributes names the attributes that differ, where the tool says.
	Attributes []string `json:"attributes,omitempty"`
	// Reason says, for a person, why the resource gets this action where
	// the action alone does not (keep: why the teardown leaves it).
	Reason string `json:"reason,omitempty"`
	// Changes are the differing values, old → new, where the runner knows
	// them (OpenTofu attributes, Kubernetes object fields), for a reviewer:
	// sensitive ones are MaskedValue, ones known only after apply UnknownValue.
	Changes []ValueChange `json:"changes,omitempty"`
	// Before and After are the resource's whole values before and after
	// the change, where the runner knows them (PlanOptions.Values), with
	// every sensitive value MaskedValue; AfterUnknown marks, as OpenTofu's
	// after_unknown does, the values known only after apply. Kept in
	// memory for policies (internal/policy), never serialised.
	Before       any `json:"-"`
	After        any `json:"-"`
	AfterUnknown any `json:"-"`
}

// ValueChange is one value a plan changes, rendered for a person: Old and
// New are short display strings ("(none)" for absent), never raw secrets.
type ValueChange struct {
	Path      string `json:"path"`
	Old       string `json:"old"`
	New       string `json:"new"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// Placeholders of ValueChange values that cannot be shown.
const (
	MaskedValue  = "(sensitive)"
	UnknownValue = "(known after apply)"
)

// String renders the change as "path: old → new".
func (v ValueChange) String() string { return v.Path + ": " + v.Old + " → " + v.New }

// Plan is what applying would change. An approval is of one exact Plan:
// File (the tool's saved plan) is applied byte for byte.
type Plan struct {
	Add       int              `json:"add"`
	Change    int              `json:"change"`
	Destroy   int              `json:"destroy"`
	Resources []ResourceChange `json:"resources,omitempty"`
	// OutputChanges names outputs whose value would change.
	OutputChanges []string `json:"outputChanges,omitempty"`
	// File is the saved plan file in the work dir; Checksum its SHA-256.
	File     string `json:"file,omitempty"`
	Checksum string `json:"checksum,omitempty"`
	// Destroying is true for a destroy plan.
	Destroying bool `json:"destroying,omitempty"`
	// Target names where the plan applies, when the tool has a notion of
	// it (Kubernetes: the kubeconfig context and API server), for the
	// plan's header.
	Target string `json:"target,omitempty"`
	// Module names the module the plan was made with where its source
	// chose it (a registry module: its address and the version the
	// constraint resolved to), for the plan's header.
	Module string `json:"module,omitempty"`
	// Unchecked says the plan was made without looking at reality (a
	// script without a plan command, judged by its inputs alone): "no
	// changes" means only that nothing knit passes it changed, so a drift
	// check reports its drift as unknown, not in sync.
	Unchecked bool `json:"unchecked,omitempty"`
	// Notes say where applying may do more or other than the plan shows
	// (hooks that run, what the tool cannot predict).
	Notes []string `json:"notes,omitempty"`
	// PlannedOutputs are the output values the plan already knows (those
	// computed only from known values); outputs known only after apply are
	// absent. Never serialised: values may be sensitive.
	PlannedOutputs Outputs `json:"-"`
	// Defines are the kinds of the CustomResourceDefinitions the plan
	// creates that the cluster does not serve yet: components downstream
	// plan their custom resources as known after apply. Kept in memory for
	// them, never serialised.
	Defines []Kind `json:"-"`
}

// Kind is an API kind a CustomResourceDefinition defines.
type Kind struct {
	Group    string   `json:"group"`
	Kind     string   `json:"kind"`
	Versions []string `json:"versions"`
	// Namespaced is the kind's scope.
	Namespaced bool `json:"namespaced,omitempty"`
	// CRD is the name of the CustomResourceDefinition.
	CRD string `json:"crd"`
	// By is the component whose plan creates it, as a downstream
	// component's PlanOptions say.
	By string `json:"by,omitempty"`
}

// HasChanges reports whether applying the plan would change any resource or output.
func (p *Plan) HasChanges() bool {
	return p != nil && (p.Add+p.Change+p.Destroy > 0 || len(p.OutputChanges) > 0)
}
