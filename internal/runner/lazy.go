package runner

import (
	"context"
	"sync"
)

// Lazy returns a Runner that calls newRunner on first use and delegates to its
// result from then on, so a runner that is costly to set up (one that asks
// its tool for a version) costs nothing in runs that never need it.
func Lazy(newRunner func() Runner) Runner {
	return &lazy{newRunner: newRunner}
}

type lazy struct {
	once      sync.Once
	newRunner func() Runner
	r         Runner
}

func (l *lazy) get() Runner {
	l.once.Do(func() { l.r = l.newRunner() })
	return l.r
}

func (l *lazy) Fingerprint(ctx context.Context, c Component, in Inputs) (string, error) {
	return l.get().Fingerprint(ctx, c, in)
}

func (l *lazy) Plan(ctx context.Context, c Component, in Inputs, opts PlanOptions) (*Plan, error) {
	return l.get().Plan(ctx, c, in, opts)
}

func (l *lazy) Apply(ctx context.Context, c Component, p *Plan) (Outputs, error) {
	return l.get().Apply(ctx, c, p)
}

func (l *lazy) Destroy(ctx context.Context, c Component, in Inputs) error {
	return l.get().Destroy(ctx, c, in)
}

func (l *lazy) Outputs(ctx context.Context, c Component) (Outputs, error) {
	return l.get().Outputs(ctx, c)
}

func (l *lazy) PlanApply(ctx context.Context, c Component, in Inputs) (*Plan, Outputs, error) {
	if pa, ok := l.get().(PlanApplier); ok {
		return pa.PlanApply(ctx, c, in)
	}
	return nil, nil, ErrUnsupported
}

func (l *lazy) PrepareAhead(ctx context.Context, c Component) error {
	if p, ok := l.get().(Preparer); ok {
		return p.PrepareAhead(ctx, c)
	}
	return nil
}

func (l *lazy) PlanPlaceholders(ctx context.Context, c Component, in Inputs, unknown []string, opts PlanOptions) (*Plan, error) {
	if pp, ok := l.get().(PlaceholderPlanner); ok {
		return pp.PlanPlaceholders(ctx, c, in, unknown, opts)
	}
	return nil, ErrUnsupported
}

func (l *lazy) Workloads(ctx context.Context, c Component, in Inputs, objects []string) (Workloads, error) {
	if w, ok := l.get().(WorkloadReader); ok {
		return w.Workloads(ctx, c, in, objects)
	}
	return Workloads{}, ErrUnsupported
}
