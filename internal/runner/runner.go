// Package runner defines how the engine drives a tool for one component.
// Nothing but the engine calls runners; one package per tool implements Runner.
package runner

import (
	"context"
	"errors"
	"io"

	"knit.dev/knit/internal/spec"
)

// Component is everything a runner needs to act on one component.
type Component struct {
	// Env is the environment's ID (team/env); Spec is the whole environment,
	// for resolving relative paths; Def is this component's definition.
	Env  string
	Spec *spec.Environment
	Def  *spec.Component
	// WorkDir is this component's own folder under the data dir; it persists
	// between runs (state, .terraform, lock file live there).
	WorkDir string
	// Log receives the tool's combined output. Never nil.
	Log io.Writer
	// Sensitive names the inputs whose values are secret (they come from
	// sensitive outputs): a runner must never write them to disk in clear.
	Sensitive map[string]bool
}

// Inputs are the component's resolved variables: literal values and values
// taken from other components' outputs, typed (numbers, lists and maps stay so).
type Inputs map[string]any

// Output is one output value.
type Output struct {
	Value     any  `json:"value"`
	Sensitive bool `json:"sensitive,omitempty"`
}

// Outputs maps output names to values.
type Outputs map[string]Output

// PlanOptions changes what Plan computes.
type PlanOptions struct {
	// Destroy plans the destruction of everything the component manages.
	Destroy bool
	// RefreshOnly plans only the adoption of out-of-band changes (drift).
	RefreshOnly bool
	// Attributes asks for the names of changed attributes in
	// ResourceChange.Attributes, for a plan a person reads. A runner may
	// need another tool run for them, so callers that only apply leave it
	// false.
	Attributes bool
	// KnownOutputs asks for Plan.PlannedOutputs, for a plan whose
	// dependents are planned from its values. A runner may need another
	// tool run for them; without it PlannedOutputs may be empty.
	KnownOutputs bool
	// Unsaved says nobody will apply the plan (a drift check that only
	// reports): a runner need not save it, so Plan.File may be empty and
	// a saved plan waiting for approval is left as it is.
	Unsaved bool
	// Values asks for ResourceChange.Before, After and AfterUnknown, for a
	// plan a policy judges. A runner may need another tool run for them.
	Values bool
}

// Action is what a plan does to one resource.
type Action string

// Resource actions.
const (
	ActionCreate  Action = "create"
	ActionUpdate  Action = "update"
	ActionDelete  Action = "delete"
	ActionReplace Action = "replace"
	ActionRead    Action = "read"
)

// ResourceChange is one resource a plan touches.
type ResourceChange struct {
	Address string `json:"address"`
	Action  Action `json:"action"`
	// Attributes names the attributes that differ, where the tool says.
	Attributes []string `json:"attributes,omitempty"`
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
}

// HasChanges reports whether applying the plan would change any resource or output.
func (p *Plan) HasChanges() bool {
	return p != nil && (p.Add+p.Change+p.Destroy > 0 || len(p.OutputChanges) > 0)
}

// Runner drives one tool. Implementations must be safe for concurrent use on
// different components; the engine never runs two operations on one component at once.
type Runner interface {
	// Fingerprint hashes what decides the component's result apart from the
	// real world: module content, inputs, tool version. It never runs the tool
	// against state and must be cheap.
	Fingerprint(ctx context.Context, c Component, in Inputs) (string, error)
	// Plan computes what Apply would do and saves it; it never changes anything.
	Plan(ctx context.Context, c Component, in Inputs, opts PlanOptions) (*Plan, error)
	// Apply applies exactly p and returns the component's outputs. An error
	// wrapping ErrStalePlan means p was refused and nothing changed.
	Apply(ctx context.Context, c Component, p *Plan) (Outputs, error)
	// Destroy destroys everything the component manages.
	Destroy(ctx context.Context, c Component, in Inputs) error
	// Outputs reads the component's current outputs from its state.
	Outputs(ctx context.Context, c Component) (Outputs, error)
}

// PlanApplier is a Runner that can also plan and apply in one step, for a
// component applied without a gate: nobody reads the plan before it is
// applied, so the tool need not save it and start again to apply it.
type PlanApplier interface {
	// PlanApply applies the component's changes at once and returns what
	// changed, as Plan would have described it (without File or
	// Checksum), and the outputs. ErrUnsupported means the runner cannot:
	// use Plan and Apply.
	PlanApply(ctx context.Context, c Component, in Inputs) (*Plan, Outputs, error)
}

// Preparer is a Runner that can do part of a component's work before the
// component's turn, without its inputs, while the components it depends on
// are still running (for Terraform: init). The engine calls it for
// components never applied before, in parallelism slots the walk leaves
// idle. It is an optimisation: its error is dropped, and the component's
// own plan or apply does whatever it left undone and reports what fails.
type Preparer interface {
	PrepareAhead(ctx context.Context, c Component) error
}

// PlaceholderPlanner is a Runner that can plan a component some of whose
// inputs are known only after an upstream component is applied (a new
// network's id), so that a change set shows its resources before that
// upstream exists. It stands a placeholder the module accepts in for each
// input named in unknown (in holds the others), and returns the plan's
// resources and actions only: the plan is never saved for apply (File and
// Checksum are empty, the saved plan in the work dir is left as it is), and
// nothing of it reaches state. An error wrapping ErrUnsupported says no
// safe placeholder exists (a variable's type, an init that reads the
// inputs), with the reason.
//
// A placeholder is PlaceholderText(input): recognisable in any log, and
// never to be shown as a value.
type PlaceholderPlanner interface {
	PlanPlaceholders(ctx context.Context, c Component, in Inputs, unknown []string, opts PlanOptions) (*Plan, error)
}

// PlaceholderText is the placeholder a PlaceholderPlanner gives a string
// input known only after apply.
func PlaceholderText(input string) string { return "knit-known-after-apply-" + input }

// ErrStalePlan is wrapped by Apply's error when the saved plan can no
// longer be applied because what it was made from changed (the state, the
// inputs, the plan file itself): the tool refused it and changed nothing.
// Plan again.
var ErrStalePlan = errors.New("the saved plan no longer applies")

// ErrUnsupported is returned by an optional operation a runner lacks.
var ErrUnsupported = errors.New("not supported by this runner")
