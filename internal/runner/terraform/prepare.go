package terraform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"knit.dev/knit/internal/runner"
)

// prepared is a component's work dir made ready for the tool.
type prepared struct {
	layout *layout
	// wd is the work dir; dir the folder the tool runs in.
	wd, dir string
	s       *session
	// initRan is true when this preparation ran init.
	initRan bool
}

// prepare lays out the module folder (copy-on-change) and runs init when
// what init depends on changed. It uses the layout the component's
// fingerprint collected, if that came just before with the same inputs.
func (r *Runner) prepare(ctx context.Context, c runner.Component, in runner.Inputs) (*prepared, error) {
	wd, err := workDir(c)
	if err != nil {
		return nil, err
	}
	l, err := r.fingerprinted(ctx, wd, c, in)
	if err != nil {
		return nil, err
	}
	return r.prepareLayout(ctx, c, l)
}

// prepareLayout is prepare with the layout already collected.
func (r *Runner) prepareLayout(ctx context.Context, c runner.Component, l *layout) (*prepared, error) {
	wd, err := workDir(c)
	if err != nil {
		return nil, err
	}
	if err := syncDir(l, filepath.Join(wd, moduleDir), filepath.Join(wd, syncedFile)); err != nil {
		return nil, fmt.Errorf("copy module: %w", err)
	}
	if err := r.saveConfigs(wd, l); err != nil {
		return nil, err
	}
	p := &prepared{layout: l, wd: wd, dir: runFolder(wd, l.sub)}
	if c.Sandbox != nil {
		return p, r.prepareSandboxed(ctx, c, p)
	}
	encrypted, err := r.crypt.encrypts(wd, l)
	if err != nil {
		return nil, err
	}
	shared, err := r.state.shares(wd, l)
	if err != nil {
		return nil, err
	}
	if shared {
		if err := r.state.importLocal(ctx, c, wd, p.dir); err != nil {
			return nil, err
		}
	}
	extra, err := r.crypt.toolEnv(wd, encrypted, l.secret)
	if err != nil {
		return nil, err
	}
	write := r.state.env(c, shared, extra)
	p.s = r.session(p.dir, c.Log, extra, write)
	r.crypt.warnUnencrypted(c.Log, wd, c)
	if err := r.initIfNeeded(ctx, p, false); err != nil {
		return p, err
	}
	return p, r.pushErrored(ctx, c, p.dir, shared)
}

// initKey hashes what init depends on: the binary, its CLI config and
// version, the plugin cache, the parts of the module's configuration that
// declare providers, module calls and the backend (initDigest; the inputs
// too when those refer to variables), every lock file in the layout, and
// the lock file now in the run folder (the tool writes it). Resource
// arguments, outputs, variables files and overlays that are not
// configuration do not count.
func (r *Runner) initKey(p *prepared) (string, error) {
	tool := fmt.Sprintf("%s|%s|%s|%s", r.bin.Path, r.bin.CLIConfig, r.opts.ToolVersion, r.plugins.path)
	locks, err := r.layoutHash(p.layout, tool, func(rel string) bool { return path.Base(rel) == lockFile })
	if err != nil {
		return "", err
	}
	config, err := r.initDigest(p.layout, func() (string, error) {
		if p.layout.inputsUnknown {
			return "", errInputsUnknown
		}
		return r.inputsDigest(p.layout)
	})
	if err != nil {
		return "", err
	}
	lock, err := os.ReadFile(filepath.Join(p.dir, lockFile))
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	h := sha256.Sum256(append([]byte(locks+"\n"+config+"\n"), lock...))
	return hex.EncodeToString(h[:]), nil
}

// inputsDigest hashes the component's inputs, secret ones keyed as in the
// fingerprint, so that the stamp on disk lets nobody test guesses.
func (r *Runner) inputsDigest(l *layout) (string, error) {
	sum, err := r.hashes.sum(l.files[l.runFile(inputsFile)])
	if err != nil {
		return "", err
	}
	secret, err := r.secretDigest(l)
	return sum + " " + secret, err
}

// initIfNeeded runs init unless the stamp in the work dir says it already
// ran with the same key and .terraform is still there; force runs it
// regardless. The stamp is removed before init and written only after it
// succeeds, so an interrupted init runs again next time.
func (r *Runner) initIfNeeded(ctx context.Context, p *prepared, force bool) error {
	stamp := filepath.Join(p.wd, stampFile)
	current, err := r.initCurrent(p)
	if err != nil || (current && !force) {
		return err
	}
	if err := os.Remove(stamp); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.MkdirAll(r.plugins.path, 0o755); err != nil {
		return err
	}
	unlock, err := r.plugins.lock(ctx)
	if err != nil {
		return fmt.Errorf("init: plugin cache lock: %w", err)
	}
	r.inits.Add(1)
	err = p.s.run(ctx, initArgs(), nil)
	unlock()
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	p.initRan = true
	if p.s.sandbox != nil {
		return nil // a sandbox always inits; knit writes no stamp in its folder
	}
	key, err := r.initKey(p)
	if err != nil {
		return err
	}
	return os.WriteFile(stamp, []byte(key), 0o644)
}

// initCurrent reports whether the work dir's stamp says init already ran
// with what it would read now, and .terraform is still there.
func (r *Runner) initCurrent(p *prepared) (bool, error) {
	key, err := r.initKey(p)
	if err != nil {
		return false, err
	}
	old, err := os.ReadFile(filepath.Join(p.wd, stampFile))
	return err == nil && string(old) == key && exists(filepath.Join(p.dir, ".terraform")), nil
}

// withInit runs op, a command in p's folder; should the tool say the
// folder needs init (a change the init key does not see), it runs init and
// op once more.
func (r *Runner) withInit(ctx context.Context, p *prepared, op func() error) error {
	err := op()
	if err == nil || p.initRan || !needsInit(err) {
		return err
	}
	fmt.Fprintf(p.s.log, "knit: the tool asks for init; running it and trying again\n")
	if ierr := r.initIfNeeded(ctx, p, true); ierr != nil {
		return fmt.Errorf("%w (and init: %v)", err, ierr)
	}
	return op()
}

// needsInit recognises the tool's errors that init cures.
func needsInit(err error) bool {
	text := err.Error()
	for _, s := range []string{
		"Module not installed", "Module source has changed", "Module version requirements have changed",
		"Required plugins are not installed", "Inconsistent dependency lock file",
		"Backend initialization required", "Missing required provider",
	} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// secretDigest keys the sensitive inputs with the encryption key: a change
// of one changes the digest, and the digest lets nobody test guesses of a
// short secret. "" when there are none.
func (r *Runner) secretDigest(l *layout) (string, error) {
	if len(l.secret) == 0 {
		return "", nil
	}
	b, err := json.Marshal(l.secret)
	if err != nil {
		return "", err
	}
	return keyedDigest(r.opts.EncryptionKey, b), nil
}
