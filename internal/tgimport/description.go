// Package tgimport translates a Terragrunt tree into knit Environments:
// one environment per environment folder, one terraform component per
// unit. The tree is read by knit-terragrunt (tools/knit-terragrunt, a
// program of its own built on Terragrunt's configuration parser), which
// prints a Description; this package runs it (Describe), translates what
// it printed (Translate) and checks the result as knit validate does
// (Check). See docs/terragrunt.md for the mapping.
package tgimport

import (
	"encoding/json"
	"fmt"
)

// formatV1 is the only Description shape this package reads.
const formatV1 = "knit-terragrunt/v1"

// Description is knit-terragrunt's account of a tree (its model.go holds
// the writer's side of the same shape). Paths are relative to Root, with
// forward slashes.
type Description struct {
	Format     string    `json:"format"`
	Terragrunt string    `json:"terragrunt"`
	Root       string    `json:"root"`
	Units      []Unit    `json:"units"`
	Findings   []Finding `json:"findings,omitempty"`
}

// Unit is one folder holding a terragrunt.hcl, as Terragrunt evaluated it.
type Unit struct {
	Path           string               `json:"path"`
	File           string               `json:"file"`
	Includes       []string             `json:"includes,omitempty"`
	Error          string               `json:"error,omitempty"`
	Source         string               `json:"source,omitempty"`
	SourcePos      string               `json:"sourcePos,omitempty"`
	Inputs         map[string]any       `json:"inputs,omitempty"`
	InputPos       map[string]string    `json:"inputPos,omitempty"`
	Refs           map[string]OutputRef `json:"refs,omitempty"`
	InputRefs      map[string]InputRef  `json:"inputRefs,omitempty"`
	Dependencies   []Dependency         `json:"dependencies,omitempty"`
	DependsOn      []string             `json:"dependsOn,omitempty"`
	RemoteState    *RemoteState         `json:"remoteState,omitempty"`
	Generate       []Generate           `json:"generate,omitempty"`
	PreventDestroy bool                 `json:"preventDestroy,omitempty"`
	Untranslatable []Finding            `json:"untranslatable,omitempty"`
}

// OutputRef is an input that is exactly dependency.NAME.outputs.OUTPUT
// (or OUTPUT[Index]).
type OutputRef struct {
	Dependency string `json:"dependency"`
	Output     string `json:"output"`
	Index      *int   `json:"index,omitempty"`
}

// InputRef is an input that is exactly dependency.NAME.inputs.INPUT.
type InputRef struct {
	Dependency string `json:"dependency"`
	Input      string `json:"input"`
}

// Dependency is a dependency block: the unit its config_path names
// (Outside instead when that is not under the root).
type Dependency struct {
	Name        string         `json:"name"`
	Unit        string         `json:"unit,omitempty"`
	Outside     string         `json:"outside,omitempty"`
	Pos         string         `json:"pos,omitempty"`
	MockOutputs map[string]any `json:"mockOutputs,omitempty"`
	Enabled     bool           `json:"enabled"`
	SkipOutputs bool           `json:"skipOutputs,omitempty"`
}

// RemoteState is a remote_state block with the backend code Terragrunt
// renders for it; File is its generate path ("" without generate).
type RemoteState struct {
	Backend     string `json:"backend"`
	Pos         string `json:"pos,omitempty"`
	File        string `json:"file,omitempty"`
	Code        string `json:"code"`
	DisableInit bool   `json:"disableInit,omitempty"`
}

// Generate is a generate block.
type Generate struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Contents string `json:"contents"`
	IfExists string `json:"ifExists,omitempty"`
	Pos      string `json:"pos,omitempty"`
}

// Finding is one thing the import does not carry into knit, where it was
// written (file:line relative to the tree), and why. Unit is the unit it
// concerns ("" for the tree).
type Finding struct {
	Unit string `json:"unit,omitempty"`
	Pos  string `json:"pos"`
	What string `json:"what"`
	Why  string `json:"why"`
}

// Decode reads a Description, refusing another shape.
func Decode(data []byte) (*Description, error) {
	var d Description
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("knit-terragrunt's description: %w", err)
	}
	if d.Format != formatV1 {
		return nil, fmt.Errorf("knit-terragrunt's description is %q, knit reads %q: build both from the same source (make build)", d.Format, formatV1)
	}
	return &d, nil
}
