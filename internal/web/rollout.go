package web

import (
	"context"
	"errors"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

// rolloutBar is an environment's rollout as its page shows it: a bar of
// the strategy's steps (done, the current one, to come), the weight, the
// run it is at, and what each of its runs found.
type rolloutBar struct {
	view.Rollout
	Tone Tone
	// StepN is the current step counted from 1.
	StepN int
	Bar   []barStep
	// Evidence is the rollout's, newest first.
	Evidence []evidenceItem
}

// evidenceItem is what one run of the rollout found; N is its step
// counted from 1.
type evidenceItem struct {
	view.RolloutStepResult
	N int
}

// barStep is one step on the bar.
type barStep struct {
	N     int
	Label string
	State string // done, current, todo
}

// rolloutOf is env's newest rollout for its page; nil when it has had
// none.
func (w *Web) rolloutOf(ctx context.Context, env string) (*rolloutBar, error) {
	v, err := knit.NewRollouts(w.k).Status(ctx, env)
	if errors.Is(err, knit.ErrNoRollout) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b := &rolloutBar{Rollout: v, Tone: rolloutTone(v.State), StepN: v.Step + 1}
	over := v.State == knit.RolloutSucceeded
	for i, p := range v.Plan {
		st := "todo"
		switch {
		case over || i < v.Step:
			st = "done"
		case i == v.Step:
			st = "current"
		}
		b.Bar = append(b.Bar, barStep{N: i + 1, Label: p.String(), State: st})
	}
	for i := len(v.Evidence) - 1; i >= 0; i-- {
		b.Evidence = append(b.Evidence, evidenceItem{RolloutStepResult: v.Evidence[i], N: v.Evidence[i].Step + 1})
	}
	return b, nil
}

// rolloutTone is a rollout state's colour.
func rolloutTone(state string) Tone {
	switch state {
	case knit.RolloutRunning, knit.RolloutAborting:
		return ToneBusy
	case knit.RolloutPaused:
		return ToneAct
	case knit.RolloutSucceeded:
		return ToneOK
	case knit.RolloutFailed, knit.RolloutAborted:
		return ToneBad
	}
	return ToneNeutral
}

// rolloutMark changes whenever env's rollout does (its step, weight,
// state or run).
func (w *live) rolloutMark(ctx context.Context, env string) string {
	m, err := knit.NewRollouts(w.k).Mark(ctx, env)
	if err != nil {
		return "?"
	}
	return "|" + m
}
