// Package kubecontroller is knit's Kubernetes controller mode (knit
// controller): it reconciles Environment custom resources (knit.dev/v1 and
// CloudKnit's stable.cloudknit.io/v1) with the same library, engine and
// store as the CLI and the server. It is thin over internal/knit:
//
//   - an Environment's spec is written to a folder as an environment file
//     (with the files of the ConfigMaps it names) and read by internal/spec;
//   - a new generation is applied, gated by approval as any apply; a plan
//     that waits is approved by an EnvironmentApproval naming its checksum;
//   - the same generation is re-planned every Interval (a drift run), which
//     sets the Drifted condition on an out-of-band change;
//   - a finalizer tears the environment down on deletion, gated like any
//     teardown, and is removed only once the teardown succeeded.
//
// The CRDs are generated from the Go types (CRDs); deploy/crds holds them.
package kubecontroller
