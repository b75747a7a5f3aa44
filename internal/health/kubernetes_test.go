package health

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/spec"
)

// A kubernetes check is Successful once its look finds every workload
// ready, Failed on a look that finds one not ready, naming it and why, and
// Inconclusive when the cluster does not answer within the timeout.
func TestKubernetesCheck(t *testing.T) {
	looks := []Workloads{
		{Checked: 2, NotReady: []string{"Deployment shop/web: 0/1 available"}},
		{Checked: 2},
	}
	calls := 0
	look := func(_ context.Context, objects []string) (Workloads, error) {
		if len(objects) != 1 || objects[0] != "Deployment/web" {
			t.Errorf("objects: %v", objects)
		}
		w := looks[calls]
		calls++
		return w, nil
	}
	one, two := 1, 2
	c, err := FromSpec(spec.HealthCheck{Name: "ready", Kubernetes: &spec.KubernetesCheck{Objects: []string{"Deployment/web"}},
		Interval: "5s", Count: &two, FailureLimit: &one}, Env{Workloads: look})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), newFakeClock(), c)
	if err != nil || res.Verdict != Successful || len(res.Measurements) != 2 {
		t.Fatalf("tolerated one not ready, then ready: %+v %v", res, err)
	}
	if m := res.Measurements[0]; m.Phase != PhaseFailed || m.Message != "1 of 2 workloads not ready: Deployment shop/web: 0/1 available" {
		t.Errorf("first look: %+v", m)
	}
	if m := res.Measurements[1]; m.Message != "2 of 2 workloads ready" {
		t.Errorf("second look: %+v", m)
	}

	// Many not ready: the look names a few, the message counts the rest.
	failed := &Kubernetes{Look: func(context.Context, []string) (Workloads, error) {
		return Workloads{Checked: 3000, NotReady: []string{"Job shop/migrate: failed (BackoffLimitExceeded)"}, More: 2999}, nil
	}}
	if m := failed.Measure(context.Background()); m.Phase != PhaseFailed ||
		m.Message != "3000 of 3000 workloads not ready: Job shop/migrate: failed (BackoffLimitExceeded); and 2999 more" {
		t.Errorf("many: %+v", m)
	}
}

// A cluster that hangs: every look times out (an Error), and past the
// consecutive error limit the verdict is Inconclusive, not Failed.
func TestKubernetesCheckOfAHangingClusterIsInconclusive(t *testing.T) {
	looks := 0
	hang := func(ctx context.Context, _ []string) (Workloads, error) {
		looks++
		<-ctx.Done()
		return Workloads{}, ctx.Err()
	}
	zero := 0
	c, err := FromSpec(spec.HealthCheck{Name: "ready", Kubernetes: &spec.KubernetesCheck{}, Timeout: "10ms", ConsecutiveErrorLimit: &zero},
		Env{Workloads: hang})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), newFakeClock(), c)
	if err != nil || res.Verdict != Inconclusive || res.Reason != ReasonErrorLimit || looks != 1 {
		t.Fatalf("%+v %v (looks %d)", res, err, looks)
	}
	if m := res.Last(); m.Phase != PhaseError || m.Message != "timed out" {
		t.Errorf("measurement: %+v", m)
	}
}

// Without a way to look (not a helm or manifests component, or its
// cluster access broken), the check cannot be set up and says why; an
// error of the look is masked and bounded.
func TestKubernetesCheckNeedsWorkloads(t *testing.T) {
	_, err := FromSpec(spec.HealthCheck{Name: "ready", Kubernetes: &spec.KubernetesCheck{}}, Env{NoWorkloads: errors.New("kubeconfig: no such file")})
	if err == nil || err.Error() != "health check ready: kubeconfig: no such file" {
		t.Errorf("err: %v", err)
	}
	k := &Kubernetes{Mask: func(s string) string { return strings.ReplaceAll(s, "s3cret", Masked) },
		Look: func(context.Context, []string) (Workloads, error) {
			return Workloads{}, errors.New(strings.Repeat("x", 10000) + " token s3cret refused")
		}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	m := k.Measure(ctx)
	if m.Phase != PhaseError || strings.Contains(m.Message, "s3cret") || len(m.Message) > outputTail+len(Masked)+8 {
		t.Errorf("error measurement: %d bytes: %.80q…", len(m.Message), m.Message)
	}
}
