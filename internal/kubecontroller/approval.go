package kubecontroller

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

// approvals carries out the first EnvironmentApproval of the Environment
// not yet decided: the waiting change set is approved through the library
// (the knit.Decide action, as the API and the CLI approve) when the approval
// names its checksum, and the apply that follows runs here; an approval
// naming another checksum, or none waiting, is refused and says so in its
// status. Each approval is decided once, for its generation.
func (r *reconciler) approvals(ctx context.Context, obj envObject, envID string) (ctrl.Result, error) {
	e := obj.env()
	var list EnvironmentApprovalList
	if err := r.client.List(ctx, &list, client.InNamespace(e.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i].CreationTimestamp, list.Items[j].CreationTimestamp
		return a.Before(&b) || (a.Equal(&b) && list.Items[i].Name < list.Items[j].Name)
	})
	var open []*EnvironmentApproval
	for i := range list.Items {
		if a := &list.Items[i]; r.names(a, e) && !decided(a) {
			open = append(open, a)
		}
	}
	if len(open) == 0 {
		return ctrl.Result{RequeueAfter: r.interval}, nil
	}
	// The rule is the applied spec's, as the library judges a decision
	// (which refuses one when that spec does not read).
	if env, _, err := r.knit.AppliedSpec(ctx, envID); err == nil && env.Spec.Approval != nil && env.Spec.Approval.RequireOtherApprover {
		return r.byTwo(ctx, obj, envID, open)
	}
	a := open[0]
	user, _, err := r.approverOf(ctx, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.decide(ctx, obj, envID, a, r.approvalActor(a, user), reasonOf(a), nil)
}

// names reports whether approval a is about Environment e of r's group.
func (r *reconciler) names(a *EnvironmentApproval, e *Environment) bool {
	gv := a.Spec.APIVersion
	if gv == "" {
		gv = KnitGroup.String()
	}
	return a.Spec.Environment == e.Name && gv == r.gv.String()
}

// decided reports whether a's current generation was decided already
// (Approved True or False; Unknown waits for a second approver).
func decided(a *EnvironmentApproval) bool {
	c := meta.FindStatusCondition(a.Status.Conditions, CondApproved)
	return c != nil && c.ObservedGeneration == a.Generation && c.Status != metav1.ConditionUnknown
}

// approvalActor is who approval a is in knit's audit trail: its user
// when known (approverOf), else the object.
func (r *reconciler) approvalActor(a *EnvironmentApproval, user string) string {
	if user != "" {
		return fmt.Sprintf("kubernetes:%s (%s/environmentapproval/%s)", user, a.Namespace, a.Name)
	}
	return fmt.Sprintf("kubernetes:%s/environmentapproval/%s", a.Namespace, a.Name)
}

// decide carries out approval a as actor, or refuses it; the approvals
// of others that a completes (byTwo) are marked as carried out with it.
func (r *reconciler) decide(ctx context.Context, obj envObject, envID string, a *EnvironmentApproval, actor, reason string, others []*EnvironmentApproval) (ctrl.Result, error) {
	e := obj.env()
	st := *deepCopy(&e.Status)
	teardown := st.Approval != nil && st.Approval.Teardown
	run := &inPlace{k: r.knit, ctx: ctx}
	d, err := knit.NewDecide(r.knit, knit.DecideRequest{EnvRef: envID, Approve: true,
		ChangeChecksum: a.Spec.Checksum, Actor: actor, Reason: reason, Source: source}, run).Run(ctx)
	r.log.Info("approval", "object", e.Namespace+"/"+e.Name, "approval", a.Name, "run", d.RunID, "error", err)
	if run.res == nil {
		// Refused before anything ran: say why on the approval; the
		// Environment still waits for the right one.
		why, msg := ReasonNoPlanWaiting, "refused"
		if err != nil {
			msg = err.Error()
		}
		if errors.Is(err, knit.ErrChecksumMismatch) {
			why = ReasonChecksumMismatch
			if st.Approval != nil {
				msg = fmt.Sprintf("names plan %s, but the plan waiting for %s is %s: nothing was applied", a.Spec.Checksum, e.Name, st.Approval.Checksum)
			}
		} else if errors.Is(err, knit.ErrChecksumRequired) {
			why = ReasonChecksumMismatch
		}
		return ctrl.Result{RequeueAfter: r.interval}, r.approvalStatus(ctx, a, false, why, msg, "")
	}
	for _, x := range append(others, a) {
		if err := r.approvalStatus(ctx, x, true, ReasonApproved, fmt.Sprintf("plan %s approved: run %s carried it out (%s)", a.Spec.Checksum, d.RunID, run.res.Status), d.RunID); err != nil {
			return ctrl.Result{}, err
		}
	}
	if teardown && e.DeletionTimestamp != nil {
		return r.afterTeardown(ctx, obj, run.res, run.err, "")
	}
	fromResult(&st, e.Generation, run.res, run.err)
	r.rollBack(ctx, e, run.res, &st)
	return ctrl.Result{RequeueAfter: r.interval}, r.saveStatus(ctx, obj, st)
}

// approvalStatus records the decision on a.
func (r *reconciler) approvalStatus(ctx context.Context, a *EnvironmentApproval, ok bool, reason, msg, runID string) error {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return r.approvalCondition(ctx, a, s, reason, msg, runID)
}

// approvalCondition sets a's Approved condition to s.
func (r *reconciler) approvalCondition(ctx context.Context, a *EnvironmentApproval, s metav1.ConditionStatus, reason, msg, runID string) error {
	patch := client.MergeFrom(a.DeepCopyObject().(client.Object))
	a.Status.ObservedGeneration = a.Generation
	a.Status.Run = runID
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: CondApproved, Status: s, Reason: reason, Message: limit(msg), ObservedGeneration: a.Generation})
	return r.client.Status().Patch(ctx, a, patch)
}

// inPlace is the knit.Submitter of the controller: it runs the apply that
// carries out an approval at once, in the reconcile, and keeps its result.
type inPlace struct {
	k   *knit.Knit
	ctx context.Context
	res *engine.Result
	err error
}

// Enqueue runs req and returns its run's ID.
func (s *inPlace) Enqueue(req knit.RunRequest, _ string) (string, error) {
	// Run here, in the reconcile: ctx carries the object's caller (its
	// namespace's team); no stored token names it for a queue to look up.
	req.Caller = nil
	s.res, s.err = knit.NewRun(s.k, req).Run(s.ctx)
	if s.res == nil {
		if s.err == nil {
			s.err = errors.New("the run left no result")
		}
		return "", s.err
	}
	return s.res.RunID, nil
}
