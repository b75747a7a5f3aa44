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
// backend of the module's own, the tool always runs. When the module's source
// can no longer be read (its folder was deleted with the component), Destroy
// falls back to the module copy from the component's last run.
func (r *Runner) Destroy(ctx context.Context, c runner.Component, in runner.Inputs) error {
	wd, err := workDir(c)
	if err != nil {
		return err
	}
	// Shared state is not on this disk: the tool looks.
	hasState := r.opts.States != nil || stateHasResources(filepath.Join(wd, stateFile))
	l, err := r.fingerprinted(ctx, wd, c, in)
	if err != nil {
		return r.destroyLastCopy(ctx, c, in, hasState, err)
	}
	if !l.ownBackend && !hasState {
		fmt.Fprintf(c.Log, "knit: %s has no resources in its state; nothing to destroy\n", compName(c))
		return nil
	}
	p, err := r.prepareLayout(ctx, c, l)
	if err != nil {
		return wrap("destroy", c, err)
	}
	return r.withInit(ctx, p, func() error { return r.destroy(ctx, c, p.dir, p.s) })
}

// destroyLastCopy destroys with the module copy a previous run left, when
// the source cannot be read (srcErr). Without such a copy srcErr is
// returned: knit cannot tell whether a backend of the module's own holds
// resources, and never reports a destroy it did not do.
func (r *Runner) destroyLastCopy(ctx context.Context, c runner.Component, in runner.Inputs, hasState bool, srcErr error) error {
	dir, err := runDir(c)
	if err != nil || !exists(filepath.Join(dir, ".terraform")) {
		return wrap("destroy", c, srcErr)
	}
	if exists(filepath.Join(dir, backendFile)) && !hasState {
		fmt.Fprintf(c.Log, "knit: %s has no resources in its state; nothing to destroy\n", compName(c))
		return nil
	}
	fmt.Fprintf(c.Log, "knit: cannot read %s's module source (%v); destroying with the copy from its last run\n", compName(c), srcErr)
	_, secret := splitSecret(in, c.Sensitive)
	s, err := r.markedSession(c, dir, secret)
	if err != nil {
		return wrap("destroy", c, err)
	}
	return r.destroy(ctx, c, dir, s)
}

// destroy runs the tool's destroy (destroyArgs) in dir: one process, and
// the push of a state it could not write.
func (r *Runner) destroy(ctx context.Context, c runner.Component, dir string, s *session) error {
	_, err := s.writing().stream(ctx, destroyArgs())
	if perr := r.pushErrored(ctx, c, dir, s.readOnly); err == nil {
		err = perr
	}
	return wrap("destroy", c, err)
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
		Resources     []json.RawMessage `json:"resources"`
		EncryptedData json.RawMessage   `json:"encrypted_data"`
	}
	if err != nil || json.Unmarshal(data, &st) != nil || st.EncryptedData != nil {
		return true // unreadable, or encrypted: let the tool look
	}
	return len(st.Resources) > 0
}
