package cli

import (
	"context"
	"log/slog"
	"time"

	"knit.dev/knit/internal/knit"
)

// Kube is what knit-kube adds to knit's commands: the work of knit
// controller, which links client-go and controller-runtime. Their package
// initialisation alone costs about 20 ms and tens of MB, which every other
// knit command would pay, so knit's own binary has none of it: its knit
// controller starts `knit-kube knit ARGS` in its place (the same process,
// see procexec.Replace), and knit-kube runs these commands with Kube set
// (package kubecli).
type Kube struct {
	// Controller reconciles Environment objects until ctx is done.
	Controller func(ctx context.Context, c Controller) error
	// InstallCRDs applies the controller's CRDs and names them.
	InstallCRDs func(ctx context.Context, cluster Cluster) ([]string, error)
	// Self are the arguments that make this binary run knit's commands
	// (knit-kube's "knit"): the tool watchdog is this binary started with
	// them.
	Self []string
}

// Cluster is how knit controller reaches the cluster: a kubeconfig
// (empty: $KUBECONFIG, ~/.kube/config, else the pod's service account) and
// a context of it (empty: its current one).
type Cluster struct {
	Kubeconfig, Context string
}

// Controller is what knit controller was asked to do.
type Controller struct {
	Cluster
	Knit                    *knit.Knit
	Namespace               string
	Interval                time.Duration
	Workers                 int
	NoCloudKnit             bool
	LeaderElection          bool
	LeaderElectionNamespace string
	// Teams maps a namespace to the team its objects act for;
	// DefaultTeam is the others'; AllowAdopt names the namespaces whose
	// objects may take an environment over.
	Teams       map[string]string
	DefaultTeam string
	AllowAdopt  []string
	Log         *slog.Logger
}

// self is k.Self; none for knit's own binary (a nil k).
func (k *Kube) self() []string {
	if k == nil {
		return nil
	}
	return k.Self
}
