// Package kube is what the helm and manifests runners share about talking to
// a Kubernetes cluster: building cluster access from a component's
// kubeconfig block and inputs (in memory; credentials never touch disk),
// server-side apply with field manager "knit", object-level diffs from a
// server-side dry-run, the kind order of installs and deletions, the
// inventory of applied objects, sealed plan files, and outputs read from
// live objects.
package kube
