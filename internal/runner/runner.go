// Package runner defines how the engine drives a tool for one component.
// Nothing but the engine calls runners; one package per tool implements Runner.
package runner

import (
	"context"
	"errors"
	"io"

	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/plan"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/spec"
)

// Component is everything a runner needs to act on one component.
type Component struct {
	// Env is the environment's ID (team/env); Spec is the whole environment,
	// for resolving relative paths; Def is this component's definition.
	Env  string
	Spec *spec.Environment
	Def  *spec.Component
	// Run is the knit run the command is for, which holds Env's lock
	// while it runs ("": none). A runner that locks shared state records
	// it, so that the lock is known stale once the run no longer holds
	// the environment (its replica died and a recovery run took over).
	Run string
	// WorkDir is this component's own folder under the data dir; it persists
	// between runs (state, .terraform, lock file live there).
	WorkDir string
	// Log receives the tool's combined output. Never nil.
	Log io.Writer
	// Sensitive names the inputs whose values are secret (they come from
	// sensitive outputs): a runner must never write them to disk in clear.
	Sensitive map[string]bool
	// CheckFailed, when set, hears of each of the tool's own health checks
	// that failed during an apply (OpenTofu check blocks), once each.
	CheckFailed func(CheckFailure)
	// Sandbox, when set, is how the component's code runs: it was written
	// by nobody trusted (a preview of an unreviewed branch). Every command
	// runs confined (Sandbox.Confine) with Sandbox's environment only, in
	// WorkDir (outside the data dir), given to its user first; the tool
	// gets no credential, no key and no state it could write back (its
	// state is a plaintext copy in WorkDir). Only Plan is ever asked.
	Sandbox *procexec.Sandbox
	// Unreviewed marks the component of a branch nobody reviewed from its
	// fingerprint on (Sandbox is set only for the plan's tool): its
	// sources are fetched with none of the server's credentials.
	Unreviewed bool
	// Applied is the fingerprint of the component's last apply as the
	// store records it ("": never applied, or not known). A runner that
	// cannot check reality compares with it, not with files of its own in
	// WorkDir: those are this host's, and another replica may have applied
	// the component since.
	Applied string
}

// CheckFailure is a tool's own check that failed during an apply: an
// OpenTofu check block whose assertion did not hold, with its message.
type CheckFailure struct {
	Check   string `json:"check"`
	Message string `json:"message"`
}

// Inputs are the component's resolved variables: literal values and values
// taken from other components' outputs, typed (numbers, lists and maps stay so).
type Inputs map[string]any

// The plan and output types live in internal/plan, a leaf the read models
// and the HTTP client import without linking the runners or the spec (HCL).
type (
	Output         = plan.Output
	Outputs        = plan.Outputs
	Action         = plan.Action
	ResourceChange = plan.ResourceChange
	ValueChange    = plan.ValueChange
	Plan           = plan.Plan
	Kind           = plan.Kind
)

// Resource actions.
const (
	ActionCreate  = plan.ActionCreate
	ActionUpdate  = plan.ActionUpdate
	ActionDelete  = plan.ActionDelete
	ActionReplace = plan.ActionReplace
	ActionRead    = plan.ActionRead
	ActionForget  = plan.ActionForget
	ActionKeep    = plan.ActionKeep
)

// Placeholders of ValueChange values that cannot be shown.
const (
	MaskedValue  = plan.MaskedValue
	UnknownValue = plan.UnknownValue
)

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
	// Coming are the kinds that upstream components' plans of the same run
	// define (Plan.Defines), not served yet: a Kubernetes runner plans the
	// objects of those kinds as creates known after apply, not as errors.
	Coming []Kind
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

// WorkloadReader is a Runner whose components own Kubernetes workloads
// (helm: the release's objects; manifests: the inventory). Workloads looks
// once at whether they are ready (Deployments available, StatefulSets and
// DaemonSets ready, Jobs complete), for a kubernetes health check.
// objects, when set, narrows the look to those (Kind/name or
// Kind/namespace/name, as spec.ParseWorkload reads them); one the
// component does not own is reported not ready and never read. The look is
// bounded: a few not-ready workloads named, the rest counted. An error
// means the look could not be taken (the cluster did not answer).
type WorkloadReader interface {
	Workloads(ctx context.Context, c Component, in Inputs, objects []string) (Workloads, error)
}

// Workloads is one look at a component's workloads (health.Workloads: the
// kubernetes check judges it).
type Workloads = health.Workloads

// PlaceholderText is the stem of the placeholder a PlaceholderPlanner
// gives a string input known only after apply; the terraform runner ends
// it with a random nonce of each plan, so that no real value is ever the
// placeholder.
func PlaceholderText(input string) string { return "knit-known-after-apply-" + input }

// ErrStalePlan is wrapped by Apply's error when the saved plan can no
// longer be applied because what it was made from changed (the state, the
// inputs, the plan file itself): the tool refused it and changed nothing.
// Plan again.
var ErrStalePlan = errors.New("the saved plan no longer applies")

// ErrUnsupported is returned by an optional operation a runner lacks.
var ErrUnsupported = errors.New("not supported by this runner")
