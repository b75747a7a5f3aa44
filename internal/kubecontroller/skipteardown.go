package kubecontroller

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"knit.dev/knit/internal/store"
)

// A deleted Environment whose teardown keeps failing (most often because
// the controller lacks the rights to delete what its components made)
// must not hang on its finalizer for ever, nor be released by whoever
// may edit it: the controller tries MaxTeardownAttempts times, then stops
// and says so in Stalled. Then either the rights are fixed and
// RetryTeardownAnnotation set to a new value (the attempts start over),
// or an admin releases the object with SkipTeardownAnnotation: the
// finalizer goes, the environment's resources stay (knit teardown can
// remove them later), and knit's audit trail records who did it.
//
// Admin-only is the cluster's RBAC: the admission policy SkipTeardownPolicy
// admits the annotation only from the user it names, and only when that
// user may "skip-teardown" environments.knit.dev in the namespace (a verb
// RBAC grants like any other: cluster-admin holds it). The controller
// honours the annotation only while that policy is installed as shipped
// and covers the namespace, and was so before the object was created, so
// that every write of the annotation was judged.

// MaxTeardownAttempts is how many failed teardowns of a deleted
// Environment the controller runs before it waits for a person.
const MaxTeardownAttempts = 5

// RetryTeardownAnnotation, set to a value the status has not seen, starts
// the attempts of a teardown that gave up over again.
const RetryTeardownAnnotation = "knit.dev/retry-teardown"

// SkipTeardownAnnotation, set to the user name of an admin (see above),
// releases a deleted Environment without its teardown.
const SkipTeardownAnnotation = "knit.dev/skip-teardown"

// SkipTeardownPolicy names the ValidatingAdmissionPolicy and its binding.
const SkipTeardownPolicy = "knit-skip-teardown"

// ReasonTeardownFailed is Stalled's reason once the attempts are spent.
const ReasonTeardownFailed = "TeardownFailed"

// skipTeardownRule: the annotation is absent, unchanged, or set by the
// user it names, who may skip-teardown this Environment.
var skipTeardownRule = admissionRule{
	name: SkipTeardownPolicy,
	expression: `!has(object.metadata.annotations) || !('knit.dev/skip-teardown' in object.metadata.annotations) || ` +
		`(oldObject != null && has(oldObject.metadata.annotations) && 'knit.dev/skip-teardown' in oldObject.metadata.annotations && ` +
		`oldObject.metadata.annotations['knit.dev/skip-teardown'] == object.metadata.annotations['knit.dev/skip-teardown']) || ` +
		`(object.metadata.annotations['knit.dev/skip-teardown'] == request.userInfo.username && ` +
		`authorizer.group('knit.dev').resource('environments').namespace(object.metadata.namespace).name(object.metadata.name).check('skip-teardown').allowed())`,
	message: `'only a user who may skip-teardown environments.knit.dev here sets metadata.annotations["` + SkipTeardownAnnotation +
		`"], to their own user name, ' + request.userInfo.username`,
	resource: "environments",
	groups:   []schema.GroupVersion{KnitGroup, CloudKnitGroup},
	what:     "Environments",
	header: "# Generated from internal/kubecontroller (SkipTeardownPolicy; go test ./internal/kubecontroller\n" +
		"# -run TestAdmissionPolicyFiles -update): only a user whom RBAC grants the verb\n" +
		"# skip-teardown on environments.knit.dev may release a deleted Environment unfinished.\n",
}

// SkipTeardownPolicyYAML is the policy and binding as deploy/admission holds them.
func SkipTeardownPolicyYAML() ([]byte, error) { return skipTeardownRule.yaml() }

// skipTeardown releases obj without a teardown when an admin annotated it
// so (true), recording it in knit's audit trail; otherwise it says why
// the annotation is not honoured ("" when there is none).
func (r *reconciler) skipTeardown(ctx context.Context, obj envObject, env string) (bool, string, error) {
	e := obj.env()
	user := e.Annotations[SkipTeardownAnnotation]
	if user == "" {
		return false, "", nil
	}
	why, err := r.trusts(ctx, skipTeardownRule, e.Namespace, e.CreationTimestamp.Time)
	if err != nil || why != "" {
		return false, SkipTeardownAnnotation + " is not honoured: " + why, err
	}
	if err := r.knit.State().RecordAudit(ctx, store.AuditEvent{Env: env, Actor: "kubernetes-user:" + user, Action: "skip-teardown",
		Reason: fmt.Sprintf("%s %s/%s deleted with %s", r.gv.Group, e.Namespace, e.Name, SkipTeardownAnnotation),
		Detail: "the environment was not torn down: its resources are still there (knit teardown " + env + " removes them)"}); err != nil {
		return false, "", err
	}
	r.log.Info("released without teardown", "object", e.Namespace+"/"+e.Name, "env", env, "by", user)
	return true, "", r.release(ctx, obj)
}

// teardownSpent reports whether obj's teardown gave up, after starting
// the attempts over when RetryTeardownAnnotation asks it (st changes).
func teardownSpent(e *Environment, st *EnvironmentStatus) bool {
	if v := e.Annotations[RetryTeardownAnnotation]; v != "" && v != st.TeardownRetry {
		st.TeardownRetry, st.TeardownAttempts = v, 0
	}
	return st.TeardownAttempts >= MaxTeardownAttempts
}

// gaveUp records, once the attempts are spent, that the controller
// stopped (Stalled, with the last failure's cause) and asks no requeue: a
// person acts next. Later reconciles keep that message, adding why a
// skip annotation is not honoured.
func (r *reconciler) gaveUp(ctx context.Context, obj envObject, st EnvironmentStatus, skipWhy string) (ctrl.Result, error) {
	e := obj.env()
	c := meta.FindStatusCondition(st.Conditions, CondStalled)
	msg := ""
	switch {
	case c != nil && c.Reason == ReasonTeardownFailed:
		if skipWhy == "" || strings.Contains(c.Message, skipWhy) {
			return ctrl.Result{}, nil
		}
		msg = c.Message + "; " + skipWhy
	default:
		msg = fmt.Sprintf("the teardown of %s failed %d times and the controller stopped trying", st.Env, st.TeardownAttempts)
		if c != nil && c.Status == metav1.ConditionTrue && c.Message != "" {
			msg += " (last: " + c.Message + ")"
		}
		msg += fmt.Sprintf(": give the controller the rights it lacks (the chart's controller.rbac), then annotate %s with a new value to try again; "+
			"or an admin annotates %s with their user name to release the object and leave the resources", RetryTeardownAnnotation, SkipTeardownAnnotation)
		if skipWhy != "" {
			msg += "; " + skipWhy
		}
	}
	stalled(&st, e.Generation, ReasonTeardownFailed, msg)
	return ctrl.Result{}, r.saveStatus(ctx, obj, st)
}
