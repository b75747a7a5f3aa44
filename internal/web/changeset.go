package web

import (
	"context"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// changeForm is what the "changeset" partial shows: a waiting change set
// and, for who may act, the form that decides it whole.
type changeForm struct {
	Set    *view.ChangeSet
	CanAct bool
	CSRF   string
	Back   string // where the decision returns to
}

// newChangeForm is the template function that builds a changeForm.
func newChangeForm(s *session, cs *view.ChangeSet, back string) changeForm {
	return changeForm{Set: cs, CanAct: s != nil && s.CanAct, CSRF: sessionCSRF(s), Back: back}
}

func sessionCSRF(s *session) string {
	if s == nil {
		return ""
	}
	return s.CSRF
}

// waitingChanges lists the waiting change sets of env ("" = every
// environment ctx's caller sees; the library filters), newest first.
func (w *Web) waitingChanges(ctx context.Context, env string) ([]view.ChangeSet, error) {
	return knit.NewRecords(w.k).ChangeSets(ctx, env, 0, store.ChangeSetPending)
}
