// Package deploy holds what puts knit in a Kubernetes cluster: the CRDs of
// knit controller (crds/, generated from the Go types in
// internal/kubecontroller, which a test keeps equal) and knit's Helm chart
// (helm/knit). The CRDs are embedded for `knit controller install-crds`.
package deploy

import "embed"

// CRDs are the files of crds/.
//
//go:embed crds/*.yaml
var CRDs embed.FS
