package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// UpstreamNotReadyError is an input read from another environment's
// output that the producer does not hold yet (never applied, or not yet
// that output): the component waits (ReasonUpstreamEnvironmentNotReady),
// it does not fail.
type UpstreamNotReadyError struct {
	Variable string
	Ref      spec.EnvOutputRef
	// Applied says the producer was applied (but holds no such output).
	Applied bool
}

func (e *UpstreamNotReadyError) Error() string {
	why := "was never applied"
	if e.Applied {
		why = "holds no output " + e.Ref.Output.Component + "." + e.Ref.Output.Output + " yet"
	}
	return fmt.Sprintf("input %s: waiting for %s: it %s (the input reads %s)", e.Variable, e.Ref.Environment(), why, e.Ref)
}

// envReader reads other environments' outputs for one consumer, each
// producer loaded from the store once (a run sees one view of it).
type envReader struct {
	ctx   context.Context
	store store.Store
	team  string // the consumer's

	mu        sync.Mutex
	producers map[string]Producer
}

func newEnvReader(ctx context.Context, st store.Store, consumer *spec.Environment) *envReader {
	return &envReader{ctx: ctx, store: st, team: consumer.Spec.TeamName, producers: map[string]Producer{}}
}

func (r *envReader) producer(id string) (Producer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.producers[id]; ok {
		return p, nil
	}
	p, err := LoadProducer(r.ctx, r.store, id)
	if err != nil {
		return p, err
	}
	r.producers[id] = p
	return p, nil
}

// output is ref's value for input variable: a *NotExportedError when the
// producer does not export it to the consumer's team, an
// *UpstreamNotReadyError while it holds none.
func (r *envReader) output(variable string, ref spec.EnvOutputRef) (store.OutputValue, error) {
	if r == nil {
		return store.OutputValue{}, fmt.Errorf("input %s: other environments' outputs are not available here", variable)
	}
	p, err := r.producer(ref.Environment())
	if err != nil {
		return store.OutputValue{}, err
	}
	name := ref.Output.Component + "." + ref.Output.Output
	if err := p.Check(name, r.team); err != nil {
		return store.OutputValue{}, fmt.Errorf("input %s: %w", variable, err)
	}
	v, ok := store.OutputValue{}, false
	if p.Spec != nil {
		v, ok = p.value(name)
	}
	if !ok {
		return v, &UpstreamNotReadyError{Variable: variable, Ref: ref, Applied: p.Spec != nil}
	}
	return v, nil
}

// value is ref's value decoded, its index applied.
func (r *envReader) value(variable string, ref spec.EnvOutputRef) (any, store.OutputValue, error) {
	out, err := r.output(variable, ref)
	if err != nil {
		return nil, out, err
	}
	var val any
	if err := json.Unmarshal(out.Value, &val); err != nil {
		return nil, out, fmt.Errorf("input %s: stored output %s is unreadable: %w", variable, ref, err)
	}
	val, err = element(val, ref.Output)
	return val, out, err
}

// secrets are the string forms of the sensitive outputs env reads from
// other environments (those it may read and that exist), for masking.
func (r *envReader) secrets(env *spec.Environment) []string {
	var out []string
	for _, ref := range env.EnvOutputRefs() {
		if val, o, err := r.value("", ref); err == nil && o.Sensitive {
			out = append(out, sensitiveStrings(val)...)
		}
	}
	return out
}

// waitUpstream records st's component waiting for another environment's
// output and holds its dependents (dag.ErrHold): a wait, not a failure.
func (st *step) waitUpstream(nr *UpstreamNotReadyError) error {
	st.cr.Log = st.log.finish(nil)
	producer := nr.Ref.Environment()
	st.s.setCode(st.cr, Waiting, ReasonUpstreamEnvironmentNotReady.Cause(producer),
		"waiting: upstream environment "+producer+" not ready", nr.Error())
	if err := st.s.record(st.op, st.cr, st.storeRun, nil); err != nil {
		return err
	}
	return fmt.Errorf("%s: %w", st.c.Name, dag.ErrHold)
}

// upstreamNotReady is err's *UpstreamNotReadyError, if it is one.
func upstreamNotReady(err error) (*UpstreamNotReadyError, bool) {
	var nr *UpstreamNotReadyError
	ok := errors.As(err, &nr)
	return nr, ok
}

// WaitingUpstream reports whether a component waits for another
// environment's output (and none failed or awaits approval: those say more).
func (r *Result) WaitingUpstream() bool {
	for _, c := range r.Components {
		if c.Status == Waiting && c.Cause.ReasonCode == string(ReasonUpstreamEnvironmentNotReady) {
			return true
		}
	}
	return false
}
