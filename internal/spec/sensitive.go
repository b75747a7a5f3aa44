package spec

// SensitiveVariables names the variables of c that its module declares
// sensitive (variable blocks with sensitive = true), when the module's
// files are on this machine: a local module, or a git module opts.Fetched
// finds. Nil when the module cannot be read: callers that show values
// must then decide for themselves (a diff masks by name, see knit).
func (e *Environment) SensitiveVariables(c *Component, opts Options) map[string]bool {
	cp := *e
	cp.opts = opts
	v := &validator{env: &cp}
	mv := v.moduleOf(c)
	if mv == nil || mv.mod == nil {
		return nil
	}
	out := map[string]bool{}
	for name, decl := range mv.mod.Variables {
		if decl.Sensitive {
			out[name] = true
		}
	}
	return out
}
