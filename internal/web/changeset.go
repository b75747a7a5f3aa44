package web

import (
	"context"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// changeForm is what the "changeset" partial shows: a waiting change set
// and, for who may act, the form that decides it whole.
type changeForm struct {
	Set    *store.ChangeSet
	CanAct bool
	CSRF   string
	Back   string // where the decision returns to
}

// newChangeForm is the template function that builds a changeForm.
func newChangeForm(s *session, cs *store.ChangeSet, back string) changeForm {
	return changeForm{Set: cs, CanAct: s != nil && s.CanAct, CSRF: sessionCSRF(s), Back: back}
}

func sessionCSRF(s *session) string {
	if s == nil {
		return ""
	}
	return s.CSRF
}

// waitingChanges lists the waiting change sets of env ("" = every
// environment the caller sees), newest first.
func (w *Web) waitingChanges(ctx context.Context, env string, tok store.Token) ([]store.ChangeSet, error) {
	sets, err := w.k.ChangeSets(ctx, env, 0, store.ChangeSetPending)
	if err != nil {
		return nil, err
	}
	out := sets[:0]
	for _, cs := range sets {
		if knit.CanSee(tok, teamOf(cs.Env)) {
			out = append(out, cs)
		}
	}
	return out, nil
}
