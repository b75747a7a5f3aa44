package kubecontroller

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
)

// approvals carries out the first EnvironmentApproval of the Environment
// not yet decided: the waiting change set is approved through the library
// (knit.ApproveAndApply, as the API and the CLI approve) when the approval
// names its checksum, and the apply that follows runs here; an approval
// naming another checksum, or none waiting, is refused and says so in its
// status. Each approval is decided once, for its generation.
func (r *reconciler) approvals(ctx context.Context, obj envObject) (ctrl.Result, error) {
	e := obj.env()
	var list EnvironmentApprovalList
	if err := r.client.List(ctx, &list, client.InNamespace(e.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i].CreationTimestamp, list.Items[j].CreationTimestamp
		return a.Before(&b) || (a.Equal(&b) && list.Items[i].Name < list.Items[j].Name)
	})
	for i := range list.Items {
		a := &list.Items[i]
		if !r.names(a, e) || decided(a) {
			continue
		}
		return r.decide(ctx, obj, a)
	}
	return ctrl.Result{RequeueAfter: r.interval}, nil
}

// names reports whether approval a is about Environment e of r's group.
func (r *reconciler) names(a *EnvironmentApproval, e *Environment) bool {
	gv := a.Spec.APIVersion
	if gv == "" {
		gv = KnitGroup.String()
	}
	return a.Spec.Environment == e.Name && gv == r.gv.String()
}

// decided reports whether a's current generation was decided already.
func decided(a *EnvironmentApproval) bool {
	c := meta.FindStatusCondition(a.Status.Conditions, CondApproved)
	return c != nil && c.ObservedGeneration == a.Generation
}

// decide carries out approval a, or refuses it.
func (r *reconciler) decide(ctx context.Context, obj envObject, a *EnvironmentApproval) (ctrl.Result, error) {
	e := obj.env()
	st := *deepCopy(&e.Status)
	teardown := st.Approval != nil && st.Approval.Teardown
	run := &inPlace{k: r.knit, ctx: ctx}
	actor := fmt.Sprintf("kubernetes:%s/environmentapproval/%s", a.Namespace, a.Name)
	reason := a.Spec.Reason
	if reason == "" {
		reason = "EnvironmentApproval " + a.Namespace + "/" + a.Name
	}
	_, runID, err := r.knit.ApproveAndApply(ctx, knit.DecideRequest{EnvRef: st.Env, Approve: true,
		ChangeChecksum: a.Spec.Checksum, Actor: actor, Reason: reason, Source: source}, run)
	r.log.Info("approval", "object", e.Namespace+"/"+e.Name, "approval", a.Name, "run", runID, "error", err)
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
	if err := r.approvalStatus(ctx, a, true, ReasonApproved, fmt.Sprintf("plan %s approved: run %s carried it out (%s)", a.Spec.Checksum, runID, run.res.Status), runID); err != nil {
		return ctrl.Result{}, err
	}
	if teardown && e.DeletionTimestamp != nil {
		return r.afterTeardown(ctx, obj, run.res, run.err)
	}
	fromResult(&st, e.Generation, run.res, run.err)
	return ctrl.Result{RequeueAfter: r.interval}, r.saveStatus(ctx, obj, st)
}

// approvalStatus records the decision on a.
func (r *reconciler) approvalStatus(ctx context.Context, a *EnvironmentApproval, ok bool, reason, msg, runID string) error {
	patch := client.MergeFrom(a.DeepCopyObject().(client.Object))
	a.Status.ObservedGeneration = a.Generation
	a.Status.Run = runID
	setCondition(&a.Status.Conditions, a.Generation, CondApproved, ok, reason, msg)
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
	s.res, s.err = s.k.Run(s.ctx, req)
	if s.res == nil {
		if s.err == nil {
			s.err = errors.New("the run left no result")
		}
		return "", s.err
	}
	return s.res.RunID, nil
}
