// Package terraform runs OpenTofu or Terraform for knit's terraform
// components: it lays out a work dir per component, writes inputs, and plans,
// applies, destroys and reads outputs with the tool's machine-readable output
// (terraform-json types for `show -json`, the UI stream of `plan -json`,
// `apply -json` and `destroy -json`).
//
// A component's work dir:
//
//	<WorkDir>/module/            copy of the module source (a local folder, or a
//	                             git checkout at its ref); the tool runs in
//	                             module/<module.path or //subdir>
//	<WorkDir>/terraform.tfstate  state, when the module has no backend of its own
//	                             and knit shares none (Options.States; then the
//	                             state is in knit's store, see sharedstate.go)
//	<WorkDir>/plan.tfplan        the last saved plan
//	<WorkDir>/init.stamp         what the last successful init saw
//	<WorkDir>/synced.knit        the files the last sync placed in module/
//
// The copy is kept between runs and updated file by file: only changed
// files are rewritten, and of the files gone from the source only those an
// earlier sync placed (synced.knit) are deleted. So .terraform, the lock
// file the tool wrote, and files the module writes into path.module (a
// local_file) survive, and the next plan or drift check sees them as the
// module left them. A symlink in a local module is followed only when its
// real target stays inside the module's folder; one that leads out, cannot
// be resolved or loops is refused, naming the link and its target. Into the folder the tool runs in, in
// this order (a later file replaces an earlier one of the same name):
// variablesFile as 00-knit-variables.auto.tfvars[.json], overlayFiles,
// overlayData, then knit_override.tf (a local backend pointing at the state
// above, unless the module declares a backend) and knit.auto.tfvars.json
// (the inputs). The tool loads *.auto.tfvars* files in lexical order, later
// ones winning: inline variables override the variables file.
//
// Init runs the first time, and again only when what it reads changes: the
// providers the configuration requires or implies, module calls, the
// backend (configuration is read with HCL, see config.go), any lock file,
// the tool, its CLI config or the plugin cache; editing a resource's
// arguments or adding an output does not. Should the tool still ask for
// init, it runs and the command is retried once. knit reads the
// configuration with HCL for one more decision: whether the module
// configures encryption or a non-local backend of its own (then knit leaves
// state encryption to it), without mistaking a resource's nested block
// called "encryption" for the module's.
// Providers install into one plugin cache shared by all components and every
// knit process using the data dir (<DataDir>/plugin-cache), guarded by a
// flock on <DataDir>/plugin-cache.lock around each init: shared where the
// tool locks the cache itself (OpenTofu 1.10 and later), so inits run at
// once; exclusive otherwise, so they take turns. An init links a provider
// the cache already holds rather than re-installing it, so plans and applies
// of other components run on while it does. Git sources are cached under
// <DataDir>/git.
//
// The least tool work: results come from the tool's machine-readable
// streams (plan -json, apply -json: resource actions, counts, output
// changes, output values), not from extra commands. Per component:
//
//	new, applied without a gate     init, apply            (PlanApply)
//	changed, without a gate         apply
//	new / changed, gated            [init,] plan -out; after approval, apply of that file
//	unchanged (same fingerprint)    nothing (the engine skips it)
//	sensitive outputs               + output -json (the stream redacts them)
//	drift check, in sync            plan
//	destroy                         destroy (+ init if needed)
//
// A new component's init need not wait for its turn: PrepareAhead runs it
// while the components it depends on are still running, in a parallelism
// slot the engine's walk leaves idle, with the inputs not yet known (so
// not for a configuration whose init reads variables). The turn finds the
// stamp current and runs only its plan or apply: the same processes, one
// fewer on the critical path.
//
// show -json of the saved plan runs only for a plan with changes whose
// caller asked for what the stream lacks: the names of changed attributes
// (PlanOptions.Attributes: `knit plan`, drift) or planned output values
// (PlanOptions.KnownOutputs: `knit plan`, for dependents' plans).
//
// The tool runs through procexec (args.go builds each command line, tool.go
// runs it) with an explicit environment: procexec's allowlist of knit's own
// (never KNIT_*), knit's settings, TF_ENCRYPTION and sensitive inputs as
// TF_VAR_*. It runs in a process group of its own: cancellation interrupts
// the whole group and kills whatever is left of it (providers,
// provisioners' children) after Options.GracePeriod. terraform-exec is not
// used: it signals only the tool itself, and refuses TF_VAR_* in the
// environment it is given.
package terraform
