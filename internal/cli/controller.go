package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// controllerFlags are knit controller's.
type controllerFlags struct {
	cluster         Cluster
	namespace       string
	interval        time.Duration
	workers         int
	noCloudKnit     bool
	leaderElect     bool
	leaderNamespace string
	logFormat       string
	toolEnv         []string
	teamFor         map[string]string
	defaultTeam     string
	allowAdopt      []string
}

func newControllerCmd(d *deps) *cobra.Command {
	var f controllerFlags
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Reconcile Environment custom resources in a Kubernetes cluster",
		Long: `Run knit as a Kubernetes controller: it reconciles Environment objects
(knit.dev/v1, and CloudKnit's stable.cloudknit.io/v1) with the same engine and
store as knit apply and knit serve (--store for PostgreSQL). A new generation
is applied, gated by approval as any apply: create an EnvironmentApproval
naming the checksum in the Environment's status.approval.checksum. Every
--interval an applied Environment is re-planned; a change made out of band
sets its Drifted condition. Deleting an Environment tears it down (gated the
same way; destroyProtection refuses) before its finalizer goes.

Each namespace acts for one team: --team-for-namespace ns=team (repeatable,
or a comma list), --default-team for the namespaces it does not name. An
object of a namespace that acts for no team, or naming another team, is
Stalled and nothing runs. The controller owns only what it created: an
object naming an environment that GitOps or the CLI applied is Stalled
(OwnedElsewhere); an object of a namespace named by --allow-adopt and
annotated knit.dev/adopt: "true" takes it over (audited).

The CRDs are in deploy/crds; knit controller install-crds applies them.

It runs in knit-kube (beside knit, on PATH, or KNIT_KUBE_RUNNER), which
links the Kubernetes client: knit becomes knit-kube for it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if d.kube == nil {
				return d.replaceWithKnitKube()
			}
			if f.logFormat != "text" && f.logFormat != "json" {
				return fmt.Errorf("--log-format %q: use text or json", f.logFormat)
			}
			if f.interval <= 0 {
				return fmt.Errorf("--interval %s: give a positive duration such as 5m", f.interval)
			}
			if err := f.tenancy(); err != nil {
				return err
			}
			dir, err := d.dataDir()
			if err != nil {
				return err
			}
			k, err := d.openKnit(cmd.Context(), dir, f.toolEnv, nil)
			if err != nil {
				return err
			}
			defer k.Close()
			var h slog.Handler = slog.NewTextHandler(d.stderr, nil)
			if f.logFormat == "json" {
				h = slog.NewJSONHandler(d.stderr, nil)
			}
			return d.kube.Controller(cmd.Context(), Controller{
				Cluster: f.cluster, Knit: k, Namespace: f.namespace, Interval: f.interval, Workers: f.workers, NoCloudKnit: f.noCloudKnit,
				LeaderElection: f.leaderElect, LeaderElectionNamespace: f.leaderNamespace,
				Teams: f.teamFor, DefaultTeam: f.defaultTeam, AllowAdopt: f.allowAdopt, Log: slog.New(h),
			})
		},
	}
	f.clusterFlags(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&f.namespace, "namespace", "n", "", "reconcile the Environments of this namespace only (default: all)")
	fl.DurationVar(&f.interval, "interval", 5*time.Minute, "how often an applied Environment is re-planned for drift, and a stalled one retried")
	fl.IntVar(&f.workers, "workers", 4, "Environments of a group reconciled at once")
	fl.BoolVar(&f.noCloudKnit, "no-cloudknit", false, "leave stable.cloudknit.io Environments alone (their CRD need not be installed)")
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "with several replicas, one at a time reconciles (a Lease named knit-controller)")
	fl.StringVar(&f.leaderNamespace, "leader-election-namespace", "", "the namespace of the Lease (default: the pod's)")
	fl.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fl.StringSliceVar(&f.toolEnv, "tool-env", nil, "variables of knit's environment that the tools may see, beyond the built-in allowlist")
	fl.StringToStringVar(&f.teamFor, "team-for-namespace", nil, "the team whose environments the Environments of a namespace may name: ns=team (repeatable, or ns=team,ns2=team2)")
	fl.StringVar(&f.defaultTeam, "default-team", "", "the team of a namespace --team-for-namespace does not name (default: none, its objects are refused)")
	fl.StringSliceVar(&f.allowAdopt, "allow-adopt", nil, "namespaces whose objects annotated knit.dev/adopt: \"true\" may take over an environment that GitOps or the CLI applied (audited)")
	cmd.AddCommand(newInstallCRDsCmd(d))
	return cmd
}

// tenancy checks the namespace and team flags; every problem at once.
func (f *controllerFlags) tenancy() error {
	var errs []error
	for ns, team := range f.teamFor {
		if ns == "" || team == "" || strings.Contains(team, "/") {
			errs = append(errs, fmt.Errorf("--team-for-namespace %s=%s: give namespace=team, such as payments=pay", ns, team))
		}
	}
	if strings.Contains(f.defaultTeam, "/") {
		errs = append(errs, fmt.Errorf("--default-team %q: give a team name, such as pay", f.defaultTeam))
	}
	for _, ns := range f.allowAdopt {
		if ns == "" {
			errs = append(errs, errors.New("--allow-adopt: an empty namespace"))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func newInstallCRDsCmd(d *deps) *cobra.Command {
	var f controllerFlags
	cmd := &cobra.Command{
		Use:   "install-crds",
		Short: "Apply the CRDs of knit controller (Environment, EnvironmentApproval) to the cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if d.kube == nil {
				return d.replaceWithKnitKube()
			}
			names, err := d.kube.InstallCRDs(cmd.Context(), f.cluster)
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintf(d.stdout, "customresourcedefinition %s established\n", n)
			}
			return nil
		},
	}
	f.clusterFlags(cmd)
	return cmd
}

func (f *controllerFlags) clusterFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.cluster.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else the pod's service account)")
	cmd.Flags().StringVar(&f.cluster.Context, "context", "", "context of the kubeconfig (default: its current one)")
}
