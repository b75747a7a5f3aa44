package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"knit.dev/knit/internal/progress"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/words"
)

// A Judge decides, before anything applies, whether a run's whole plan may
// go on: policy as code (internal/policy, OPA/Rego) behind a small
// interface, so that the engine links no policy language. With a Judge,
// every run that may change something is planned in full first and judged:
// a deny stops it (ReasonPolicyDenied) before any tool changes anything, a
// warn is recorded, and require_approval gates a component even when
// autoApprove says otherwise. Any error of the Judge fails the run: a bad
// policy never lets a plan through.
type Judge interface {
	Judge(ctx context.Context, p *EnvPlan) (*Verdict, error)
}

// A Checker is a Judge that can tell before a run plans anything that it
// will not be able to judge (its policies do not compile): the run then
// fails at once, running no tool.
type Checker interface {
	Check() error
}

// EnvPlan is what a Judge judges: the environment, the run and every
// selected component's plan.
type EnvPlan struct {
	Env        *spec.Environment
	Run        RunInfo
	Components []PlannedComponent
}

// RunInfo is the run being judged.
type RunInfo struct {
	ID       string
	Kind     string
	Actor    string
	Reason   string
	Source   string
	Time     time.Time
	Revision int
	Commit   string
	Author   string
}

// PlannedComponent is one component's part of an EnvPlan.
type PlannedComponent struct {
	Name string
	// Def is the component's definition (a removed component's last one).
	Def *spec.Component
	// Gated says the component waits for a person before it applies.
	Gated bool
	// Removed says the component is no longer in the file and is destroyed.
	Removed bool
	// Plan is nil when no plan could be made before the run (Unplanned
	// says why: an input known only after an upstream applies).
	Plan      *runner.Plan
	Unplanned string
	// Secrets are the texts of the secrets the component was given: the
	// Judge masks any value holding one (a module variable not declared
	// sensitive shows its value in the plan). Never serialised.
	Secrets []string `json:"-"`
}

// Decision kinds, the rule names in package knit.
const (
	DecisionDeny            = string(words.DecisionDeny)
	DecisionWarn            = string(words.DecisionWarn)
	DecisionRequireApproval = string(words.DecisionRequireApproval)
)

// Decision is one message of one policy rule; it is defined in
// internal/progress, beside the event that carries it.
type Decision = progress.Decision

// Verdict is what a Judge decided about one EnvPlan.
type Verdict struct {
	Decisions []Decision `json:"decisions"`
	// Overridden is why an admin let a denied run go on
	// (Options.OverridePolicy); empty otherwise.
	Overridden string `json:"overridden,omitempty"`
	// Input is the document the policies saw, for people debugging them
	// (knit plan -o policy-input). Never holds a secret.
	Input any `json:"-"`
}

// Of returns the decisions of kind.
func (v *Verdict) Of(kind string) []Decision {
	if v == nil {
		return nil
	}
	var out []Decision
	for _, d := range v.Decisions {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// Denied reports whether a deny decision stands (not overridden).
func (v *Verdict) Denied() bool { return v != nil && v.Overridden == "" && len(v.Of(DecisionDeny)) > 0 }

// PolicyDeniedError is a run's error when a policy denied its plan.
type PolicyDeniedError struct{ Denials []Decision }

func (e *PolicyDeniedError) Error() string {
	parts := make([]string, len(e.Denials))
	for i, d := range e.Denials {
		parts[i] = d.String()
	}
	return "denied by policy: " + strings.Join(parts, "; ")
}

// PolicyError is a run's error when its policies could not judge it (a
// parse error, an evaluation error, the time bound): the run fails closed.
type PolicyError struct{ Err error }

func (e *PolicyError) Error() string { return "policy: " + e.Err.Error() }
func (e *PolicyError) Unwrap() error { return e.Err }

// ErrPolicy is matched by errors.Is for every PolicyError.
var ErrPolicy = errors.New("policy failed")

// Is makes errors.Is(err, ErrPolicy) true.
func (e *PolicyError) Is(target error) bool { return target == ErrPolicy }
