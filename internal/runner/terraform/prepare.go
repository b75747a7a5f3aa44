package terraform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"knit.dev/knit/internal/runner"
)

// prepared is a component's work dir made ready for the tool.
type prepared struct {
	layout *layout
	// dir is the folder the tool runs in.
	dir string
	s   *session
}

// prepare lays out the module folder (copy-on-change) and runs init when
// its inputs changed.
func (r *Runner) prepare(ctx context.Context, c runner.Component, in runner.Inputs) (*prepared, error) {
	l, err := r.layout(ctx, c, in)
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
	if err := syncDir(l, filepath.Join(wd, moduleDir)); err != nil {
		return nil, fmt.Errorf("copy module: %w", err)
	}
	p := &prepared{layout: l, dir: filepath.Join(wd, moduleDir, filepath.FromSlash(l.sub))}
	encrypted, err := r.encrypts(wd, l)
	if err != nil {
		return nil, err
	}
	extra, err := r.toolEnv(encrypted, l.secret)
	if err != nil {
		return nil, err
	}
	p.s = r.session(p.dir, c.Log, extra)
	r.warnUnencrypted(c.Log, wd, c)
	return p, r.initIfNeeded(ctx, wd, p)
}

// initKey hashes what init depends on: the binary, its CLI config and
// version, the plugin cache, every configuration file of the module
// (.tf/.tf.json/.tofu/.tofu.json anywhere in it, and the lock file from the
// source), and the lock file now in the run folder (the tool writes it).
// Variables, overlays that are not configuration, and inputs do not count.
func (r *Runner) initKey(p *prepared) (string, error) {
	tool := fmt.Sprintf("%s|%s|%s|%s", r.bin.Path, r.bin.CLIConfig, r.opts.ToolVersion, r.pluginCache())
	sum, err := r.layoutHash(p.layout, tool, configFile)
	if err != nil {
		return "", err
	}
	lock, err := os.ReadFile(filepath.Join(p.dir, lockFile))
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	h := sha256.Sum256(append([]byte(sum+"\n"), lock...))
	return hex.EncodeToString(h[:]), nil
}

// initIfNeeded runs init unless the stamp in the work dir says it already
// ran with the same inputs and .terraform is still there. The stamp is
// removed before init and written only after it succeeds, so an interrupted
// init runs again next time.
func (r *Runner) initIfNeeded(ctx context.Context, wd string, p *prepared) error {
	stamp := filepath.Join(wd, stampFile)
	key, err := r.initKey(p)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(stamp); err == nil && string(old) == key && exists(filepath.Join(p.dir, ".terraform")) {
		return nil
	}
	if err := os.Remove(stamp); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.MkdirAll(r.pluginCache(), 0o755); err != nil {
		return err
	}
	unlock, err := r.initLock(ctx)
	if err != nil {
		return fmt.Errorf("init: plugin cache lock: %w", err)
	}
	r.inits.Add(1)
	err = p.s.run(ctx, initArgs(), nil)
	unlock()
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if key, err = r.initKey(p); err != nil {
		return err
	}
	return os.WriteFile(stamp, []byte(key), 0o644)
}
