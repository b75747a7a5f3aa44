package kubecontroller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reasons of an EnvironmentApproval's Approved condition under
// approval.requireOtherApprover.
const (
	// ReasonApproverUnknown (False): who created the approval cannot be
	// known (see approverOf), so it counts for nothing.
	ReasonApproverUnknown = "ApproverUnknown"
	// ReasonAwaitingSecondApprover (Unknown): counted, and waiting for an
	// approval of the same plan by another user.
	ReasonAwaitingSecondApprover = "AwaitingSecondApprover"
)

// byTwo decides the open approvals (oldest first) of an environment whose
// spec says approval.requireOtherApprover. The author of an Environment
// object's change cannot be known (see approver.go), so the waiting plan
// is carried out once approvals of it by two distinct users, each known
// through the admission policy, exist: one of them is not the author. An
// approval whose user is unknown is refused (ApproverUnknown); one naming
// another plan, or none waiting, is refused by the library as anywhere.
func (r *reconciler) byTwo(ctx context.Context, obj envObject, envID string, open []*EnvironmentApproval) (ctrl.Result, error) {
	e := obj.env()
	waiting := ""
	if e.Status.Approval != nil {
		waiting = e.Status.Approval.Checksum
	}
	var users []string
	var counted []*EnvironmentApproval
	for _, a := range open {
		if !sameChecksum(waiting, a.Spec.Checksum) {
			return r.decide(ctx, obj, envID, a, r.approvalActor(a, ""), reasonOf(a), nil)
		}
		user, why, err := r.approverOf(ctx, a)
		if err != nil {
			return ctrl.Result{}, err
		}
		if user == "" {
			msg := fmt.Sprintf("%s requires another approver than the author of the change, and who created this approval cannot be known: %s. Create it again, once the admission policy %s is installed (kubectl apply -f deploy/admission), with metadata.annotations %s: YOUR-USER-NAME",
				envID, why, ApproversPolicy, ApprovedByAnnotation)
			if err := r.approvalStatus(ctx, a, false, ReasonApproverUnknown, msg, ""); err != nil {
				return ctrl.Result{}, err
			}
			continue
		}
		if !contains(users, user) {
			users = append(users, user)
		}
		counted = append(counted, a)
	}
	if len(users) < 2 {
		for _, a := range counted {
			msg := fmt.Sprintf("approved by %s; %s requires another approver than the author of the change, whom knit cannot know for an Environment object: an EnvironmentApproval of plan %s by a second user carries it out",
				strings.Join(users, ", "), envID, waiting)
			if err := r.approvalCondition(ctx, a, metav1.ConditionUnknown, ReasonAwaitingSecondApprover, msg, ""); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{RequeueAfter: r.interval}, nil
	}
	last := counted[len(counted)-1]
	reason := fmt.Sprintf("approved by %s: %s", strings.Join(users, " and "), reasonOf(last))
	return r.decide(ctx, obj, envID, last, r.approvalActor(last, users[len(users)-1]), reason, counted[:len(counted)-1])
}

// sameChecksum reports whether named (12 characters or more) names the
// waiting checksum.
func sameChecksum(waiting, named string) bool {
	return waiting != "" && len(named) >= 12 && strings.HasPrefix(waiting, named)
}

// reasonOf is why approval a was given, for the audit trail.
func reasonOf(a *EnvironmentApproval) string {
	if a.Spec.Reason != "" {
		return a.Spec.Reason
	}
	return "EnvironmentApproval " + a.Namespace + "/" + a.Name
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
