package kubecontroller

import (
	"context"
	"fmt"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// approverExpression is the policy's rule, compared when the controller
// checks the installed policy.
const approverExpression = `has(object.metadata.annotations) && 'knit.dev/approved-by' in object.metadata.annotations && object.metadata.annotations['knit.dev/approved-by'] == request.userInfo.username`

// PolicyGrace is how long after the policy and binding were created an
// approval's annotation is trusted (an API server loads a new policy
// within seconds).
const PolicyGrace = 10 * time.Second

// ApproverPolicy returns the ValidatingAdmissionPolicy and binding that
// make ApprovedByAnnotation the approving user (deploy/admission).
func ApproverPolicy() (admissionv1.ValidatingAdmissionPolicy, admissionv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionv1.Fail
	pol := admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: ApproversPolicy},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{KnitGroup.Group}, APIVersions: []string{"*"}, Resources: []string{"environmentapprovals"}},
				}}}},
			Validations: []admissionv1.Validation{{
				Expression: approverExpression,
				MessageExpression: `'an EnvironmentApproval names who approves: set metadata.annotations["` + ApprovedByAnnotation +
					`"] to your own user name, ' + request.userInfo.username`,
				Reason: ptr(metav1.StatusReasonForbidden),
			}},
		},
	}
	bind := admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: ApproversPolicy},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: ApproversPolicy,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	return pol, bind
}

// ApproverPolicyYAML is ApproverPolicy as the file deploy/admission holds.
func ApproverPolicyYAML() ([]byte, error) {
	pol, bind := ApproverPolicy()
	out := "# Generated from internal/kubecontroller (ApproverPolicy; go test ./internal/kubecontroller\n" +
		"# -run TestAdmissionPolicyFiles -update): who approves is the user the API server\n" +
		"# authenticated, not a name the approval gives itself.\n"
	for i, o := range []any{pol, bind} {
		b, err := fileYAML(o)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out += "---\n"
		}
		out += string(b)
	}
	return []byte(out), nil
}

// approverOf returns the user who created approval a, as the policy
// recorded them, or "" and why it cannot be known.
func (r *reconciler) approverOf(ctx context.Context, a *EnvironmentApproval) (string, string, error) {
	user := a.Annotations[ApprovedByAnnotation]
	if user == "" {
		return "", "it has no annotation " + ApprovedByAnnotation, nil
	}
	var pol admissionv1.ValidatingAdmissionPolicy
	var bind admissionv1.ValidatingAdmissionPolicyBinding
	for _, o := range []client.Object{&pol, &bind} {
		err := r.reader.Get(ctx, client.ObjectKey{Name: ApproversPolicy}, o)
		switch {
		case apierrors.IsNotFound(err):
			return "", fmt.Sprintf("%s %s is not installed (kubectl apply -f deploy/admission)", kindOf(o), ApproversPolicy), nil
		case apierrors.IsForbidden(err):
			return "", fmt.Sprintf("the controller may not read %s %s (its ClusterRole needs get on it, as the chart grants)", kindOf(o), ApproversPolicy), nil
		case err != nil:
			return "", "", fmt.Errorf("read the admission policy %s: %w", ApproversPolicy, err)
		}
	}
	if why := policyEnforces(&pol); why != "" {
		return "", "ValidatingAdmissionPolicy " + ApproversPolicy + " " + why, nil
	}
	if why, err := r.bindingCovers(ctx, &bind, a.Namespace); err != nil || why != "" {
		return "", "ValidatingAdmissionPolicyBinding " + ApproversPolicy + " " + why, err
	}
	since := pol.CreationTimestamp.Time
	if bind.CreationTimestamp.After(since) {
		since = bind.CreationTimestamp.Time
	}
	if !a.CreationTimestamp.After(since.Add(r.policyGrace)) {
		return "", fmt.Sprintf("it was created before the admission policy %s was in force (%s + %s)", ApproversPolicy, since.UTC().Format(time.RFC3339), r.policyGrace), nil
	}
	return user, "", nil
}

// policyEnforces says how pol fails to hold every create and update of an
// EnvironmentApproval to approverExpression ("": it does).
func policyEnforces(pol *admissionv1.ValidatingAdmissionPolicy) string {
	s := pol.Spec
	if pol.DeletionTimestamp != nil {
		return "is being deleted"
	}
	if s.FailurePolicy != nil && *s.FailurePolicy != admissionv1.Fail {
		return "does not fail closed (failurePolicy must be Fail)"
	}
	if len(s.MatchConditions) > 0 || s.ParamKind != nil {
		return "has matchConditions or a paramKind: it may not judge every approval"
	}
	if !slices.ContainsFunc(s.Validations, func(v admissionv1.Validation) bool { return v.Expression == approverExpression }) {
		return "is not the one deploy/admission ships (its validation differs)"
	}
	m := s.MatchConstraints
	if m == nil || len(m.ExcludeResourceRules) > 0 || !emptySelector(m.ObjectSelector) || !emptySelector(m.NamespaceSelector) {
		return "does not match every EnvironmentApproval"
	}
	for _, rule := range m.ResourceRules {
		if has(rule.APIGroups, KnitGroup.Group) && has(rule.Resources, "environmentapprovals") && has(rule.APIVersions, KnitGroup.Version) &&
			has(rule.Operations, admissionv1.Create) && has(rule.Operations, admissionv1.Update) {
			return ""
		}
	}
	return "does not match the creates and updates of EnvironmentApprovals"
}

// bindingCovers says how bind fails to deny, with the policy, every
// approval of namespace ns ("": it does).
func (r *reconciler) bindingCovers(ctx context.Context, bind *admissionv1.ValidatingAdmissionPolicyBinding, ns string) (string, error) {
	s := bind.Spec
	switch {
	case bind.DeletionTimestamp != nil:
		return "is being deleted", nil
	case s.PolicyName != ApproversPolicy || s.ParamRef != nil:
		return "does not bind the policy " + ApproversPolicy + " alone", nil
	case !slices.Contains(s.ValidationActions, admissionv1.Deny):
		return "does not deny (validationActions must hold Deny)", nil
	}
	m := s.MatchResources
	if m == nil {
		return "", nil
	}
	if len(m.ExcludeResourceRules) > 0 || len(m.ResourceRules) > 0 || !emptySelector(m.ObjectSelector) {
		return "narrows what it matches beyond namespaces", nil
	}
	if emptySelector(m.NamespaceSelector) {
		return "", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(m.NamespaceSelector)
	if err != nil {
		return "has a namespaceSelector that does not parse", nil
	}
	var n corev1.Namespace
	if err := r.reader.Get(ctx, client.ObjectKey{Name: ns}, &n); apierrors.IsForbidden(err) {
		return "covers namespaces by label, and the controller may not read namespace " + ns, nil
	} else if err != nil {
		return "", fmt.Errorf("read namespace %s: %w", ns, err)
	}
	if !sel.Matches(labels.Set(n.Labels)) {
		return "does not cover namespace " + ns, nil
	}
	return "", nil
}

func kindOf(o client.Object) string {
	if _, ok := o.(*admissionv1.ValidatingAdmissionPolicy); ok {
		return "ValidatingAdmissionPolicy"
	}
	return "ValidatingAdmissionPolicyBinding"
}

func emptySelector(s *metav1.LabelSelector) bool {
	return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
}

// has reports whether list holds want or "*".
func has[T ~string](list []T, want T) bool {
	return slices.Contains(list, want) || slices.Contains(list, "*")
}
