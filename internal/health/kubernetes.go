package health

import (
	"context"
	"fmt"
	"strings"
)

// Workloads is one look at the workloads a component owns, as its runner
// reports it (bounded: the runner names at most MaxNotReady of them).
type Workloads struct {
	// Checked is how many workloads were looked at.
	Checked int `json:"checked"`
	// NotReady says, for each workload that is not ready, which and why:
	// "Deployment shop/web: 0/1 available (ProgressDeadlineExceeded)".
	NotReady []string `json:"notReady,omitempty"`
	// More is how many more are not ready than NotReady names.
	More int `json:"more,omitempty"`
}

// MaxNotReady is how many not-ready workloads a look names; the others are
// counted only, so that a release of thousands keeps its evidence short.
const MaxNotReady = 5

// Kubernetes is a kubernetes check: healthy when every workload its
// component owns (or the Objects it names) is ready. Look reads them,
// through the component's runner and cluster access.
type Kubernetes struct {
	Objects []string
	Look    func(ctx context.Context, objects []string) (Workloads, error)
	// Mask is the caller's masking rule for evidence (nil: none needed).
	Mask func(string) string
}

// Measure looks once: every workload ready is Successful, any not ready
// (still rolling out, or failed for good) Failed; a look that cannot be
// taken (the API server does not answer in time) is an Error.
func (k *Kubernetes) Measure(ctx context.Context) Measurement {
	w, err := k.Look(ctx, k.Objects)
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return Measurement{Phase: PhaseError, Message: "timed out"}
	case err != nil:
		return Measurement{Phase: PhaseError, Message: k.mask(lastBytes(err.Error(), outputTail))}
	case len(w.NotReady) == 0 && w.More == 0:
		return Measurement{Phase: PhaseSuccessful, Message: fmt.Sprintf("%d of %d workloads ready", w.Checked, w.Checked)}
	}
	notReady := len(w.NotReady) + w.More
	msg := fmt.Sprintf("%d of %d workloads not ready: %s", notReady, w.Checked, strings.Join(w.NotReady, "; "))
	if w.More > 0 {
		msg += fmt.Sprintf("; and %d more", w.More)
	}
	return Measurement{Phase: PhaseFailed, Message: k.mask(msg)}
}

func (k *Kubernetes) mask(s string) string {
	if k.Mask == nil {
		return s
	}
	return k.Mask(s)
}
