// Package kubecli is the part of knit's command line that links client-go:
// the work of knit controller, which knit-kube runs (`knit-kube knit
// ARGS`) so that knit's own binary starts without it (see cli.Kube).
package kubecli

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"knit.dev/knit/internal/cli"
	"knit.dev/knit/internal/kubecontroller"
)

// Kube returns knit controller's work, for cli.RunWith and cli.MainWith:
// knit-kube runs knit's commands when its first argument is "knit".
func Kube() *cli.Kube {
	return &cli.Kube{Controller: controller, InstallCRDs: installCRDs, Self: []string{"knit"}}
}

func controller(ctx context.Context, c cli.Controller) error {
	cfg, err := restConfig(c.Cluster)
	if err != nil {
		return err
	}
	return kubecontroller.Run(ctx, cfg, kubecontroller.Options{
		Knit: c.Knit, Namespace: c.Namespace, Interval: c.Interval, Workers: c.Workers, NoCloudKnit: c.NoCloudKnit,
		LeaderElection: c.LeaderElection, LeaderElectionNamespace: c.LeaderElectionNamespace,
		Tenancy: kubecontroller.Tenancy{Teams: c.Teams, DefaultTeam: c.DefaultTeam, AllowAdopt: c.AllowAdopt}, Log: c.Log,
	})
}

func installCRDs(ctx context.Context, cluster cli.Cluster) ([]string, error) {
	cfg, err := restConfig(cluster)
	if err != nil {
		return nil, err
	}
	return kubecontroller.InstallCRDs(ctx, cfg)
}

// restConfig is how to reach the cluster: the kubeconfig the flags or
// KUBECONFIG name, else ~/.kube/config, else the pod's service account.
func restConfig(c cli.Cluster) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster access: %w (pass --kubeconfig, or run in a pod with a service account)", err)
	}
	return cfg, nil
}
