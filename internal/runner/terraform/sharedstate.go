package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"knit.dev/knit/internal/runner"
)

// StateBackend is where components keep their state when Options.States
// is set: a Terraform HTTP backend every replica reaches (package
// tfstate serves knit's store). A module that declares a backend of its
// own keeps it.
type StateBackend interface {
	// Grant is what the tool's environment needs to reach key's state
	// for run (runner.Component.Run) (TF_HTTP_* settings, a password
	// among them): never written to a file or argv. Without write the
	// grant only reads (the tool must not lock: -lock=false).
	Grant(key, run string, write bool) map[string]string
	// Import stores data as key's state when there is none yet.
	Import(ctx context.Context, key string, data []byte) (bool, error)
	// Push writes data as key's state for run, fenced as the tool's own
	// writes are; stale reports a refusal because the backend's state is
	// newer or unrelated (it stands).
	Push(ctx context.Context, key, run string, data []byte) (stale bool, err error)
}

// sharedMarker, in a component's work dir, says its state lives in the
// shared backend: commands that run without the layout learn it here.
// importedMarker says the state imported from the work dir was plaintext,
// so the tool must still read plaintext (the plaintext fallback).
const (
	sharedMarker   = "shared-state.knit"
	importedMarker = "imported-plaintext.knit"
	// importedFile is the work dir's local state once it is in the store,
	// kept as the operator's backup.
	importedFile = stateFile + ".imported"
)

// httpBackend is the backend override knit writes for shared state: every
// setting comes from the tool's environment (StateBackend.Grant), so
// nothing in the module copy, .terraform or a saved plan names the
// server's address or password, and a replica on another port reads the
// same configuration.
const httpBackend = "# Written by knit: state lives in knit's store, served over HTTP on loopback.\nterraform {\n  backend \"http\" {}\n}\n"

// stateKey is the component's key in the shared backend.
func stateKey(c runner.Component) string { return c.Env + "/" + c.Def.Name }

// sharedState is where the runner keeps components' state in the shared
// backend (Options.States): whether a component does, the grants its
// commands take, and the move of a work dir's local state into it.
type sharedState struct {
	backend StateBackend // nil: state stays in the work dirs
}

// shares reports whether the laid-out component keeps its state in the
// shared backend, and records it in the work dir.
func (r sharedState) shares(wd string, l *layout) (bool, error) {
	on := r.backend != nil && !l.ownBackend
	return on, setMarker(filepath.Join(wd, sharedMarker), on, "this component's state lives in knit's store (HTTP backend)\n")
}

// env is what a command of a component that shares its state adds to
// the tool's environment: a grant that only reads, in m, and the one that
// writes, returned (nil: the state is not shared). A session starts with
// the first; only the commands that change state take the second
// (session.writing).
func (r sharedState) env(c runner.Component, shared bool, m map[string]string) (write map[string]string) {
	if !shared {
		return nil
	}
	for k, v := range r.backend.Grant(stateKey(c), c.Run, false) {
		m[k] = v
	}
	return r.backend.Grant(stateKey(c), c.Run, true)
}

// importLocal moves the state a work dir kept before knit shared it
// (terraform.tfstate beside the module copy) into the store, once: the
// store's state wins when it has one already (another replica, or an
// earlier import). The file is kept as terraform.tfstate.imported, and the
// run folder's record of the local backend removed so that init takes the
// shared one without asking to migrate.
func (r sharedState) importLocal(ctx context.Context, c runner.Component, wd, dir string) error {
	local := filepath.Join(wd, stateFile)
	data, err := os.ReadFile(local)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	done, err := r.backend.Import(ctx, stateKey(c), data)
	if err != nil {
		return fmt.Errorf("import %s into knit's store: %w", local, err)
	}
	var st struct {
		EncryptedData json.RawMessage `json:"encrypted_data"`
	}
	if done && (json.Unmarshal(data, &st) != nil || st.EncryptedData == nil) {
		if err := setMarker(filepath.Join(wd, importedMarker), true, "the state imported into knit's store was plaintext\n"); err != nil {
			return err
		}
	}
	if done {
		fmt.Fprintf(c.Log, "knit: moved %s's local state into knit's store (the file is kept as %s)\n", compName(c), importedFile)
	}
	if err := os.Rename(local, filepath.Join(wd, importedFile)); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, ".terraform", "terraform.tfstate")); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Remove(filepath.Join(wd, stampFile)) // init again, for the new backend
}

// rebuild makes the work dir ready for a command that runs without the
// layout (apply of a saved plan, outputs) when it may be another
// replica's plan: a work dir this replica never had, deleted, or laid out
// for another revision is laid out from the revision and init'ed, as
// PrepareAhead would, with no inputs (the saved plan holds them). A work
// dir whose init is current is left as it is, and so is an initialised
// one whose init depends on inputs (it cannot be judged without them).
func (r *Runner) rebuild(ctx context.Context, c runner.Component) error {
	wd, err := workDir(c)
	if err != nil {
		return err
	}
	l, err := r.layout(ctx, c, nil)
	if err != nil {
		return err
	}
	l.inputsUnknown = true
	dir := runFolder(wd, l.sub)
	current, err := r.initCurrent(&prepared{layout: l, wd: wd, dir: dir})
	if (errors.Is(err, errInputsUnknown) && exists(filepath.Join(dir, ".terraform"))) || (err == nil && current) {
		return nil
	}
	if err != nil && !errors.Is(err, errInputsUnknown) {
		return err
	}
	fmt.Fprintf(c.Log, "knit: %s's work dir is not initialised for this revision here: laying it out\n", compName(c))
	_, err = r.prepareLayout(ctx, c, l)
	return err
}
