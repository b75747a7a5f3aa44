package health

import (
	"fmt"
	"time"

	"knit.dev/knit/internal/words"
)

// Verdict is a check's outcome (words.Verdict).
type Verdict = words.Verdict

// Verdicts, as Argo Rollouts names an analysis' outcome (words.Verdict*).
const (
	Successful   = words.VerdictSuccessful
	Failed       = words.VerdictFailed
	Inconclusive = words.VerdictInconclusive
)

// Worse reports whether a is worse than b: Failed over Inconclusive over
// Successful; an environment's health is its worst check's.
func Worse(a, b Verdict) bool { return rank(a) > rank(b) }

func rank(v Verdict) int {
	switch v {
	case Failed:
		return 2
	case Inconclusive:
		return 1
	}
	return 0
}

// Phase is one measurement's outcome.
type Phase string

// Measurement phases; Error means the measurement could not be taken.
const (
	PhaseSuccessful   Phase = "Successful"
	PhaseFailed       Phase = "Failed"
	PhaseInconclusive Phase = "Inconclusive"
	PhaseError        Phase = "Error"
)

// Reason says, as data, why a check got its verdict.
type Reason string

// Reasons of a verdict.
const (
	ReasonCountReached      Reason = "CountReached"
	ReasonFailureLimit      Reason = "FailureLimitExceeded"
	ReasonInconclusiveLimit Reason = "InconclusiveLimitExceeded"
	ReasonErrorLimit        Reason = "ConsecutiveErrorLimitExceeded"
	ReasonCancelled         Reason = "Cancelled"
	ReasonBroken            Reason = "CheckNotReady"    // its URL's output could not be read
	ReasonCheckBlock        Reason = "CheckBlockFailed" // an OpenTofu check block's assertion failed in the apply
)

// Measurement is one measurement and its evidence.
type Measurement struct {
	Phase Phase     `json:"phase"`
	At    time.Time `json:"at"`
	// StatusCode is an HTTP check's status; Value a Prometheus query's
	// value; ExitCode a command's exit code (each set by its kind only).
	StatusCode int      `json:"statusCode,omitempty"`
	Value      *float64 `json:"value,omitempty"`
	ExitCode   *int     `json:"exitCode,omitempty"`
	// Message says what was seen, for a person ("status 503, want 200").
	Message string `json:"message,omitempty"`
}

// Limits are a check's count and tolerances.
type Limits struct {
	Count                 int
	FailureLimit          int
	InconclusiveLimit     int
	ConsecutiveErrorLimit int
}

// tally counts measurements by phase, and the errors at the end in a row.
type tally struct {
	successful, failed, inconclusive, errors, consecutiveErrors int
}

func count(ms []Measurement) tally {
	var t tally
	for _, m := range ms {
		switch m.Phase {
		case PhaseSuccessful:
			t.successful++
		case PhaseFailed:
			t.failed++
		case PhaseInconclusive:
			t.inconclusive++
		case PhaseError:
			t.errors++
			t.consecutiveErrors++
			continue
		}
		t.consecutiveErrors = 0
	}
	return t
}

// Assess decides a check's verdict from its measurements so far: done is
// false while more are needed. It is Argo Rollouts' assessment of one
// metric, with its Error phase judged Inconclusive.
func Assess(l Limits, ms []Measurement) (v Verdict, why Reason, message string, done bool) {
	t := count(ms)
	switch {
	case t.failed > l.FailureLimit:
		return Failed, ReasonFailureLimit, fmt.Sprintf("failed (%d) > failureLimit (%d)", t.failed, l.FailureLimit), true
	case t.inconclusive > l.InconclusiveLimit:
		return Inconclusive, ReasonInconclusiveLimit, fmt.Sprintf("inconclusive (%d) > inconclusiveLimit (%d)", t.inconclusive, l.InconclusiveLimit), true
	case t.consecutiveErrors > l.ConsecutiveErrorLimit:
		return Inconclusive, ReasonErrorLimit, fmt.Sprintf("consecutive errors (%d) > consecutiveErrorLimit (%d)", t.consecutiveErrors, l.ConsecutiveErrorLimit), true
	case t.successful+t.failed+t.inconclusive >= l.Count:
		return Successful, ReasonCountReached, fmt.Sprintf("count (%d) reached", l.Count), true
	}
	return "", "", "", false
}
