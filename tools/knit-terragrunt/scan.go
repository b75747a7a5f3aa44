package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// scan is what reading a unit's files as HCL finds, without evaluating
// them: where things are written, and what knit cannot carry.
type scan struct {
	findings  []Finding
	sourcePos string
	statePos  string
	genPos    map[string]string
	depPos    map[string]string
	// inputPos is where each input is written, the unit's own file first.
	inputPos map[string]string
	inputs   string // where the first inputs attribute is
}

// Top-level attributes Terragrunt acts on and knit has no place for.
var notCarried = map[string]string{
	"iam_role":                      "Terragrunt assumes this role before running the tool; knit's component has aws.assumeRole, kept but not acted on",
	"iam_assume_role_duration":      "Terragrunt's role assumption; knit does not assume roles",
	"iam_assume_role_session_name":  "Terragrunt's role assumption; knit does not assume roles",
	"iam_web_identity_token":        "Terragrunt's role assumption; knit does not assume roles",
	"terraform_binary":              "knit picks the tool with --tf-binary or KNIT_TF_BINARY, for every component",
	"terraform_version_constraint":  "knit does not check the tool's version per component",
	"terragrunt_version_constraint": "only Terragrunt reads this",
	"download_dir":                  "knit keeps module copies in its data dir",
	"skip":                          "knit has no skipped component: leave the unit out of the environment",
	"retryable_errors":              "knit does not retry a failed tool command",
	"retry_max_attempts":            "knit does not retry a failed tool command",
	"retry_sleep_interval_sec":      "knit does not retry a failed tool command",
}

// Top-level blocks knit has no place for.
var blocksNotCarried = map[string]string{
	"feature": "feature flags are evaluated at their defaults; knit has no flags",
	"exclude": "knit has no exclusion of a unit from some commands",
	"errors":  "knit does not retry or ignore errors by pattern",
	"engine":  "knit runs OpenTofu or Terraform itself, not a Terragrunt engine",
	"catalog": "only Terragrunt's catalog command reads this",
}

// Blocks and attributes inside terraform { } other than source.
var terraformNotCarried = map[string]string{
	"before_hook":              "hooks run commands around the tool; knit has no hooks: use a script component",
	"after_hook":               "hooks run commands around the tool; knit has no hooks: use a script component",
	"error_hook":               "hooks run commands around the tool; knit has no hooks: use a script component",
	"extra_arguments":          "knit builds the tool's command line itself",
	"include_in_copy":          "knit copies the whole module folder",
	"exclude_from_copy":        "knit copies the whole module folder",
	"copy_terraform_lock_file": "knit keeps the module's lock file",
}

func parseHCL(file string) (*hclsyntax.Body, []byte, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasSuffix(file, ".json") {
		return nil, src, nil // JSON configurations are read only as evaluated
	}
	f, diags := hclsyntax.ParseConfig(src, file, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, nil, diags
	}
	return f.Body.(*hclsyntax.Body), src, nil
}

// scanRefs lists the dependency outputs files read.
func scanRefs(files []string) (refs, error) {
	r := refs{}
	for _, file := range files {
		body, _, err := parseHCL(file)
		if err != nil {
			return nil, err
		}
		if body == nil {
			continue
		}
		hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
			if t, ok := n.(*hclsyntax.ScopeTraversalExpr); ok {
				r.add(t.Traversal)
			}
			return nil
		})
	}
	return r, nil
}

// scanFiles reads files (the unit's first) for positions and findings.
func scanFiles(root string, files []string) (*scan, error) {
	s := &scan{genPos: map[string]string{}, depPos: map[string]string{}, inputPos: map[string]string{}}
	for _, file := range files {
		body, src, err := parseHCL(file)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, file)
		at := func(r hcl.Range) string { return fmt.Sprintf("%s:%d", filepath.ToSlash(rel), r.Start.Line) }
		if body == nil {
			s.findings = append(s.findings, Finding{Pos: filepath.ToSlash(rel), What: "JSON configuration", Why: "read as Terragrunt evaluates it; hooks and commands in it are not located by line"})
			continue
		}
		s.top(body, at)
		s.calls(body, src, at)
	}
	return s, nil
}

func (s *scan) add(pos, what, why string) {
	s.findings = append(s.findings, Finding{Pos: pos, What: what, Why: why})
}

func (s *scan) top(body *hclsyntax.Body, at func(hcl.Range) string) {
	for name, a := range body.Attributes {
		switch name {
		case "inputs":
			s.inputsAt(a, at)
		case "prevent_destroy", "dependencies":
		case "remote_state":
			setOnce(&s.statePos, at(a.SrcRange))
		default:
			why := notCarried[name]
			if why == "" {
				why = "knit has no place for it"
			}
			s.add(at(a.SrcRange), name, why)
		}
	}
	for _, b := range body.Blocks {
		label := strings.Join(b.Labels, ".")
		switch b.Type {
		case "include", "locals", "dependencies":
		case "dependency":
			setOnceMap(s.depPos, label, at(b.TypeRange))
		case "generate":
			setOnceMap(s.genPos, label, at(b.TypeRange))
		case "remote_state":
			setOnce(&s.statePos, at(b.TypeRange))
		case "terraform":
			s.terraform(b.Body, at)
		default:
			why := blocksNotCarried[b.Type]
			if why == "" {
				why = "knit has no place for it"
			}
			s.add(at(b.TypeRange), strings.TrimSpace(b.Type+" "+label), why)
		}
	}
}

func (s *scan) terraform(body *hclsyntax.Body, at func(hcl.Range) string) {
	for name, a := range body.Attributes {
		if name == "source" {
			setOnce(&s.sourcePos, at(a.SrcRange))
			continue
		}
		s.add(at(a.SrcRange), "terraform."+name, orDefault(terraformNotCarried[name]))
	}
	for _, b := range body.Blocks {
		what := "terraform." + strings.TrimSpace(b.Type+" "+strings.Join(b.Labels, "."))
		s.add(at(b.TypeRange), what, orDefault(terraformNotCarried[b.Type]))
	}
}

func orDefault(why string) string {
	if why == "" {
		return "knit has no place for it"
	}
	return why
}

func (s *scan) inputsAt(a *hclsyntax.Attribute, at func(hcl.Range) string) {
	setOnce(&s.inputs, at(a.SrcRange))
	obj, ok := a.Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return
	}
	for _, item := range obj.Items {
		key, diags := item.KeyExpr.Value(nil)
		if diags.HasErrors() || !key.IsKnown() || key.IsNull() || key.Type().FriendlyName() != "string" {
			continue
		}
		setOnceMap(s.inputPos, key.AsString(), at(item.KeyExpr.Range()))
	}
}

// calls finds the calls of neutralised functions.
func (s *scan) calls(body *hclsyntax.Body, src []byte, at func(hcl.Range) string) {
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		c, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok {
			return nil
		}
		if why, bad := neutralized[c.Name]; bad {
			s.add(at(c.NameRange), snippet(src, c.Range()), why)
		}
		return nil
	})
}

func snippet(src []byte, r hcl.Range) string {
	if r.End.Byte > len(src) || r.Start.Byte >= r.End.Byte {
		return ""
	}
	t := strings.Join(strings.Fields(string(src[r.Start.Byte:r.End.Byte])), " ")
	if len(t) > 80 {
		t = t[:77] + "..."
	}
	return t
}

func setOnce(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

func setOnceMap(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}
