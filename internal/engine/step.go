package engine

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// step is one component's work within a run: its result entry, log, the
// secrets to redact from that log, and its stored component run.
type step struct {
	s        *session
	c        *spec.Component
	cr       *ComponentResult
	log      stepLog
	secrets  []string
	storeRun *store.ComponentRun
	op       string
	force    bool // plan even if the fingerprint is unchanged
	// digestFP is the fingerprint a destroy's plan digest is made of (the
	// component's, as a preview planned it); "" : no digest.
	digestFP string
}

// prepared is what converge needs about a component before it plans.
type prepared struct {
	r  runner.Runner
	rc runner.Component
	in runner.Inputs
	fp string
	// unknown are the inputs whose producers' outputs are not known yet
	// (prepareAhead only; they are not in in).
	unknown []*missingOutputError
}

// newStep starts name's work in the run, announced with status first.
func (s *session) newStep(name string, first Status) *step {
	return &step{s: s, c: s.env.Component(name), cr: s.add(name, first), op: "apply"}
}

// fail records the step as failed (interrupted if the run was cancelled),
// keeping the component's previous outputs.
func (st *step) fail(ctx context.Context, err error) error {
	if nr, ok := upstreamNotReady(err); ok && !canceled(ctx, err) {
		return st.waitUpstream(nr)
	}
	status := Failed
	if canceled(ctx, err) {
		status = Canceled
	}
	// A failed plan or drift check changes nothing; a failed apply or
	// destroy leaves the component failed, so the next run retries it.
	changing := st.op == "apply" || st.op == "destroy" || st.cr.Status == Applying
	if st.op == "apply" && st.cr.Status != Applying && !live(st.s.state(st.c.Name)) {
		// It failed before its tool changed anything (its inputs, its
		// plan), and nothing of it existed: it stays not live, so a
		// teardown does not need (and cannot resolve) its inputs to
		// destroy nothing, and destroys what it depends on.
		changing = false
	}
	st.cr.Log = st.log.finish(nil)
	code, cause := string(status), ReasonInterrupted.Cause()
	if status == Failed {
		code, cause = "failed: "+firstLine(redact(err.Error(), st.secrets)), ReasonToolFailed.Cause()
	}
	st.s.setCode(st.cr, status, cause, code, redact(err.Error(), st.secrets))
	var state *store.ComponentState
	if changing {
		state = &store.ComponentState{Status: stateFailed, Outputs: st.s.state(st.c.Name).Outputs}
	}
	_ = st.s.record(st.op, st.cr, st.storeRun, state)
	return err
}

// prepare resolves the runner and inputs of a step's component and, when
// asked, its fingerprint (destroying needs none, and it may cost a git fetch).
func (st *step) prepare(ctx context.Context, fingerprint bool) (*prepared, error) {
	return st.prepareInputs(ctx, fingerprint, false)
}

// prepareAhead lets the runner of a component never applied before do
// what it can ahead of the component's turn (runner.Preparer: Terraform's
// init), in a parallelism slot the walk would leave idle while the
// component's dependencies run. A component applied before is left alone:
// its work dir is ready, and checking costs more than it saves. What the
// runner logs is kept for the component's log, which the turn starts with.
func (s *session) prepareAhead(ctx context.Context, name string) {
	c := s.env.Component(name)
	if st := s.state(name); st.Status != "" && st.Status != stateDestroyed {
		return
	}
	r, err := s.e.runnerFor(c)
	if err != nil {
		return
	}
	p, ok := r.(runner.Preparer)
	if !ok {
		return
	}
	log := &stepLog{}
	rc, err := s.e.component(s.env, s.removed.defEnv(name), c, s.handle.ID, log)
	if err != nil {
		return
	}
	if err := p.PrepareAhead(ctx, rc); err != nil {
		fmt.Fprintf(log, "knit: preparing %s ahead of its turn failed; its turn tries again: %v\n", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aheadLogs == nil {
		s.aheadLogs = map[string]string{}
	}
	s.aheadLogs[name] = log.finish(nil) // the turn masks it with its secrets
}

func (st *step) prepareInputs(ctx context.Context, fingerprint, ahead bool) (*prepared, error) {
	r, err := st.s.e.runnerFor(st.c)
	if err != nil {
		return nil, err
	}
	in, secrets, sensitive, unknown, err := resolveKnown(st.c, st.s.producerState, st.s.upstream)
	// What the component output as sensitive before is masked in its log too.
	st.secrets = append(secrets, storedSecrets(st.s.state(st.c.Name).Outputs)...)
	if err != nil {
		return nil, err
	}
	if len(unknown) > 0 && !ahead {
		return nil, unknown[0]
	}
	st.log.begin(st.secrets, st.op != "destroy" && mayRevealSecrets(st.c, st.s.state(st.c.Name)), func(line string) {
		st.s.publish(Event{Kind: LogLine, Component: st.c.Name, Line: line})
	})
	if ahead := st.s.takeAheadLog(st.c.Name); ahead != "" {
		_, _ = st.log.Write([]byte(ahead))
	}
	rc, err := st.s.e.component(st.s.env, st.s.removed.defEnv(st.c.Name), st.c, st.s.handle.ID, &st.log)
	if err != nil {
		return nil, err
	}
	rc.Sensitive = sensitive
	rc.Unreviewed = st.s.opts.Preview && st.s.opts.Sandbox != nil
	rc.CheckFailed = st.s.verification.checkFailed(st.c.Name)
	if prev := st.s.state(st.c.Name); prev.Status == stateApplied || prev.Status == stateDrifted || prev.Status == stateAwaiting {
		rc.Applied = prev.Fingerprint // what the store says was applied last, wherever it was
	}
	p := &prepared{r: r, rc: rc, in: in, unknown: unknown}
	if fingerprint {
		if p.fp, err = r.Fingerprint(ctx, rc, in); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// prepareAhead is prepare for a plan ahead of the component's turn: an
// input whose producer's output is not known yet is listed in unknown.
func (st *step) prepareAhead(ctx context.Context) (*prepared, error) {
	return st.prepareInputs(ctx, false, true)
}

// takeAheadLog returns and forgets what prepareAhead logged for name.
func (s *session) takeAheadLog(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.aheadLogs[name]
	delete(s.aheadLogs, name)
	return l
}
