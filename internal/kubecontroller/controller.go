package kubecontroller

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"knit.dev/knit/internal/knit"
)

// Options configure the controller.
type Options struct {
	// Knit is the library the controller acts through (its store and runners).
	Knit *knit.Knit
	// Namespace limits the controller to one namespace ("": all).
	Namespace string
	// Interval is how often an applied Environment is re-planned for
	// drift, and a stalled one retried (default 5m).
	Interval time.Duration
	// NoCloudKnit leaves stable.cloudknit.io Environments alone (their
	// CRD need not be installed then).
	NoCloudKnit bool
	// Workers is how many Environments of a group reconcile at once (default 4).
	Workers int
	// LeaderElection makes one replica of several the active one, through
	// a Lease in LeaderElectionNamespace.
	LeaderElection          bool
	LeaderElectionNamespace string
	// Tenancy maps namespaces to teams and says where an object may
	// adopt an environment it did not create. The zero value refuses
	// every object: a namespace acts for a team only when told so.
	Tenancy Tenancy
	// PolicyGrace is how long after the admission policy ApproversPolicy
	// was installed an approval's author is trusted (default PolicyGrace).
	PolicyGrace time.Duration
	// Log receives what the controller does (default: discarded).
	Log *slog.Logger
}

// Run reconciles Environments until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.Knit == nil {
		return errors.New("kubecontroller: no knit library")
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Minute
	}
	if opts.PolicyGrace <= 0 {
		opts.PolicyGrace = PolicyGrace
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := AddToScheme(scheme); err != nil {
		return err
	}
	lg := logr.FromSlogHandler(opts.Log.Handler())
	log.SetLogger(lg)
	mo := ctrl.Options{
		Scheme: scheme, Logger: lg,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "knit-controller",
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
	}
	if opts.Namespace != "" {
		mo.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}}
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return err
	}
	if err := add(mgr, opts, KnitGroup, func() envObject { return &Environment{} }); err != nil {
		return err
	}
	if !opts.NoCloudKnit {
		if err := add(mgr, opts, CloudKnitGroup, func() envObject { return &CloudKnitEnvironment{} }); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// add registers the controller of one group's Environments: it reconciles
// on a new generation or a deletion (never on its own status writes), on
// an EnvironmentApproval naming one, and every Interval.
func add(mgr ctrl.Manager, opts Options, gv schema.GroupVersion, newObj func() envObject) error {
	// Absolute: the revisions record the files' absolute paths, and say
	// by them which object an environment is applied from.
	dir, err := filepath.Abs(filepath.Join(opts.Knit.DataDir(), "kubernetes"))
	if err != nil {
		return err
	}
	r := &reconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), knit: opts.Knit, gv: gv, newObj: newObj, tenancy: opts.Tenancy, policyGrace: opts.PolicyGrace,
		dir: dir, interval: opts.Interval, log: opts.Log.With("group", gv.Group)}
	toEnv := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		a, ok := o.(*EnvironmentApproval)
		if !ok || !r.names(a, &Environment{ObjectMeta: metav1.ObjectMeta{Name: a.Spec.Environment}}) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.Environment}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("environment-"+strings.ReplaceAll(gv.Group, ".", "-")).
		For(newObj(), builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deleting{}, teardownAsked{}))).
		Watches(&EnvironmentApproval{}, toEnv, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Names are checked process-wide (for metrics, which are off): tests
		// run one controller after another in one process.
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers, SkipNameValidation: ptr(true)}).
		Complete(r)
}

// deleting passes the update that marks an object deleted.
type deleting struct{ predicate.Funcs }

func (deleting) Update(e event.UpdateEvent) bool {
	return e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil
}

// teardownAsked passes the update that sets RetryTeardownAnnotation or
// SkipTeardownAnnotation anew (an annotation changes no generation).
type teardownAsked struct{ predicate.Funcs }

func (teardownAsked) Update(e event.UpdateEvent) bool {
	for _, k := range []string{RetryTeardownAnnotation, SkipTeardownAnnotation} {
		if e.ObjectNew.GetAnnotations()[k] != e.ObjectOld.GetAnnotations()[k] {
			return true
		}
	}
	return false
}
