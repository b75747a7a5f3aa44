package knit

import (
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
)

// SourceRecovery is the source of the runs that resume interrupted ones.
const SourceRecovery = "recovery"

// ResumeKind is the one rule for which interrupted runs are resumed, and
// as what kind, whichever queue finds them (runqueue after a crash or a
// stop of one server, riverqueue's Reap after a replica died or stopped):
//
//   - an apply resumes as an apply, a teardown as a teardown, a drift
//     check as a drift check;
//   - a rollback resumes as an apply: it recorded the revision it goes
//     back to as applied before it changed anything, so applying the
//     applied revision finishes it (a rollback again would go back
//     further);
//   - a plan is not resumed: it changed nothing, and the next run of its
//     environment closes its record.
func ResumeKind(kind store.RunKind) (store.RunKind, bool) {
	switch kind {
	case engine.KindApply, engine.KindTeardown, engine.KindDrift:
		return kind, true
	case engine.KindRollback:
		return engine.KindApply, true
	}
	return "", false
}

// ResumeRequest is the run that resumes an interrupted run of kind in
// env, started by actor for reason; false when ResumeKind says the run
// is not resumed.
func ResumeRequest(env string, kind store.RunKind, actor, reason string) (RunRequest, bool) {
	as, ok := ResumeKind(kind)
	if !ok {
		return RunRequest{}, false
	}
	return RunRequest{Kind: as, EnvRef: env, Actor: actor, Source: SourceRecovery, Reason: reason}, true
}
