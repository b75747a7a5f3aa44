package knit

import (
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// SourceRecovery is the source of the runs that resume interrupted ones.
const SourceRecovery = "recovery"

// ResumeKind is the one rule for which interrupted runs are resumed, and
// as what kind, whichever queue finds them (runqueue after a crash or a
// stop of one server, riverqueue's Reap after a replica died or stopped):
//
//   - an apply resumes as an apply, a teardown as a teardown, a drift
//     check as a drift check;
//   - a rollback resumes as a rollback to the revision it recorded (its
//     run's Revision: the target's spec, recorded before it changed
//     anything), whether or not it got as far as recording that revision
//     applied: an apply of the applied revision would re-apply the bad
//     one, a rollback without a target would go back further. A rollback
//     whose record names no revision (its kind known from a shutdown
//     only) resumes as an apply of the applied revision;
//   - a plan is not resumed: it changed nothing, and the next run of its
//     environment closes its record.
func ResumeKind(r view.Run) (store.RunKind, bool) {
	switch r.Kind {
	case engine.KindApply, engine.KindTeardown, engine.KindDrift:
		return r.Kind, true
	case engine.KindRollback:
		if r.Revision > 0 {
			return engine.KindRollback, true
		}
		return engine.KindApply, true
	}
	return "", false
}

// ResumeRequest is the run that resumes the interrupted run r, started
// by actor for reason; false when ResumeKind says r is not resumed. A
// rollback's resume goes to r's revision (To) and names r (Resumes).
func ResumeRequest(r view.Run, actor, reason string) (RunRequest, bool) {
	as, ok := ResumeKind(r)
	if !ok {
		return RunRequest{}, false
	}
	req := RunRequest{Kind: as, EnvRef: r.Env, Actor: actor, Source: SourceRecovery, Reason: reason, Resumes: r.ID}
	if as == engine.KindRollback {
		req.To = r.Revision
	}
	return req, true
}
