package engine

import (
	"sync"

	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/runner"
)

// planned holds, while a run plans ahead of applying (a plan run, the
// plans judged first, a change set's plans ahead), the plans of the
// components planned so far: their known outputs feed the plans of the
// components that take them (session.producerState). Outside those phases
// it holds nothing, and inputs come from what producers really output.
type planned struct {
	mu    sync.Mutex
	plans map[string]*runner.Plan
}

// start begins a phase of planning ahead, with no plan known yet.
func (p *planned) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plans = map[string]*runner.Plan{}
}

// stop ends the phase: inputs come from what producers output again.
func (p *planned) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plans = nil
}

// put keeps name's plan, in a phase.
func (p *planned) put(name string, plan *runner.Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plans != nil {
		p.plans[name] = plan
	}
}

// get returns name's plan, if the phase has one.
func (p *planned) get(name string) (*runner.Plan, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	plan, ok := p.plans[name]
	return plan, ok
}

// coming are the kinds the plans of name's upstream components (in g)
// define, in a phase (runner.Plan.Defines), each marked with the upstream
// that creates it: name's plan counts them as served, its objects of
// those kinds known after apply.
func (p *planned) coming(g *dag.Graph, name string) []runner.Kind {
	var out []runner.Kind
	for _, up := range g.Ancestors(name) {
		plan, ok := p.get(up)
		if !ok {
			continue
		}
		for _, k := range plan.Defines {
			k.By = up
			out = append(out, k)
		}
	}
	return out
}
