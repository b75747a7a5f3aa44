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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// admissionRule is a ValidatingAdmissionPolicy the controller ships
// (deploy/admission, and the chart) and relies on only while it is
// installed exactly so: a name for the policy and its binding, one
// validation, and the resource whose creates and updates it must judge.
type admissionRule struct {
	name       string
	expression string
	message    string // a CEL messageExpression
	resource   string
	groups     []schema.GroupVersion
	what       string // the resource, for people
	header     string // the generated file's first lines
}

// objects returns the policy and binding of the rule.
func (a admissionRule) objects() (admissionv1.ValidatingAdmissionPolicy, admissionv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionv1.Fail
	var rules []admissionv1.NamedRuleWithOperations
	for _, gv := range a.groups {
		rules = append(rules, admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
			Rule:       admissionv1.Rule{APIGroups: []string{gv.Group}, APIVersions: []string{"*"}, Resources: []string{a.resource}},
		}})
	}
	pol := admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: a.name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: rules},
			Validations: []admissionv1.Validation{{
				Expression:        a.expression,
				MessageExpression: a.message,
				Reason:            ptr(metav1.StatusReasonForbidden),
			}},
		},
	}
	bind := admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: a.name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: a.name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	return pol, bind
}

// yaml is the rule as the file deploy/admission holds.
func (a admissionRule) yaml() ([]byte, error) {
	pol, bind := a.objects()
	out := a.header
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

// trusts says why the rule cannot vouch for an object of namespace ns
// whose judged field was set at set ("": it can): the policy and its
// binding must be installed as shipped, cover ns, and have been in force
// (plus the controller's grace) before set.
func (r *reconciler) trusts(ctx context.Context, a admissionRule, ns string, set time.Time) (string, error) {
	var pol admissionv1.ValidatingAdmissionPolicy
	var bind admissionv1.ValidatingAdmissionPolicyBinding
	for _, o := range []client.Object{&pol, &bind} {
		err := r.reader.Get(ctx, client.ObjectKey{Name: a.name}, o)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("%s %s is not installed (kubectl apply -f deploy/admission)", kindOf(o), a.name), nil
		case apierrors.IsForbidden(err):
			return fmt.Sprintf("the controller may not read %s %s (its ClusterRole needs get on it, as the chart grants)", kindOf(o), a.name), nil
		case err != nil:
			return "", fmt.Errorf("read the admission policy %s: %w", a.name, err)
		}
	}
	if why := a.enforcedBy(&pol); why != "" {
		return "ValidatingAdmissionPolicy " + a.name + " " + why, nil
	}
	if why, err := r.bindingCovers(ctx, a, &bind, ns); err != nil || why != "" {
		return "ValidatingAdmissionPolicyBinding " + a.name + " " + why, err
	}
	since := pol.CreationTimestamp.Time
	if bind.CreationTimestamp.After(since) {
		since = bind.CreationTimestamp.Time
	}
	if !set.After(since.Add(r.policyGrace)) {
		return fmt.Sprintf("it was set before the admission policy %s was in force (%s + %s)", a.name, since.UTC().Format(time.RFC3339), r.policyGrace), nil
	}
	return "", nil
}

// enforcedBy says how pol fails to hold every create and update of the
// rule's resource to its expression ("": it does).
func (a admissionRule) enforcedBy(pol *admissionv1.ValidatingAdmissionPolicy) string {
	s := pol.Spec
	if pol.DeletionTimestamp != nil {
		return "is being deleted"
	}
	if s.FailurePolicy != nil && *s.FailurePolicy != admissionv1.Fail {
		return "does not fail closed (failurePolicy must be Fail)"
	}
	if len(s.MatchConditions) > 0 || s.ParamKind != nil {
		return "has matchConditions or a paramKind: it may not judge every object"
	}
	if !slices.ContainsFunc(s.Validations, func(v admissionv1.Validation) bool { return v.Expression == a.expression }) {
		return "is not the one deploy/admission ships (its validation differs)"
	}
	m := s.MatchConstraints
	if m == nil || len(m.ExcludeResourceRules) > 0 || !emptySelector(m.ObjectSelector) || !emptySelector(m.NamespaceSelector) {
		return "does not match all " + a.what
	}
	for _, gv := range a.groups {
		if !slices.ContainsFunc(m.ResourceRules, func(rule admissionv1.NamedRuleWithOperations) bool {
			return has(rule.APIGroups, gv.Group) && has(rule.Resources, a.resource) && has(rule.APIVersions, gv.Version) &&
				has(rule.Operations, admissionv1.Create) && has(rule.Operations, admissionv1.Update)
		}) {
			return "does not match the creates and updates of " + a.what + " of " + gv.Group
		}
	}
	return ""
}

// bindingCovers says how bind fails to deny, with the rule's policy, every
// object of namespace ns ("": it does).
func (r *reconciler) bindingCovers(ctx context.Context, a admissionRule, bind *admissionv1.ValidatingAdmissionPolicyBinding, ns string) (string, error) {
	s := bind.Spec
	switch {
	case bind.DeletionTimestamp != nil:
		return "is being deleted", nil
	case s.PolicyName != a.name || s.ParamRef != nil:
		return "does not bind the policy " + a.name + " alone", nil
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
