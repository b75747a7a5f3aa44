package engine

import (
	"context"
	"fmt"
	"strings"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// EnvCycleError is a cycle of environments reading each other's outputs
// (A reads B reads A): none of them could ever apply first.
type EnvCycleError struct {
	Cycle []string // TEAM/ENV, the first again at the end
}

func (e *EnvCycleError) Error() string {
	return "environments read each other's outputs in a cycle: " + strings.Join(e.Cycle, " → ") +
		": remove one of the reads (a valueFrom {environment, output})"
}

// EnvCycle finds a cycle through env of environments reading each
// other's outputs: env as given, the others as they are applied. nil
// when there is none.
func EnvCycle(ctx context.Context, st store.Store, env *spec.Environment) (*EnvCycleError, error) {
	start := env.ID()
	upstreams := map[string][]string{start: env.Upstreams()}
	next := func(id string) ([]string, error) {
		if ups, ok := upstreams[id]; ok {
			return ups, nil
		}
		p, err := LoadProducer(ctx, st, id)
		if err != nil {
			return nil, err
		}
		if p.Spec != nil {
			upstreams[id] = p.Spec.Upstreams()
		} else {
			upstreams[id] = nil
		}
		return upstreams[id], nil
	}
	seen := map[string]bool{}
	var path []string
	var walk func(id string) (bool, error)
	walk = func(id string) (bool, error) {
		path = append(path, id)
		ups, err := next(id)
		if err != nil {
			return false, err
		}
		for _, u := range ups {
			if u == start {
				path = append(path, u)
				return true, nil
			}
			if seen[u] {
				continue
			}
			seen[u] = true
			if found, err := walk(u); found || err != nil {
				return found, err
			}
		}
		path = path[:len(path)-1]
		return false, nil
	}
	found, err := walk(start)
	if err != nil || !found {
		return nil, err
	}
	return &EnvCycleError{Cycle: path}, nil
}

// envReadProblem is what a store says of one read of another
// environment's output before any run: refused (not exported; error), or
// not there yet (warning: the consumer waits).
func envReadProblem(p Producer, team string, ref spec.EnvOutputRef) (msg, hint string, isErr bool) {
	name := ref.Output.Component + "." + ref.Output.Output
	if err := p.Check(name, team); err != nil {
		ne := err.(*NotExportedError)
		return ne.Why(), ne.Fix(), true
	}
	if p.Spec == nil {
		return fmt.Sprintf("%s is not applied yet: this environment waits for it (UpstreamEnvironmentNotReady)", p.ID), "", false
	}
	if _, ok := p.value(name); !ok {
		return fmt.Sprintf("%s holds no output %s yet: this environment waits for it (UpstreamEnvironmentNotReady)", p.ID, name), "", false
	}
	return "", "", false
}

// CheckEnvReads checks env's reads of other environments' outputs against
// what st holds: each one refused (the producer, applied, does not export
// it to env's team) is an error, each one not there yet a warning; a
// cycle of environments reading each other is an error at the first read.
func CheckEnvReads(ctx context.Context, st store.Store, env *spec.Environment) (spec.EnvReadProblems, error) {
	var out spec.EnvReadProblems
	r := newEnvReader(ctx, st, env)
	for _, read := range env.EnvReads() {
		p, err := r.producer(read.Ref.Environment())
		if err != nil {
			return nil, err
		}
		if msg, hint, isErr := envReadProblem(p, env.Spec.TeamName, read.Ref); msg != "" {
			out = append(out, spec.EnvReadProblem{Field: read.Field, Message: msg, Hint: hint, Error: isErr})
		}
	}
	cyc, err := EnvCycle(ctx, st, env)
	if err != nil {
		return nil, err
	}
	if reads := env.EnvReads(); cyc != nil && len(reads) > 0 {
		out = append(out, spec.EnvReadProblem{Field: reads[0].Field, Message: cyc.Error(), Error: true})
	}
	return out, nil
}
