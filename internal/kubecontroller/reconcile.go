package kubecontroller

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// envObject is an Environment of either group.
type envObject interface {
	client.Object
	env() *Environment
}

func (e *Environment) env() *Environment          { return e }
func (e *CloudKnitEnvironment) env() *Environment { return (*Environment)(e) }

// reconciler reconciles the Environments of one group.
type reconciler struct {
	client client.Client
	// reader reads ConfigMaps uncached: the controller watches none.
	reader  client.Reader
	knit    *knit.Knit
	gv      schema.GroupVersion
	newObj  func() envObject
	tenancy Tenancy
	// policyGrace: see Options.PolicyGrace.
	policyGrace time.Duration
	dir         string
	interval    time.Duration
	log         *slog.Logger
}

// Source is what the controller's runs, decisions and audit entries say
// they came through.
const source = "kubernetes"

// Reconcile brings one Environment a step closer to its spec: a new
// generation is applied, a waiting plan is carried out when an
// EnvironmentApproval names it, and an applied one is re-planned every
// interval for drift. A deleted one is torn down (finalize).
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.newObj()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	e := obj.env()
	if e.DeletionTimestamp != nil {
		return r.finalize(ctx, obj)
	}
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
		controllerutil.AddFinalizer(obj, Finalizer)
		if err := r.client.Patch(ctx, obj, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	env, err := load(ctx, r.reader, r.dir, r.gv, e)
	if err != nil {
		st := *deepCopy(&e.Status)
		stalled(&st, e.Generation, ReasonInvalidSpec, err.Error())
		return ctrl.Result{RequeueAfter: r.interval}, r.saveStatus(ctx, obj, st)
	}
	st := *deepCopy(&e.Status)
	team, no := r.tenancy.check(e.Namespace, env)
	if no != nil {
		stalled(&st, e.Generation, no.reason, no.msg)
		return ctrl.Result{RequeueAfter: r.interval}, r.saveStatus(ctx, obj, st)
	}
	ctx = knit.WithCaller(ctx, caller(r.actor(e), team))
	adopted, no, err := r.owner(ctx, env.ID(), e)
	if err != nil {
		return ctrl.Result{}, err
	}
	if no != nil {
		stalled(&st, e.Generation, no.reason, no.msg)
		return ctrl.Result{RequeueAfter: r.interval}, r.saveStatus(ctx, obj, st)
	}
	switch {
	case isTrue(st.Conditions, CondAwaitingApproval) && e.Generation == st.ObservedGeneration:
		return r.approvals(ctx, obj, env.ID())
	case adopted != "":
		// An adoption is always an apply of the object's spec, audited.
		if err := r.auditAdoption(ctx, e, env.ID(), adopted); err != nil {
			return ctrl.Result{}, err
		}
		return r.run(ctx, obj, engine.KindApply, env, fmt.Sprintf("generation %d adopts %s, applied %s (%s)", e.Generation, env.ID(), adopted, AdoptAnnotation))
	case e.Generation != st.ObservedGeneration:
		return r.run(ctx, obj, engine.KindApply, env, fmt.Sprintf("generation %d", e.Generation))
	case rolledBack(&st, e.Generation):
		return ctrl.Result{RequeueAfter: r.interval}, nil // until the spec changes
	case isTrue(st.Conditions, CondStalled):
		return r.run(ctx, obj, engine.KindApply, env, fmt.Sprintf("retry of generation %d", e.Generation))
	default:
		return r.run(ctx, obj, engine.KindDrift, env, "periodic re-plan")
	}
}

// auditAdoption records in knit's audit trail that object e takes over
// environment id, which GitOps or the CLI applied (from).
func (r *reconciler) auditAdoption(ctx context.Context, e *Environment, id, from string) error {
	r.log.Info("adopt", "object", e.Namespace+"/"+e.Name, "env", id, "from", from)
	return r.knit.State().RecordAudit(ctx, store.AuditEvent{Env: id, Actor: r.actor(e), Action: "adopt",
		Reason: fmt.Sprintf("%s %s/%s annotated %s=true, allowed by --allow-adopt %s", r.gv.Group, e.Namespace, e.Name, AdoptAnnotation, e.Namespace),
		Detail: "applied " + from})
}

// run runs kind on env and records its outcome in the status.
func (r *reconciler) run(ctx context.Context, obj envObject, kind store.RunKind, env *spec.Environment, why string) (ctrl.Result, error) {
	e := obj.env()
	st := *deepCopy(&e.Status)
	reconciling(&st, e.Generation, fmt.Sprintf("%s of %s: %s", kind, env.ID(), why))
	if err := r.saveStatus(ctx, obj, st); err != nil {
		return ctrl.Result{}, err
	}
	req := knit.RunRequest{Kind: kind, Env: env, Actor: r.actor(e), Source: source,
		Reason: fmt.Sprintf("%s %s/%s: %s", r.gv.Group, e.Namespace, e.Name, why)}
	if kind == engine.KindDrift && env.Spec.Drift != nil && env.Spec.Drift.Policy != "" {
		req.Reconcile = env.Spec.Drift.Policy != spec.DriftAlert
	}
	res, err := knit.NewRun(r.knit, req).Run(ctx)
	r.logRun(string(kind), e, env.ID(), res, err)
	if ctx.Err() != nil {
		return ctrl.Result{}, ctx.Err()
	}
	st = *deepCopy(&e.Status)
	fromResult(&st, e.Generation, res, err)
	r.rollBack(ctx, e, res, &st)
	if ctx.Err() != nil {
		return ctrl.Result{}, ctx.Err()
	}
	return ctrl.Result{RequeueAfter: r.interval}, r.saveStatus(ctx, obj, st)
}

// actor names the object for knit's audit trail.
func (r *reconciler) actor(e *Environment) string {
	return fmt.Sprintf("kubernetes:%s/%s", e.Namespace, e.Name)
}

func status(res *engine.Result) string {
	if res == nil {
		return ""
	}
	return string(res.Status)
}

// logRun logs a run the controller started: a failed one at error level
// with why (the run's error, or its first failed component and reason).
func (r *reconciler) logRun(what string, e *Environment, env string, res *engine.Result, err error) {
	args := []any{"object", e.Namespace + "/" + e.Name, "env", env, "status", status(res)}
	if res != nil {
		args = append(args, "run", res.RunID)
	}
	why := ""
	if err != nil {
		why = err.Error()
	} else if res != nil {
		if bad := firstWith(res, func(c *engine.ComponentResult) bool { return c.Status.IsError() }); bad != nil {
			why = fmt.Sprintf("component %s %s: %s", bad.Name, bad.Status, firstLine(bad.Reason))
		} else if res.Status == store.StatusFailed {
			why = "the run failed"
		}
	}
	if why == "" {
		r.log.Info(what, args...)
		return
	}
	r.log.Error(what+" failed", append(args, "reason", why)...)
}

// saveStatus writes st as obj's status (a merge patch of the status
// subresource), and keeps it in obj.
func (r *reconciler) saveStatus(ctx context.Context, obj envObject, st EnvironmentStatus) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	obj.env().Status = st
	return r.client.Status().Patch(ctx, obj, patch)
}

// finalize tears a deleted Environment down, gated as any teardown: a
// destroy waits for an EnvironmentApproval unless autoApprove, and
// destroyProtection refuses. The finalizer goes only once the teardown
// succeeded (or nothing was ever applied).
func (r *reconciler) finalize(ctx context.Context, obj envObject) (ctrl.Result, error) {
	e := obj.env()
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	st := *deepCopy(&e.Status)
	team, no := r.tenancy.team(e.Namespace)
	if no == nil {
		ctx = knit.WithCaller(ctx, caller(r.actor(e), team))
	}
	if st.Env != "" {
		// status.env is only what the object says: the teardown goes on
		// only for an environment of the namespace's team that this
		// object created and that is still there.
		owned := false
		if no == nil && spec.TeamOf(st.Env) == team {
			var err error
			if owned, err = r.owns(ctx, st.Env, e); err != nil {
				return ctrl.Result{}, err
			}
		}
		if !owned {
			r.log.Info("deleted without teardown: not this object's environment", "object", e.Namespace+"/"+e.Name, "env", st.Env)
			st.Env = ""
		}
	}
	if st.Env == "" {
		return ctrl.Result{}, r.release(ctx, obj)
	}
	skipped, skipWhy, err := r.skipTeardown(ctx, obj, st.Env)
	if err != nil || skipped {
		return ctrl.Result{}, err
	}
	if teardownSpent(e, &st) {
		return r.gaveUp(ctx, obj, st, skipWhy)
	}
	if a := st.Approval; a != nil && a.Teardown && isTrue(st.Conditions, CondAwaitingApproval) {
		return r.approvals(ctx, obj, st.Env)
	}
	reconciling(&st, e.Generation, "teardown of "+st.Env+": the object is being deleted")
	setCondition(&st.Conditions, e.Generation, CondReady, false, ReasonTearingDown, "the object is being deleted")
	if err := r.saveStatus(ctx, obj, st); err != nil {
		return ctrl.Result{}, err
	}
	req := knit.RunRequest{Kind: engine.KindTeardown, EnvRef: st.Env, Actor: r.actor(e), Source: source,
		Reason: fmt.Sprintf("%s %s/%s deleted", r.gv.Group, e.Namespace, e.Name)}
	// The spec as it is now, so that lifting destroyProtection on a
	// deleted object lets its teardown go on; the applied one if it no
	// longer reads.
	if env, err := load(ctx, r.reader, r.dir, r.gv, e); err == nil && env.ID() == st.Env {
		req.Env, req.EnvRef = env, ""
	}
	res, err := knit.NewRun(r.knit, req).Run(ctx)
	r.logRun("teardown", e, st.Env, res, err)
	if ctx.Err() != nil {
		return ctrl.Result{}, ctx.Err()
	}
	return r.afterTeardown(ctx, obj, res, err, skipWhy)
}

// afterTeardown removes the finalizer after a teardown that succeeded,
// and records why not otherwise, counting the failures: once
// MaxTeardownAttempts have failed the controller gives up.
func (r *reconciler) afterTeardown(ctx context.Context, obj envObject, res *engine.Result, runErr error, skipWhy string) (ctrl.Result, error) {
	e := obj.env()
	if runErr == nil && succeeded(res) {
		return ctrl.Result{}, r.release(ctx, obj)
	}
	st := *deepCopy(&e.Status)
	fromResult(&st, e.Generation, res, runErr)
	if isTrue(st.Conditions, CondStalled) {
		st.TeardownAttempts++
		if st.TeardownAttempts >= MaxTeardownAttempts {
			return r.gaveUp(ctx, obj, st, skipWhy)
		}
	} else if st.Approval == nil {
		setCondition(&st.Conditions, e.Generation, CondReady, false, ReasonTearingDown, "the object is being deleted")
	}
	return ctrl.Result{RequeueAfter: r.interval}, r.saveStatus(ctx, obj, st)
}

// release removes the finalizer (the object then goes) and its folder.
func (r *reconciler) release(ctx context.Context, obj envObject) error {
	e := obj.env()
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.client.Patch(ctx, obj, patch); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(r.dir, r.gv.Group, e.Namespace, e.Name))
}
