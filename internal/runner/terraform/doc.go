// Package terraform runs OpenTofu or Terraform for knit's terraform
// components: it lays out a work dir per component, writes inputs, and plans,
// applies, destroys and reads outputs through hashicorp/terraform-exec.
//
// A component's work dir:
//
//	<WorkDir>/module/            copy of the module source (a local folder, or a
//	                             git checkout at its ref); the tool runs in
//	                             module/<module.path or //subdir>
//	<WorkDir>/terraform.tfstate  state, when the module has no backend of its own
//	<WorkDir>/plan.tfplan        the last saved plan
//	<WorkDir>/init.stamp         what the last successful init saw
//
// The copy is kept between runs and updated file by file (only changed files
// are rewritten; files gone from the source are deleted), so .terraform and
// the lock file the tool wrote survive. Into the folder the tool runs in, in
// this order (a later file replaces an earlier one of the same name):
// variablesFile as 00-knit-variables.auto.tfvars[.json], overlayFiles,
// overlayData, then knit_override.tf (a local backend pointing at the state
// above, unless the module declares a backend) and knit.auto.tfvars.json
// (the inputs). The tool loads *.auto.tfvars* files in lexical order, later
// ones winning: inline variables override the variables file.
//
// Init runs the first time, and again only when the module's configuration
// files, the lock file, the tool, its CLI config or the plugin cache change.
// Providers install into one plugin cache shared by all components
// (<DataDir>/plugin-cache): inits take turns, and an init links a provider
// the cache already holds rather than re-installing it, so plans and applies
// of other components run on while it does. Git sources are cached under
// <DataDir>/git.
package terraform
