package terraform

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"knit.dev/knit/internal/runner"
)

// Destroy destroys everything the component manages, with its inputs
// present (some modules need variables to destroy). When knit keeps the
// state and it holds no resources (the component was never applied, or was
// already destroyed) Destroy succeeds without running the tool. With a
// backend of the module's own, the tool always runs.
func (r *Runner) Destroy(ctx context.Context, c runner.Component, in runner.Inputs) error {
	l, err := r.layout(ctx, c, in)
	if err != nil {
		return wrap("destroy", c, err)
	}
	wd, err := workDir(c)
	if err != nil {
		return err
	}
	if !l.ownBackend && !stateHasResources(filepath.Join(wd, stateFile)) {
		fmt.Fprintf(c.Log, "knit: %s has no resources in its state; nothing to destroy\n", name(c))
		return nil
	}
	p, err := r.prepare(ctx, c, in)
	if err != nil {
		return wrap("destroy", c, err)
	}
	// tfexec's flags: -no-color -auto-approve -input=false -lock=true
	// -refresh=true; the refresh lets the tool skip objects already gone.
	if err := p.s.loud().Destroy(ctx); err != nil {
		return wrap("destroy", c, err)
	}
	return nil
}

// stateHasResources reports whether the local state file at p records any
// resource. A missing file has none; an unreadable one is assumed to have
// some, so Destroy runs the tool rather than skip real resources.
func stateHasResources(p string) bool {
	data, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return false
	}
	var st struct {
		Resources []json.RawMessage `json:"resources"`
	}
	if err != nil || json.Unmarshal(data, &st) != nil {
		return true
	}
	return len(st.Resources) > 0
}
