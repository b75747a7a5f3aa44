package spec

import "path/filepath"

// LocalInputs lists the files and folders in the environment's folder that
// component c reads: a local module's source, a local variables file,
// local overlay files, a local chart and its values files, a manifests
// folder, a kubeconfig file. They resolve as the runners resolve them, from
// the environment's folder (Dir). A path that does not resolve is left out:
// validation reports it. GitOps hashes what they hold to tell which
// environments a commit touches.
func (e *Environment) LocalInputs(c *Component) []string {
	var paths []string
	add := func(p string) {
		if full, err := e.LocalPath(p); err == nil {
			paths = append(paths, full)
		}
	}
	if m := c.Module; m != nil && IsLocalPath(m.Source) {
		add(m.Source)
	}
	if vf := c.VariablesFile; vf != nil && vf.Path != "" && (vf.Source == "" || IsLocalPath(vf.Source)) {
		add(filepath.Join(vf.Source, vf.Path))
	}
	for _, o := range c.OverlayFiles {
		if o.Source == "" || IsLocalPath(o.Source) {
			for _, p := range o.Paths {
				add(filepath.Join(o.Source, p))
			}
		}
	}
	if ch := c.Chart; ch != nil {
		if ch.Path != "" && ch.Git == "" && ch.Repo == "" {
			add(ch.Path)
		}
		for _, f := range ch.ValuesFiles {
			add(f)
		}
	}
	if m := c.Manifests; m != nil && m.Path != "" {
		add(m.Path)
	}
	if k := c.Kubeconfig; k != nil && k.Path != "" {
		add(k.Path)
	}
	return paths
}
