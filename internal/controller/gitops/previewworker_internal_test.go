package gitops

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The preview worker runs at most its slots at once, one per branch,
// ends each at its deadline, wakes the loop when a waiting branch may
// start, and lets the watched branch's run end the preview holding an
// environment.
func TestThePreviewWorkerIsBoundedAndGivesWay(t *testing.T) {
	p := newPreviewWorker(1, 50*time.Millisecond)
	woken := make(chan struct{}, 4)
	wake := func() { woken <- struct{}{} }
	ended := make(chan error, 4)
	ctx := context.Background()
	if !p.start(ctx, "a", wake, func(ctx context.Context) { <-ctx.Done(); ended <- ctx.Err() }) {
		t.Fatal("the first preview did not start")
	}
	if p.start(ctx, "a", wake, func(context.Context) {}) || p.start(ctx, "b", wake, func(context.Context) {}) {
		t.Fatal("a second preview started while the only slot was taken")
	}
	if !p.busy("a", "h1") || p.busy("b", "h1") {
		t.Error("busy is wrong")
	}
	if err := <-ended; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a preview that never ends ended with %v, want its deadline", err)
	}
	<-woken // b waited: the loop is woken once a slot frees
	p.wait()
	if p.busy("a", "h1") {
		t.Error("a is still busy after it returned")
	}
	p.done("a", "h1")
	if !p.busy("a", "h1") || p.busy("a", "h2") {
		t.Error("a head previewed is previewed again, or a new one is not")
	}

	held := make(chan error, 1)
	p.start(ctx, "c", wake, func(ctx context.Context) {
		hctx, release := p.hold(ctx, "team/env")
		defer release()
		<-hctx.Done()
		held <- context.Cause(hctx)
	})
	for !p.yield("team/env") {
		time.Sleep(time.Millisecond)
	}
	if err := <-held; !errors.Is(err, errYielded) {
		t.Errorf("the yielded preview ended with %v, want errYielded", err)
	}
	p.wait()
	if p.yield("team/env") {
		t.Error("yield found a preview after it returned")
	}
}
