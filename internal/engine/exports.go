package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Producer is what an environment offers other environments' teams: its
// exports, as the revision it is applied at declares them, and the
// outputs its components hold now. A producer never applied has no spec
// and no outputs.
type Producer struct {
	ID string // TEAM/ENV
	// Spec is the applied revision's spec; nil when it was never applied
	// (or is unknown).
	Spec *spec.Environment
	// States are its components' stored states (their outputs).
	States map[string]store.ComponentState
}

// LoadProducer reads id's applied spec and outputs from st. An unknown
// environment is a Producer with no Spec, not an error: it may be in
// the same commit as its consumer, and not yet applied.
func LoadProducer(ctx context.Context, st store.Store, id string) (Producer, error) {
	p := Producer{ID: id}
	e, err := st.Environment(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("producer %s: %w", id, err)
	}
	if e.AppliedRevision == 0 || e.Status == store.EnvTornDown {
		return p, nil
	}
	rev, err := st.Revision(ctx, id, e.AppliedRevision)
	if err != nil {
		return p, fmt.Errorf("producer %s revision %d: %w", id, e.AppliedRevision, err)
	}
	if p.Spec, err = spec.FromJSON(rev.Spec, rev.Source, rev.Root); err != nil {
		return p, fmt.Errorf("producer %s revision %d: %w", id, e.AppliedRevision, err)
	}
	if p.States, err = st.ComponentStates(ctx, id); err != nil {
		return p, fmt.Errorf("producer %s: %w", id, err)
	}
	return p, nil
}

// NotExportedError is a read of an output its producer does not export
// to the reader's team: refused at validation and at run time alike.
type NotExportedError struct {
	Producer, Output, Team string
	// Teams are the teams the producer exports Output to (none: it does
	// not export it at all).
	Teams []string
}

func (e *NotExportedError) Error() string { return e.Why() + ": " + e.Fix() }

// Why is the refusal without its fix.
func (e *NotExportedError) Why() string {
	why := "does not export it"
	if len(e.Teams) > 0 {
		why = "exports it only to team " + strings.Join(e.Teams, ", ")
	}
	return fmt.Sprintf("%s does not export %s to team %s (it %s)", e.Producer, e.Output, e.Team, why)
}

// Fix is what the producer's owners could do.
func (e *NotExportedError) Fix() string {
	return fmt.Sprintf("add {output: %s, teams: [%s]} to the spec.exports of %s, or read another output", e.Output, e.Team, e.Producer)
}

// ErrNotExported is what every NotExportedError is (errors.Is).
var ErrNotExported = errors.New("output not exported")

// Is makes errors.Is(err, ErrNotExported) hold.
func (e *NotExportedError) Is(target error) bool { return target == ErrNotExported }

// Check says whether team may read output (COMPONENT.OUTPUT) of p: nil
// when it may, or when p was never applied (nothing is known yet: the
// read waits); a *NotExportedError otherwise.
func (p Producer) Check(output, team string) error {
	if p.Spec == nil || p.Spec.Spec.ExportsTo(output, team) {
		return nil
	}
	err := &NotExportedError{Producer: p.ID, Output: output, Team: team}
	for _, x := range p.Spec.Spec.Exports {
		if x.Output == output {
			err.Teams = append(err.Teams, x.Teams...)
		}
	}
	sort.Strings(err.Teams)
	return err
}

// Exported is every output p exports to team and holds now, by
// COMPONENT.OUTPUT, sensitive ones marked so.
func (p Producer) Exported(team string) map[string]store.OutputValue {
	out := map[string]store.OutputValue{}
	if p.Spec == nil {
		return out
	}
	for _, x := range p.Spec.Spec.Exports {
		if !p.Spec.Spec.ExportsTo(x.Output, team) {
			continue
		}
		if v, ok := p.value(x.Output); ok {
			out[x.Output] = v
		}
	}
	return out
}

// value is output (COMPONENT.OUTPUT) as p's component holds it, marked
// sensitive when either the component's state or the producer's spec
// says it is.
func (p Producer) value(output string) (store.OutputValue, bool) {
	comp, name, _ := strings.Cut(output, ".")
	v, ok := p.States[comp].Outputs[name]
	if !ok || p.States[comp].Status == stateDestroyed {
		return store.OutputValue{}, false
	}
	if c := p.Spec.Component(comp); c != nil {
		if o := c.Output(name); o != nil && o.Sensitive {
			v.Sensitive = true
		}
	}
	return v, true
}
