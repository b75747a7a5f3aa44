package kubecontroller_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/kubecontroller"
	"knit.dev/knit/internal/kubetest"
)

// gatedEnv waits for approval of every plan, and requires an approver
// other than the change's author.
const gatedEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: gated}
spec:
  teamName: qa
  envName: gated
  approval: {requireOtherApprover: true}
  components:
    - {name: app, type: script, script: {apply: "echo applied > FILES/gated.txt; echo '{}'", destroy: "rm -f FILES/gated.txt"}}
`

// installApproverPolicy installs the admission policy the controller
// trusts (kubecontroller.ApproverPolicy), its binding limited to h's
// namespace (the test API server is shared), lets kubetest.Users create
// approvals there, and waits until the API server enforces the policy.
func (h *harness) installApproverPolicy() {
	h.t.Helper()
	ctx := context.Background()
	pol, bind := kubecontroller.ApproverPolicy()
	bind.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": h.ns}}}
	for _, o := range []client.Object{&pol, &bind} {
		if err := h.c.Create(ctx, o); err != nil {
			h.t.Fatal(err)
		}
		h.t.Cleanup(func() { h.c.Delete(context.Background(), o) })
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "approvers", Namespace: h.ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"knit.dev"}, Resources: []string{"environmentapprovals"}, Verbs: []string{"create", "get", "list", "update"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "approvers", Namespace: h.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "approvers"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: kubetest.UsersGroup}}}
	for _, o := range []client.Object{role, rb} {
		if err := h.c.Create(ctx, o); err != nil {
			h.t.Fatal(err)
		}
	}
	// In force once a forged approval is refused (dry runs: nothing
	// stays); and an approval created now is later than the policy by the
	// API server's clock (creation times are in seconds).
	alice := h.userClient("alice")
	waitFor(h.t, "the admission policy in force", func() bool {
		err := alice.Create(ctx, approval(h.ns, "probe", "bob", "x"), client.DryRunAll)
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err)
	})
	waitFor(h.t, "an approval newer than the policy", func() bool {
		a := approval(h.ns, "probe", "alice", "x")
		return alice.Create(ctx, a, client.DryRunAll) == nil &&
			a.CreationTimestamp.After(pol.CreationTimestamp.Time) && a.CreationTimestamp.After(bind.CreationTimestamp.Time)
	})
}

// userClient is a client acting as one of kubetest.Users.
func (h *harness) userClient(user string) client.Client {
	h.t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		h.t.Fatal(err)
	}
	if err := kubecontroller.AddToScheme(scheme); err != nil {
		h.t.Fatal(err)
	}
	c, err := client.New(h.cluster.As(h.t, user), client.Options{Scheme: scheme})
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

func approval(ns, name, approvedBy, checksum string) *kubecontroller.EnvironmentApproval {
	return &kubecontroller.EnvironmentApproval{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{kubecontroller.ApprovedByAnnotation: approvedBy}},
		Spec:       kubecontroller.ApprovalSpec{Environment: "gated", Checksum: checksum, Reason: "looked at it"},
	}
}

// approveAs creates an approval of checksum as user and waits until the
// controller has judged it; it returns its Approved condition.
func (h *harness) approveAs(user, name, checksum string) *metav1.Condition {
	h.t.Helper()
	c := h.userClient(user)
	if err := c.Create(context.Background(), approval(h.ns, name, user, checksum)); err != nil {
		h.t.Fatalf("%s creates approval %s: %v", user, name, err)
	}
	var got *metav1.Condition
	waitFor(h.t, "approval "+name+" judged", func() bool {
		var a kubecontroller.EnvironmentApproval
		if err := h.c.Get(context.Background(), key(h.ns, name), &a); err != nil {
			return false
		}
		got = meta.FindStatusCondition(a.Status.Conditions, kubecontroller.CondApproved)
		return got != nil
	})
	return got
}

// TestSelfApprovalDoesNotSatisfyRequireOtherApprover: under
// approval.requireOtherApprover the author of an Environment's change is
// unknown to knit, so the plan waits for approvals by two distinct users,
// each known from the request the API server authenticated (the admission
// policy refuses an approval naming another user than its creator). Two
// approvals by alice apply nothing; one by bob then carries the plan out,
// and knit's audit trail names bob and both approvers.
func TestSelfApprovalDoesNotSatisfyRequireOtherApprover(t *testing.T) {
	h := startWith(t, func(_ *harness, o *kubecontroller.Options) { o.PolicyGrace = time.Nanosecond })
	file := filepath.Join(h.files, "gated.txt")
	ctx := context.Background()
	h.apply(gatedEnv)
	e := h.waitEnv("gated", "AwaitingApproval=True", condIs(kubecontroller.CondAwaitingApproval, metav1.ConditionTrue))
	checksum := e.Status.Approval.Checksum

	// Before the admission policy, an annotation is only what its writer
	// says: an approval "by bob" counts for nothing.
	if err := h.c.Create(ctx, approval(h.ns, "early", "bob", checksum)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the early approval refused", func() bool {
		var a kubecontroller.EnvironmentApproval
		if err := h.c.Get(ctx, key(h.ns, "early"), &a); err != nil {
			return false
		}
		c := meta.FindStatusCondition(a.Status.Conditions, kubecontroller.CondApproved)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == kubecontroller.ReasonApproverUnknown &&
			strings.Contains(c.Message, "not installed")
	})

	h.installApproverPolicy()
	// Forged: alice may not create an approval in bob's name.
	if err := h.userClient("alice").Create(ctx, approval(h.ns, "forged", "bob", checksum)); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("alice created an approval in bob's name: %v", err)
	}
	for _, name := range []string{"alice-1", "alice-2"} {
		c := h.approveAs("alice", name, checksum)
		if c.Status != metav1.ConditionUnknown || c.Reason != kubecontroller.ReasonAwaitingSecondApprover || !strings.Contains(c.Message, "approved by alice;") {
			t.Errorf("%s: Approved %s %s: %s", name, c.Status, c.Reason, c.Message)
		}
		if _, ok := readFile(t, file); ok {
			t.Fatalf("applied on %s alone", name)
		}
	}
	h.waitEnv("gated", "still awaiting", condIs(kubecontroller.CondAwaitingApproval, metav1.ConditionTrue))

	c := h.approveAs("bob", "bob-1", checksum)
	if c.Status != metav1.ConditionTrue {
		t.Fatalf("bob's approval: %s %s: %s", c.Status, c.Reason, c.Message)
	}
	h.waitEnv("gated", "Ready=True", condIs(kubecontroller.CondReady, metav1.ConditionTrue))
	if got, _ := readFile(t, file); got != "applied\n" {
		t.Errorf("gated.txt = %q", got)
	}
	audit, err := knit.NewRecords(h.k).Audit(ctx, knit.AuditFilter{Env: "qa/gated"})
	if err != nil {
		t.Fatal(err)
	}
	var approved bool
	for _, a := range audit.Items {
		if a.Action == "approve" {
			approved = strings.HasPrefix(a.Actor, "kubernetes:bob ") && strings.Contains(a.Reason, "approved by alice and bob")
			if !approved {
				t.Errorf("approve entry: %+v", a)
			}
		}
	}
	if !approved {
		t.Errorf("no approve entry: %+v", audit.Items)
	}
}
