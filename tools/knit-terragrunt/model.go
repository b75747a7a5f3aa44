package main

// Description is what knit-terragrunt describe prints: every unit of a
// Terragrunt tree as Terragrunt's own parser evaluated it, in a neutral
// form knit translates (see knit's internal/tgimport, which reads the same
// JSON). Paths are relative to Root, with forward slashes.
type Description struct {
	// Format names this shape; a reader refuses another.
	Format string `json:"format"`
	// Terragrunt is the version of Terragrunt's parser that evaluated it.
	Terragrunt string `json:"terragrunt"`
	Root       string `json:"root"`
	Units      []Unit `json:"units"`
	// Findings are about the tree rather than a unit: symlinks not
	// followed, configurations that are not units.
	Findings []Finding `json:"findings,omitempty"`
}

// FormatV1 is the Format of this shape.
const FormatV1 = "knit-terragrunt/v1"

// Unit is one folder holding a terragrunt.hcl.
type Unit struct {
	// Path is the unit's folder; File its configuration file.
	Path string `json:"path"`
	File string `json:"file"`
	// Includes are the files its include blocks merged in, in order.
	Includes []string `json:"includes,omitempty"`
	// Error is set when Terragrunt could not evaluate the unit; the
	// other fields are then empty.
	Error string `json:"error,omitempty"`

	// Source is terraform.source as evaluated ("" when none); SourcePos
	// where it was written.
	Source    string `json:"source,omitempty"`
	SourcePos string `json:"sourcePos,omitempty"`
	// Inputs are the inputs Terragrunt merged from the unit and its
	// includes, except the ones in Refs and the ones a finding names.
	Inputs map[string]any `json:"inputs,omitempty"`
	// InputPos is where each input is written (the unit's own file
	// first, then its includes').
	InputPos map[string]string `json:"inputPos,omitempty"`
	// Refs are the inputs that are exactly a dependency's output;
	// InputRefs the ones that are exactly a dependency's input
	// (dependency.NAME.inputs.INPUT), which knit reads from that unit.
	Refs      map[string]OutputRef `json:"refs,omitempty"`
	InputRefs map[string]InputRef  `json:"inputRefs,omitempty"`
	// Dependencies are its dependency blocks; DependsOn the folders its
	// dependencies block names.
	Dependencies []Dependency `json:"dependencies,omitempty"`
	DependsOn    []string     `json:"dependsOn,omitempty"`
	// RemoteState is its remote_state block, when it has one.
	RemoteState *RemoteState `json:"remoteState,omitempty"`
	// Generate are its generate blocks that write a file.
	Generate []Generate `json:"generate,omitempty"`
	// PreventDestroy is prevent_destroy.
	PreventDestroy bool `json:"preventDestroy,omitempty"`
	// Untranslatable is everything knit cannot carry, each where written.
	Untranslatable []Finding `json:"untranslatable,omitempty"`
}

// OutputRef is an input that is a dependency's output: dependency.NAME.outputs.OUTPUT
// (Index set for OUTPUT[N]).
type OutputRef struct {
	Dependency string `json:"dependency"`
	Output     string `json:"output"`
	Index      *int   `json:"index,omitempty"`
}

// InputRef is an input that is dependency.NAME.inputs.INPUT.
type InputRef struct {
	Dependency string `json:"dependency"`
	Input      string `json:"input"`
}

// Dependency is a dependency block.
type Dependency struct {
	Name string `json:"name"`
	// Unit is the folder its config_path names, relative to the root;
	// Outside is set (and Unit empty) when that folder is not under it.
	Unit    string `json:"unit,omitempty"`
	Outside string `json:"outside,omitempty"`
	Pos     string `json:"pos,omitempty"`
	// MockOutputs are reported, never used as values.
	MockOutputs map[string]any `json:"mockOutputs,omitempty"`
	Enabled     bool           `json:"enabled"`
	SkipOutputs bool           `json:"skipOutputs,omitempty"`
}

// RemoteState is a remote_state block with the backend file Terragrunt
// would generate for it.
type RemoteState struct {
	Backend string `json:"backend"`
	Pos     string `json:"pos,omitempty"`
	// File is where Terragrunt's generate attribute writes the backend
	// ("" when the block has none: Terragrunt then passes -backend-config
	// arguments to the module's own backend block).
	File string `json:"file,omitempty"`
	// Code is the backend configuration as Terragrunt renders it.
	Code        string `json:"code"`
	DisableInit bool   `json:"disableInit,omitempty"`
}

// Generate is a generate block: a file Terragrunt writes into the module.
type Generate struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Contents string `json:"contents"`
	IfExists string `json:"ifExists,omitempty"`
	Pos      string `json:"pos,omitempty"`
}

// Finding is one thing knit cannot carry, where it was written (file:line,
// relative to the root).
type Finding struct {
	Pos  string `json:"pos"`
	What string `json:"what"`
	Why  string `json:"why"`
}
