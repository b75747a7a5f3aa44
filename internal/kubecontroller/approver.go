package kubecontroller

import (
	"context"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Who approved. Kubernetes records no creator on an object:
// metadata.managedFields names a field manager, which the client chooses
// (kubectl sends "kubectl-client-side-apply" whoever runs it), so it says
// nothing about the user. What the API server does know is the request's
// authenticated user, and a ValidatingAdmissionPolicy (GA since
// Kubernetes 1.30, no webhook server) can compare it with the object: the
// policy ApproversPolicy admits an EnvironmentApproval only when its
// annotation ApprovedByAnnotation is the user creating or changing it. The
// controller trusts that annotation only while the policy and its binding
// are installed as deploy/admission ships them, covering the approval's
// namespace, and were so before the approval was created (plus
// PolicyGrace, the time an API server takes to load a new policy).
// Otherwise an approval's author is unknown.
//
// The author of an Environment's change is never known this way (a
// policy cannot record a user on the object, and a mutating admission
// policy is not GA): where approval.requireOtherApprover holds, an
// approval therefore takes two EnvironmentApprovals by two distinct users,
// so that at least one is not the change's author; an approval whose
// author is unknown counts for nothing there.

// ApprovedByAnnotation is the user who created or last changed an
// EnvironmentApproval, as the API server authenticated them (admitted by
// ApproversPolicy).
const ApprovedByAnnotation = "knit.dev/approved-by"

// ApproversPolicy names the ValidatingAdmissionPolicy and its binding.
const ApproversPolicy = "knit-approvers"

// PolicyGrace is how long after the policy and binding were created an
// approval's annotation is trusted (an API server loads a new policy
// within seconds).
const PolicyGrace = 10 * time.Second

// approverRule makes ApprovedByAnnotation the user who creates or
// changes an EnvironmentApproval.
var approverRule = admissionRule{
	name:       ApproversPolicy,
	expression: `has(object.metadata.annotations) && 'knit.dev/approved-by' in object.metadata.annotations && object.metadata.annotations['knit.dev/approved-by'] == request.userInfo.username`,
	message: `'an EnvironmentApproval names who approves: set metadata.annotations["` + ApprovedByAnnotation +
		`"] to your own user name, ' + request.userInfo.username`,
	resource: "environmentapprovals",
	groups:   []schema.GroupVersion{KnitGroup},
	what:     "EnvironmentApprovals",
	header: "# Generated from internal/kubecontroller (ApproverPolicy; go test ./internal/kubecontroller\n" +
		"# -run TestAdmissionPolicyFiles -update): who approves is the user the API server\n" +
		"# authenticated, not a name the approval gives itself.\n",
}

// ApproverPolicy returns the ValidatingAdmissionPolicy and binding that
// make ApprovedByAnnotation the approving user (deploy/admission).
func ApproverPolicy() (admissionv1.ValidatingAdmissionPolicy, admissionv1.ValidatingAdmissionPolicyBinding) {
	return approverRule.objects()
}

// ApproverPolicyYAML is ApproverPolicy as the file deploy/admission holds.
func ApproverPolicyYAML() ([]byte, error) { return approverRule.yaml() }

// approverOf returns the user who created approval a, as the policy
// recorded them, or "" and why it cannot be known.
func (r *reconciler) approverOf(ctx context.Context, a *EnvironmentApproval) (string, string, error) {
	user := a.Annotations[ApprovedByAnnotation]
	if user == "" {
		return "", "it has no annotation " + ApprovedByAnnotation, nil
	}
	if why, err := r.trusts(ctx, approverRule, a.Namespace, a.CreationTimestamp.Time); err != nil || why != "" {
		return "", why, err
	}
	return user, "", nil
}
