package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Ready's verdict on each kind from its status alone, every way a workload
// can fall short (the cluster tests cover the common ones end to end).
func TestReady(t *testing.T) {
	tests := []struct {
		name, obj string
		ready     bool
		why       string
	}{
		{"deployment available", `{kind: Deployment, metadata: {generation: 3}, spec: {replicas: 2},
			status: {observedGeneration: 3, replicas: 2, updatedReplicas: 2, availableReplicas: 2, conditions: [{type: Available, status: "True"}]}}`, true, ""},
		{"deployment rolling", `{kind: Deployment, metadata: {generation: 3}, spec: {replicas: 2},
			status: {observedGeneration: 3, replicas: 3, updatedReplicas: 1, availableReplicas: 2}}`, false, "1/2 updated"},
		{"deployment old replicas", `{kind: Deployment, metadata: {generation: 3}, spec: {replicas: 2},
			status: {observedGeneration: 3, replicas: 3, updatedReplicas: 2, availableReplicas: 2}}`, false, "1 old replicas pending termination"},
		{"deployment default replicas", `{kind: Deployment, metadata: {generation: 1},
			status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, conditions: [{type: Available, status: "False", reason: MinimumReplicasUnavailable}]}}`,
			false, "0/1 available (MinimumReplicasUnavailable)"},
		{"deployment without Available", `{kind: Deployment, metadata: {generation: 1}, spec: {replicas: 0}, status: {observedGeneration: 1}}`,
			false, "Available condition not True"},
		{"statefulset ready", `{kind: StatefulSet, metadata: {generation: 2}, spec: {replicas: 3},
			status: {observedGeneration: 2, updatedReplicas: 3, readyReplicas: 3}}`, true, ""},
		{"statefulset not ready", `{kind: StatefulSet, metadata: {generation: 2}, spec: {replicas: 3},
			status: {observedGeneration: 2, updatedReplicas: 3, readyReplicas: 1}}`, false, "1/3 ready"},
		{"daemonset rolling", `{kind: DaemonSet, metadata: {generation: 2},
			status: {observedGeneration: 2, desiredNumberScheduled: 4, updatedNumberScheduled: 2, numberAvailable: 4}}`, false, "2/4 updated"},
		{"daemonset unavailable", `{kind: DaemonSet, metadata: {generation: 2},
			status: {observedGeneration: 2, desiredNumberScheduled: 4, updatedNumberScheduled: 4, numberAvailable: 3}}`, false, "3/4 available"},
		{"daemonset ready", `{kind: DaemonSet, metadata: {generation: 2},
			status: {observedGeneration: 2, desiredNumberScheduled: 4, updatedNumberScheduled: 4, numberAvailable: 4}}`, true, ""},
		{"daemonset not observed", `{kind: DaemonSet, metadata: {generation: 5}, status: {observedGeneration: 4}}`,
			false, "generation 5 not yet observed by its controller (observed 4)"},
		{"job complete", `{kind: Job, status: {conditions: [{type: Complete, status: "True"}]}}`, true, ""},
		{"job running", `{kind: Job, status: {active: 2, succeeded: 1}}`, false, "not complete (2 active, 1 succeeded)"},
		{"job failed", `{kind: Job, status: {conditions: [{type: Failed, status: "True", reason: DeadlineExceeded}]}}`, false, "failed (DeadlineExceeded)"},
		{"a long reason is cut", `{kind: Job, status: {conditions: [{type: Failed, status: "True", reason: ` + string(make72()) + `}]}}`,
			false, "failed (" + string(make72()[:64]) + "…)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(tt.obj), &m); err != nil {
				t.Fatal(err)
			}
			ready, why := Ready(&unstructured.Unstructured{Object: m})
			if ready != tt.ready || why != tt.why {
				t.Errorf("Ready = %v, %q; want %v, %q", ready, why, tt.ready, tt.why)
			}
		})
	}
}

func make72() []byte {
	b := make([]byte, 72)
	for i := range b {
		b[i] = 'A' + byte(i%26)
	}
	return b
}
