package kubecontroller

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPolicyEnforces: the controller trusts knit.dev/approved-by only
// under the policy as shipped; each way an admin's edit could let an
// approval through unjudged makes it untrusted, and says why.
func TestPolicyEnforces(t *testing.T) {
	ignore := admissionv1.Ignore
	for name, tc := range map[string]struct {
		edit func(*admissionv1.ValidatingAdmissionPolicySpec)
		want string
	}{
		"as shipped": {func(*admissionv1.ValidatingAdmissionPolicySpec) {}, ""},
		"fails open": {func(s *admissionv1.ValidatingAdmissionPolicySpec) { s.FailurePolicy = &ignore }, "failurePolicy must be Fail"},
		"match condition": {func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConditions = []admissionv1.MatchCondition{{Name: "x", Expression: "false"}}
		}, "matchConditions"},
		"another rule": {func(s *admissionv1.ValidatingAdmissionPolicySpec) { s.Validations[0].Expression = "true" }, "validation differs"},
		"excludes": {func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ExcludeResourceRules = s.MatchConstraints.ResourceRules
		}, "match all"},
		"creates only": {func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules[0].Operations = []admissionv1.OperationType{admissionv1.Create}
		}, "creates and updates"},
		"some namespaces": {func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, "match all"},
	} {
		for _, rule := range []admissionRule{approverRule, skipTeardownRule} {
			pol, _ := rule.objects()
			tc.edit(&pol.Spec)
			if got := rule.enforcedBy(&pol); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("%s, %s: %q, want %q", rule.name, name, got, tc.want)
			}
		}
	}
}

// TestBindingCovers: a binding that only warns or audits, binds another
// policy, or narrows what it matches beyond namespaces is not trusted.
func TestBindingCovers(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*admissionv1.ValidatingAdmissionPolicyBindingSpec)
		want string
	}{
		"as shipped": {func(*admissionv1.ValidatingAdmissionPolicyBindingSpec) {}, ""},
		"warns": {func(s *admissionv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
		}, "Deny"},
		"another policy": {func(s *admissionv1.ValidatingAdmissionPolicyBindingSpec) { s.PolicyName = "other" }, "alone"},
		"some objects": {func(s *admissionv1.ValidatingAdmissionPolicyBindingSpec) {
			s.MatchResources = &admissionv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}
		}, "beyond namespaces"},
	} {
		for _, rule := range []admissionRule{approverRule, skipTeardownRule} {
			_, bind := rule.objects()
			tc.edit(&bind.Spec)
			got, err := (&reconciler{}).bindingCovers(context.Background(), rule, &bind, "ns")
			if err != nil || (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("%s, %s: %q (%v), want %q", rule.name, name, got, err, tc.want)
			}
		}
	}
}
