package gitops

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Bounds of the preview worker: previews run beside the watcher's loop,
// never in it, so a branch nobody reviewed cannot delay a commit of the
// watched branch.
const (
	// DefaultPreviewWorkers is how many branch heads are previewed at
	// once when Config.PreviewWorkers is zero.
	DefaultPreviewWorkers = 2
	// DefaultPreviewTimeout is how long one branch head's previews may
	// take when Config.PreviewTimeout is zero: at its end the preview's
	// tools are stopped and it is recorded as timed out.
	DefaultPreviewTimeout = 5 * time.Minute
)

// previewWorker runs branch previews in goroutines of its own, at most
// slots at once, one at a time per branch. Its zero value is not usable:
// see newPreviewWorker.
type previewWorker struct {
	slots   chan struct{}
	timeout time.Duration
	mu      sync.Mutex
	running map[string]bool
	// waiting is set when a poll left a branch for lack of a slot: the
	// loop is woken when one frees.
	waiting bool
	// holding cancels the preview that plans an environment now, by its
	// ID: the watched branch's run of it goes first (yield).
	holding map[string]context.CancelCauseFunc
	// previewed is the head each branch was last previewed at by this
	// process: a poll that read the store's record just before it was
	// written does not preview that head again.
	previewed map[string]string
	wg        sync.WaitGroup
}

// errYielded ends a preview that held an environment the watched branch's
// run needs: it is previewed again at a later poll.
var errYielded = errors.New("the watched branch's run needs the environment")

func newPreviewWorker(workers int, timeout time.Duration) *previewWorker {
	if workers <= 0 {
		workers = DefaultPreviewWorkers
	}
	if timeout <= 0 {
		timeout = DefaultPreviewTimeout
	}
	return &previewWorker{slots: make(chan struct{}, workers), timeout: timeout, running: map[string]bool{},
		holding: map[string]context.CancelCauseFunc{}, previewed: map[string]string{}}
}

// start runs fn for branch in a goroutine, with a context that ends at the
// preview's deadline, unless branch is being previewed already or every
// slot is taken (then false: the branch waits for a later poll). wake is
// called when fn returns and a branch was left waiting meanwhile.
func (p *previewWorker) start(ctx context.Context, branch string, wake func(), fn func(ctx context.Context)) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[branch] {
		return false
	}
	select {
	case p.slots <- struct{}{}:
	default:
		p.waiting = true
		return false
	}
	p.running[branch] = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.finish(branch, wake)
		pctx, cancel := context.WithTimeout(ctx, p.timeout)
		defer cancel()
		fn(pctx)
	}()
	return true
}

func (p *previewWorker) finish(branch string, wake func()) {
	p.mu.Lock()
	delete(p.running, branch)
	<-p.slots
	w := p.waiting
	p.waiting = false
	p.mu.Unlock()
	if w {
		wake()
	}
}

// busy reports whether branch is being previewed, or was previewed at
// head by this process.
func (p *previewWorker) busy(branch, head string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running[branch] || p.previewed[branch] == head
}

// done records that branch was previewed at head.
func (p *previewWorker) done(branch, head string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.previewed[branch] = head
}

// wait returns once every preview started has returned.
func (p *previewWorker) wait() { p.wg.Wait() }

// hold gives the preview of env a context the watched branch's run of env
// may end (yield); release ends it.
func (p *previewWorker) hold(ctx context.Context, env string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	p.mu.Lock()
	p.holding[env] = cancel
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		delete(p.holding, env)
		p.mu.Unlock()
		cancel(nil)
	}
}

// yield ends the preview planning env, if any, and reports whether there
// was one: its tools are interrupted and the environment's lock freed.
func (p *previewWorker) yield(env string) bool {
	p.mu.Lock()
	cancel, ok := p.holding[env]
	p.mu.Unlock()
	if ok {
		cancel(errYielded)
	}
	return ok
}
