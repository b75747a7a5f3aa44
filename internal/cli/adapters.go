package cli

// This is the one file of the CLI that names concrete adapters (runner and
// store implementations): internal/archtest allows them here and nowhere
// else in the package. knit.Open still wires the store and the runners
// itself (issue 25: the caller should inject them, from here).

import (
	"context"
	"errors"

	"knit.dev/knit/internal/runner/external"
	"knit.dev/knit/internal/runner/terraform"
)

// locateTools fills in the tools knit's runners would use: the OpenTofu or
// Terraform binary and its version, and the knit-kube that runs helm and
// manifests components.
func locateTools(ctx context.Context, d *deps, v *versionView) {
	bin, err := terraform.Locate(d.global.tfBinary, d.getenv)
	switch {
	case err == nil:
		v.ToolBin = bin.Path
		if tv, err := bin.Version(ctx); err == nil {
			v.Tool = tv
		} else {
			v.Tool = "unknown (" + err.Error() + ")"
		}
	case !errors.Is(err, terraform.ErrNoBinary):
		v.ToolErr = err.Error() // the named binary is missing or not executable
	}
	if v.KubeRunner = d.getenv("KNIT_KUBE_RUNNER"); v.KubeRunner == "" {
		if v.KubeRunner, err = external.Locate("knit-kube"); err != nil {
			v.KubeRunnerErr = err.Error()
		}
	}
}
