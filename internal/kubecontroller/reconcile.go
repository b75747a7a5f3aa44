package kubecontroller

import (
	"context"
	"errors"
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
	reader   client.Reader
	knit     *knit.Knit
	gv       schema.GroupVersion
	newObj   func() envObject
	dir      string
	interval time.Duration
	log      *slog.Logger
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
	if other, err := r.claimedElsewhere(ctx, env, e); err != nil {
		return ctrl.Result{}, err
	} else if other != "" {
		stalled(&st, e.Generation, ReasonOwnedElsewhere, fmt.Sprintf(
			"environment %s is applied from Environment %s: give this one another teamName/envName, or delete that one first", env.ID(), other))
		return ctrl.Result{RequeueAfter: r.interval}, r.saveStatus(ctx, obj, st)
	}
	switch {
	case e.Generation != st.ObservedGeneration:
		return r.run(ctx, obj, engine.KindApply, env, fmt.Sprintf("generation %d", e.Generation))
	case isTrue(st.Conditions, CondAwaitingApproval):
		return r.approvals(ctx, obj)
	case isTrue(st.Conditions, CondStalled):
		return r.run(ctx, obj, engine.KindApply, env, fmt.Sprintf("retry of generation %d", e.Generation))
	default:
		return r.run(ctx, obj, engine.KindDrift, env, "periodic re-plan")
	}
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
	res, err := r.knit.Run(ctx, req)
	r.log.Info("run", "object", e.Namespace+"/"+e.Name, "env", env.ID(), "kind", kind, "status", status(res), "error", err)
	if ctx.Err() != nil {
		return ctrl.Result{}, ctx.Err()
	}
	st = *deepCopy(&e.Status)
	fromResult(&st, e.Generation, res, err)
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
	if a := st.Approval; a != nil && a.Teardown && isTrue(st.Conditions, CondAwaitingApproval) {
		return r.approvals(ctx, obj)
	}
	if st.Env != "" {
		if _, err := r.knit.ResolveEnv(ctx, st.Env); errors.Is(err, store.ErrNotFound) {
			st.Env = "" // never applied: nothing to tear down
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}
	if st.Env == "" {
		return ctrl.Result{}, r.release(ctx, obj)
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
	res, err := r.knit.Run(ctx, req)
	r.log.Info("teardown", "object", e.Namespace+"/"+e.Name, "env", st.Env, "status", status(res), "error", err)
	if ctx.Err() != nil {
		return ctrl.Result{}, ctx.Err()
	}
	return r.afterTeardown(ctx, obj, res, err)
}

// afterTeardown removes the finalizer after a teardown that succeeded,
// and records why not otherwise.
func (r *reconciler) afterTeardown(ctx context.Context, obj envObject, res *engine.Result, runErr error) (ctrl.Result, error) {
	e := obj.env()
	if runErr == nil && succeeded(res) {
		return ctrl.Result{}, r.release(ctx, obj)
	}
	st := *deepCopy(&e.Status)
	fromResult(&st, e.Generation, res, runErr)
	if !isTrue(st.Conditions, CondStalled) && st.Approval == nil {
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

// claimedElsewhere names the other Environment object (group/namespace/
// name) whose spec knit's environment env.ID() is applied from, if one is
// and it is not torn down: two objects naming one environment would undo
// each other's applies. An environment applied by knit apply or knit
// serve is taken over.
func (r *reconciler) claimedElsewhere(ctx context.Context, env *spec.Environment, e *Environment) (string, error) {
	rec, err := r.knit.ResolveEnv(ctx, env.ID())
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if rec.AppliedRevision == 0 || rec.Status == store.EnvTornDown {
		return "", nil
	}
	applied, _, err := r.knit.AppliedSpec(ctx, env.ID())
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(r.dir, filepath.Dir(applied.File))
	if err != nil || !filepath.IsLocal(rel) {
		return "", nil // not from an object
	}
	mine := filepath.Join(r.gv.Group, e.Namespace, e.Name)
	if rel == mine {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}
