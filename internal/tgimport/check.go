package tgimport

import (
	"fmt"
	"path/filepath"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/spec"
)

// Check renders each environment as the YAML file the import writes
// (into Text) and validates it as knit validate would the file written in
// dir, with opts. It returns every environment's problems together.
func Check(res *Result, dir string, opts spec.Options) diag.Diagnostics {
	var all diag.Diagnostics
	for i := range res.Environments {
		im := &res.Environments[i]
		text, err := spec.Render(im.Env, "yaml", false)
		if err != nil {
			all = append(all, diag.Diagnostic{Severity: diag.Error, Pos: diag.Pos{File: im.File}, Message: fmt.Sprintf("render environment %s: %v", im.Env.Spec.EnvName, err)})
			continue
		}
		im.Text = text
		_, diags := spec.ParseWith(filepath.Join(dir, im.File), dir, "", text, opts)
		all = append(all, diags...)
	}
	return all
}
