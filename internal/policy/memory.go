package policy

import (
	"context"
	"errors"
	"runtime/metrics"
	"time"
)

// errMemoryBound is the cause of an evaluation stopped by watchMemory.
var errMemoryBound = errors.New("the memory bound")

// memoryCheck is how often watchMemory looks at the heap: often enough
// that a policy allocating as fast as Go can is stopped a few hundred MiB
// past the bound, rarely enough to cost nothing.
const memoryCheck = 5 * time.Millisecond

// heapMetric is the Go runtime's count of bytes in heap objects, live or
// not yet swept: an over-estimate of what the evaluation keeps, so the
// bound errs on the side of stopping.
const heapMetric = "/memory/classes/heap/objects:bytes"

// watchMemory returns a context that is cancelled, with cause
// errMemoryBound, once the process's heap has grown by more than limit
// bytes since the call, and a function that stops watching. OPA has no
// heap limit of its own; its evaluation stops at the context's
// cancellation, which it checks as it iterates. The heap is the
// process's: what other goroutines allocate meanwhile counts too, so the
// limit is generous (DefaultMaxMemory) next to what judging a plan takes
// (tens of MiB for a thousand components).
func watchMemory(ctx context.Context, limit uint64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	sample := []metrics.Sample{{Name: heapMetric}}
	heap := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	base := heap()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(memoryCheck)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if h := heap(); h > base && h-base > limit {
					cancel(errMemoryBound)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}
