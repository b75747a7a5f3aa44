package kubecontroller_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"knit.dev/knit/internal/kubecontroller"
)

// approve creates an EnvironmentApproval of Environment env naming
// checksum and waits until the controller decided it.
func (h *harness) approve(name, env, checksum string) *kubecontroller.EnvironmentApproval {
	h.t.Helper()
	h.apply(`apiVersion: knit.dev/v1
kind: EnvironmentApproval
metadata: {name: ` + name + `}
spec: {environment: ` + env + `, checksum: "` + checksum + `", reason: "looked at it"}
`)
	end := time.Now().Add(deadline)
	var a kubecontroller.EnvironmentApproval
	for {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &a)
		if err == nil && meta.FindStatusCondition(a.Status.Conditions, kubecontroller.CondApproved) != nil {
			return &a
		}
		if time.Now().After(end) {
			h.t.Fatalf("EnvironmentApproval %s was not decided (%v)", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestApprovalOfTheExactPlan: an Environment without autoApprove stops at
// AwaitingApproval with the plan's checksum in its status and applies
// nothing; an EnvironmentApproval naming another checksum is refused
// (Approved=False, ChecksumMismatch) and still nothing is applied; the one
// naming the waiting checksum applies it (Ready=True). Deleting the object
// then waits for an approval of the teardown (the finalizer stays, the
// file too) and the approval of its checksum destroys it and lets the
// object go.
func TestApprovalOfTheExactPlan(t *testing.T) {
	h := start(t)
	h.moduleConfigMap()
	h.apply(shop("false"))
	file := filepath.Join(h.files, "shop.txt")

	e := h.waitEnv("shop", "AwaitingApproval=True", condIs(kubecontroller.CondAwaitingApproval, metav1.ConditionTrue))
	if e.Status.Approval == nil || e.Status.Approval.Checksum == "" || e.Status.Approval.Teardown {
		t.Fatalf("no checksum to approve:\n%s", describe(e))
	}
	checksum := e.Status.Approval.Checksum
	if s, reason := cond(e, kubecontroller.CondReady); s != metav1.ConditionFalse || reason != "AwaitingApproval" {
		t.Errorf("Ready = %s %s while awaiting approval", s, reason)
	}
	if c := meta.FindStatusCondition(e.Status.Conditions, kubecontroller.CondAwaitingApproval); !strings.Contains(c.Message, checksum) {
		t.Errorf("AwaitingApproval message does not name the checksum: %q", c.Message)
	}
	if _, ok := readFile(t, file); ok {
		t.Fatal("applied before any approval")
	}

	wrong := strings.Repeat("0", len(checksum))
	a := h.approve("wrong", "shop", wrong)
	c := meta.FindStatusCondition(a.Status.Conditions, kubecontroller.CondApproved)
	if c.Status != metav1.ConditionFalse || c.Reason != kubecontroller.ReasonChecksumMismatch ||
		!strings.Contains(c.Message, wrong) || !strings.Contains(c.Message, checksum) {
		t.Errorf("the wrong checksum: %s %s %q", c.Status, c.Reason, c.Message)
	}
	if _, ok := readFile(t, file); ok {
		t.Fatal("an approval of another plan applied it")
	}
	e = h.waitEnv("shop", "still awaiting", condIs(kubecontroller.CondAwaitingApproval, metav1.ConditionTrue))
	if e.Status.Approval == nil || e.Status.Approval.Checksum != checksum {
		t.Errorf("the waiting plan changed:\n%s", describe(e))
	}

	a = h.approve("right", "shop", checksum)
	c = meta.FindStatusCondition(a.Status.Conditions, kubecontroller.CondApproved)
	if c.Status != metav1.ConditionTrue || a.Status.Run == "" {
		t.Fatalf("the right checksum: %s %s %q", c.Status, c.Reason, c.Message)
	}
	// The script's plan could not be shown before file's output existed
	// (the engine's rule): it waits for an approval of its own, by the
	// checksum of the new change set.
	e = h.waitEnv("shop", "note's own approval", func(e *kubecontroller.Environment) bool {
		return e.Status.Approval != nil && e.Status.Approval.Checksum != checksum
	})
	if got := e.Status.Approval.Components; len(got) != 1 || got[0] != "note" {
		t.Errorf("waiting: %v", got)
	}
	h.approve("note", "shop", e.Status.Approval.Checksum)
	h.waitEnv("shop", "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	if got, _ := readFile(t, file); got != "hello from a custom resource" {
		t.Fatalf("shop.txt = %q after the approval", got)
	}

	// Deleting it: the teardown waits for its own approval.
	if err := h.c.Delete(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	e = h.waitEnv("shop", "a teardown awaiting approval", func(e *kubecontroller.Environment) bool {
		return e.Status.Approval != nil && e.Status.Approval.Teardown
	})
	if _, ok := readFile(t, file); !ok || len(e.Finalizers) == 0 {
		t.Fatalf("destroyed without approval (finalizers %v)", e.Finalizers)
	}
	h.approve("teardown", "shop", e.Status.Approval.Checksum)
	h.waitGone("shop")
	if _, ok := readFile(t, file); ok {
		t.Error("shop.txt survived the approved teardown")
	}
}
