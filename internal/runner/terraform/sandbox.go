package terraform

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
)

// A sandboxed component (runner.Component.Sandbox: a preview of a branch
// nobody reviewed) is planned by a tool that holds nothing of knit's:
//
//   - it runs as the sandbox's user, in its work dir (a copy outside the
//     data dir), with an environment of its own (sandboxSession): no
//     TF_ENCRYPTION key, no TF_HTTP_* grant, nothing of knit's or the
//     caller's environment, and no shared plugin cache (init installs the
//     providers from the CLI config's mirror or registry into the copy);
//   - its state is a plaintext copy of the component's, written by knit
//     into the work dir before the tool starts (sandboxState), with every
//     value the state marks sensitive replaced (scrubState), behind a
//     local backend: there is nowhere to write it back, and the plan runs
//     with -lock=false -refresh=false (no provider is asked about the
//     real resources, so no cloud credential is needed or given).

// StateReader is a StateBackend that hands knit a state to copy for a
// sandboxed plan; a sandboxed tool never gets a grant.
type StateReader interface {
	// ReadState returns key's state as stored (nil when there is none).
	ReadState(ctx context.Context, key string) ([]byte, error)
}

// prepareSandboxed makes p's work dir ready for a sandboxed tool (see
// above) and runs init there.
func (r *Runner) prepareSandboxed(ctx context.Context, c runner.Component, p *prepared) error {
	if err := r.sandboxState(ctx, c, p.wd); err != nil {
		return err
	}
	for _, m := range []string{encryptedMarker, sharedMarker, importedMarker, fallbackMarker, stampFile} {
		if err := os.Remove(filepath.Join(p.wd, m)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	// The copy's .terraform links into knit's plugin cache, which the
	// sandbox's user cannot read: init installs again.
	if err := os.RemoveAll(filepath.Join(p.dir, ".terraform")); err != nil {
		return err
	}
	extra, err := r.crypt.toolEnv(p.wd, false, p.layout.secret)
	if err != nil {
		return err
	}
	cli, err := sandboxCLIConfig(r.bin.CLIConfig, p.wd)
	if err != nil {
		return err
	}
	p.s = r.sandboxSession(c, p.dir, p.wd, cli, extra)
	return r.initIfNeeded(ctx, p, true)
}

// sandboxSession is a session whose commands run confined by c.Sandbox,
// with the tool's settings (cli: its CLI config without credentials, see
// sandboxCLIConfig) and extra's TF_VAR_* only.
func (r *Runner) sandboxSession(c runner.Component, dir, wd, cli string, extra map[string]string) *session {
	env := []string{"TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1"}
	if cli != "" {
		env = append(env, "TF_CLI_CONFIG_FILE="+cli)
	}
	for k, v := range extra {
		if strings.HasPrefix(k, "TF_VAR_") {
			env = append(env, k+"="+v)
		}
	}
	sort.Strings(env)
	s := r.session(dir, c.Log, nil, nil)
	s.env, s.sandbox, s.wd = procexec.SandboxEnv(wd, env...), c.Sandbox, wd
	s.wenv = s.env // no grant, to read or to write
	return s
}

// sandboxArgs is args for a sandboxed tool: a plan takes no state lock
// and reads no real resource.
func sandboxArgs(args []string) []string {
	if len(args) > 0 && args[0] == "plan" {
		return append(append([]string{}, args...), "-lock=false", "-refresh=false")
	}
	return args
}

// sandboxState writes the component's state, in plaintext, as the
// sandboxed work dir's local state: from the shared backend when knit
// keeps states there, else the copy's own; nothing when it has none.
func (r *Runner) sandboxState(ctx context.Context, c runner.Component, wd string) error {
	local := filepath.Join(wd, stateFile)
	var data []byte
	var err error
	if r.opts.States != nil {
		rd, ok := r.opts.States.(StateReader)
		if !ok {
			return errors.New("the shared state backend cannot hand a copy of the state to a sandboxed plan")
		}
		data, err = rd.ReadState(ctx, stateKey(c))
	} else if data, err = os.ReadFile(local); os.IsNotExist(err) {
		data, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("the state for the sandboxed plan: %w", err)
	}
	if data == nil {
		if err := os.Remove(local); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	plain, err := decryptState(r.opts.EncryptionKey, data)
	if err != nil {
		return fmt.Errorf("the state for the sandboxed plan: %w", err)
	}
	if plain, err = scrubState(plain); err != nil {
		return fmt.Errorf("the state for the sandboxed plan: %w", err)
	}
	return os.WriteFile(local, plain, 0o600)
}

// decryptState is data, a state OpenTofu encrypted with knit's method
// (aes_gcm under key, no AAD: see encryption), in plaintext; a plaintext
// state is returned as it is.
func decryptState(key, data []byte) ([]byte, error) {
	var payload struct {
		Data    []byte `json:"encrypted_data"`
		Version string `json:"encryption_version"`
	}
	if json.Unmarshal(data, &payload) != nil || payload.Version == "" {
		return data, nil
	}
	if len(key) == 0 {
		return nil, errors.New("the state is encrypted and knit has no key")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	n := gcm.NonceSize()
	if len(payload.Data) < n {
		return nil, errors.New("the encrypted state is too short")
	}
	plain, err := gcm.Open(nil, payload.Data[:n], payload.Data[n:], nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt the state: %w", err)
	}
	return plain, nil
}
