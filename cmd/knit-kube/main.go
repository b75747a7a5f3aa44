// Command knit-kube runs knit's Helm and Kubernetes manifests components.
// knit starts it once per operation (`knit-kube runner`, one JSON request
// on stdin, the answer on stdout, the log on stderr), so that client-go and
// the Helm SDK weigh only on the operations that use them; see package
// internal/runner/external. `knit-kube values-check` checks charts' values
// against their values.schema.json for knit validate (package
// internal/spec/valuesschema). `knit-kube knit ARGS` is knit with the
// Kubernetes controller linked in: knit controller becomes it (package
// internal/kubecli). It is not meant to be run by hand.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"knit.dev/knit/internal/cli"
	"knit.dev/knit/internal/kubecli"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/external"
	"knit.dev/knit/internal/runner/helm"
	"knit.dev/knit/internal/runner/manifests"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/spec/valuesschema"
)

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "knit" {
		// knit controller: knit's own binary becomes this one for it.
		os.Exit(cli.MainWith(os.Args[2:], os.Stdin, os.Stdout, os.Stderr, kubecli.Kube()))
	}
	if len(os.Args) == 2 && os.Args[1] == external.OpValuesCheck {
		if err := valuesschema.Serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "knit-kube:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) != 2 || os.Args[1] != "runner" {
		fmt.Fprintln(os.Stderr, "usage: knit-kube runner|values-check  (knit runs it for helm and manifests components, and to check chart values; it reads a JSON request on stdin)")
		os.Exit(2)
	}
	// knit interrupts a cancelled operation: the runner sees ctx done and
	// stops its requests to the cluster.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := external.Serve(ctx, os.Stdin, os.Stdout, os.Stderr, newRunner); err != nil {
		fmt.Fprintln(os.Stderr, "knit-kube:", err)
		os.Exit(1)
	}
}

func newRunner(typ, dataDir string) (runner.Runner, error) {
	if !filepath.IsAbs(dataDir) {
		return nil, fmt.Errorf("data dir %q is not absolute", dataDir)
	}
	switch typ {
	case spec.TypeHelm:
		return helm.New(helm.Options{DataDir: dataDir}), nil
	case spec.TypeManifests:
		return manifests.New(manifests.Options{DataDir: dataDir}), nil
	}
	return nil, fmt.Errorf("knit-kube runs helm and manifests components, not %q", typ)
}
