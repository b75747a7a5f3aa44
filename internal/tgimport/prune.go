package tgimport

import (
	"os"
	"path/filepath"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/spec/tfmodule"
)

// pruneUndeclared leaves out the inputs a local module declares no
// variable for. Terragrunt hands inputs to the tool as TF_VAR_ variables,
// which the tool ignores when the module has no such variable (a
// root.hcl's inputs reach every unit); knit refuses a variable the module
// does not declare, so such inputs are listed instead. Git and registry
// modules are not read (the import fetches nothing).
func (t *translation) pruneUndeclared(u *Unit, c *spec.Component) {
	if c.Module == nil || !spec.IsLocalPath(c.Module.Source) {
		return
	}
	dir := filepath.Join(t.o.Dir, filepath.FromSlash(c.Module.Source), filepath.FromSlash(c.Module.Path))
	var extra []tfmodule.Extra
	for _, o := range c.OverlayData {
		extra = append(extra, tfmodule.Extra{Name: o.Name, Data: []byte(o.Data)})
	}
	m, err := tfmodule.Read(os.DirFS(dir), ".", u.Path, extra...)
	if err != nil || m.Incomplete || m.Empty {
		return
	}
	kept := c.Variables[:0]
	for _, v := range c.Variables {
		if _, ok := m.Variables[v.Name]; ok {
			kept = append(kept, v)
			continue
		}
		t.note(u.Path, orPos(u.InputPos[v.Name], u.File), "inputs."+v.Name, "left out: the module declares no such variable (Terragrunt passes it as TF_VAR_"+v.Name+", which the tool ignores)")
	}
	c.Variables = kept
}
