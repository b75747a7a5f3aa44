package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
)

// lookingRunner is the fake runner with a look at workloads.
type lookingRunner struct {
	*fake.Runner
	look func(ctx context.Context, c runner.Component, in runner.Inputs, objects []string) (runner.Workloads, error)
}

func (l lookingRunner) Workloads(ctx context.Context, c runner.Component, in runner.Inputs, objects []string) (runner.Workloads, error) {
	return l.look(ctx, c, in, objects)
}

// kubeChecked is a cluster whose kubeconfig (a secret) a helm component
// reaches its cluster with, checked by a kubernetes check.
const kubeChecked = `
apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: t
  envName: kube
  autoApprove: true
  kubeconfig: {valueFrom: cluster.kubeconfig}
  components:
    - name: cluster
      type: script
      script: {apply: "true"}
      outputs: [{name: kubeconfig, sensitive: true}]
    - name: app
      type: helm
      dependsOn: [cluster]
      chart: {repo: "https://charts.example.com", name: web, version: 1.0.0}
      health:
        - {name: ready, kubernetes: {objects: [Deployment/web]}, timeout: 50ms, consecutiveErrorLimit: 0}
`

// A kubernetes check looks through the component's runner with its
// inputs (the cluster access from an upstream secret); a workload not
// ready fails the apply with evidence masked (a careless runner quoting
// the kubeconfig), and a cluster that does not
// answer within the check's timeout makes it Inconclusive.
func TestKubernetesCheckLooksThroughTheRunner(t *testing.T) {
	const kubeconfig = "apiVersion: v1\nusers: [{user: {token: kube-t0ken-9}}]"
	h := newHarness(t)
	h.r.OutputsFor = func(name string, in runner.Inputs) runner.Outputs {
		if name == "cluster" {
			return runner.Outputs{"kubeconfig": {Value: kubeconfig, Sensitive: true}}
		}
		return nil
	}
	var hang atomic.Bool
	h.e.Runners[spec.TypeHelm] = lookingRunner{Runner: h.r, look: func(ctx context.Context, c runner.Component, in runner.Inputs, objects []string) (runner.Workloads, error) {
		if in[spec.InputKubeconfig] != kubeconfig || c.Def.Name != "app" || len(objects) != 1 || objects[0] != "Deployment/web" {
			t.Errorf("looked at %s %v with inputs %v", c.Def.Name, objects, in)
		}
		if hang.Load() {
			<-ctx.Done()
			return runner.Workloads{}, ctx.Err()
		}
		return runner.Workloads{Checked: 1, NotReady: []string{"Deployment kube/web: 0/1 available; cluster said " + kubeconfig}}, nil
	}}
	h.e.Verifier = health.Runner{Clock: &instantClock{}}
	ctx := context.Background()
	_, err := h.e.Apply(ctx, parse(t, kubeChecked), engine.Options{Actor: "tester"})
	var ve *engine.VerificationError
	if !asVerification(err, &ve) || ve.Reason() != engine.ReasonVerificationFailed {
		t.Fatalf("apply: %v", err)
	}
	const want = "verification Failed: health check app/ready: failed (1) > failureLimit (0): 1 of 1 workloads not ready: Deployment kube/web: 0/1 available; cluster said (sensitive value)"
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "kube-t0ken-9") {
		t.Errorf("error:\n%s\nwant\n%s", err, want)
	}
	raw, err := h.st.Setting(ctx, engine.HealthSetting+"t/kube")
	if err != nil || strings.Contains(raw, "kube-t0ken-9") || !strings.Contains(raw, "0/1 available") {
		t.Errorf("recorded health (%v): %s", err, raw)
	}

	hang.Store(true)
	rep, err := h.e.CheckHealth(ctx, parse(t, kubeChecked))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != health.Inconclusive || rep.Results[0].Last().Message != "timed out" {
		b, _ := json.Marshal(rep)
		t.Errorf("a cluster that hangs: %s", b)
	}
}
