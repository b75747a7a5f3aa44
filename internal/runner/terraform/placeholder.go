package terraform

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"testing/fstest"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec/tfmodule"
)

var _ runner.PlaceholderPlanner = (*Runner)(nil)

// aheadPlanFile is where a plan made with placeholders is saved, for show
// -json only, and removed at once: never planFile, which an approval may
// name and which the component's real plan replaces in its turn.
const aheadPlanFile = "placeholder.tfplan"

// PlanPlaceholders plans c with a placeholder (runner.PlaceholderText)
// standing in for each input in unknown, for a change set that shows a
// component before the upstream its inputs come from is applied. Only a
// variable declared as a string (or of no type) takes one; a module whose
// init reads variables (a backend or module source made of them) takes
// none, since init would then act on the placeholder. The plan is read and
// its file removed: it is never applied, and plan changes no state.
func (r *Runner) PlanPlaceholders(ctx context.Context, c runner.Component, in runner.Inputs, unknown []string, opts runner.PlanOptions) (plan *runner.Plan, err error) {
	if opts.Destroy || opts.RefreshOnly {
		return nil, fmt.Errorf("%w: only a plan of changes takes placeholders", runner.ErrUnsupported)
	}
	l, err := r.layout(ctx, c, nil)
	if err != nil {
		return nil, wrap("plan", c, err)
	}
	l.inputsUnknown = true
	if _, err := r.initDigest(l, func() (string, error) { return "", errInputsUnknown }); err != nil {
		if errors.Is(err, errInputsUnknown) {
			return nil, fmt.Errorf("%w: the module's init reads its variables (backend or module sources), so a placeholder would reach it", runner.ErrUnsupported)
		}
		return nil, wrap("plan", c, err)
	}
	mod, err := l.module()
	if errors.Is(err, runner.ErrUnsupported) {
		return nil, err
	} else if err != nil {
		return nil, wrap("plan", c, err)
	}
	values := maps.Clone(in)
	if values == nil {
		values = runner.Inputs{}
	}
	nonce, err := placeholderNonce()
	if err != nil {
		return nil, wrap("plan", c, err)
	}
	for _, name := range unknown {
		v, ok := mod.Variables[name]
		if !ok {
			return nil, fmt.Errorf("%w: the module declares no variable %s that knit could read", runner.ErrUnsupported, name)
		}
		if values[name], ok = v.Placeholder(runner.PlaceholderText(name) + "-" + nonce); !ok {
			return nil, fmt.Errorf("%w: variable %s is of type %s, for which no placeholder is safe", runner.ErrUnsupported, name, v.TypeSrc)
		}
	}
	// The placeholders go into the inputs file the tool loads by itself:
	// it is put back as it was afterwards, or a saved plan awaiting
	// approval would be refused for variables that differ from its own.
	// A sandbox's work dir is a preview's copy, thrown away after it, and
	// its tool may have put a link where the file was: knit neither
	// reads nor writes it there.
	if c.Sandbox == nil {
		restore, err := keepInputsFile(c, l.sub)
		if err != nil {
			return nil, wrap("plan", c, err)
		}
		defer func() {
			if rerr := restore(); rerr != nil && err == nil {
				plan, err = nil, wrap("plan", c, rerr)
			}
		}()
	}
	p, err := r.prepare(ctx, c, values)
	if err != nil {
		return nil, wrap("plan", c, err)
	}
	file := filepath.Join(p.wd, aheadPlanFile)
	defer os.Remove(file)
	opts.Unsaved = false
	return r.planIn(ctx, c, p, file, opts)
}

// keepInputsFile reads c's inputs file in its run folder sub; restore
// puts it back as it was (removes it if there was none).
func keepInputsFile(c runner.Component, sub string) (restore func() error, err error) {
	wd, err := workDir(c)
	if err != nil {
		return nil, err
	}
	inputs := filepath.Join(runFolder(wd, sub), inputsFile)
	before, readErr := os.ReadFile(inputs)
	if readErr != nil && !os.IsNotExist(readErr) {
		return nil, readErr
	}
	return func() error {
		if readErr != nil {
			_ = os.Remove(inputs)
			return nil
		}
		return os.WriteFile(inputs, before, 0o644)
	}, nil
}

// module reads what the module in the layout's run folder declares, from
// the files the layout holds (overlays included).
func (l *layout) module() (*tfmodule.Module, error) {
	fsys := fstest.MapFS{}
	for rel, f := range l.files {
		if path.Dir(rel) != l.sub || !isConfig(rel) {
			continue
		}
		data, err := f.read()
		if err != nil {
			return nil, err
		}
		fsys[path.Base(rel)] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	mod, err := tfmodule.Read(fsys, ".", l.sub)
	if err != nil {
		return nil, err
	}
	if mod.Incomplete {
		return nil, fmt.Errorf("%w: the module's variable blocks cannot all be read", runner.ErrUnsupported)
	}
	return mod, nil
}

// placeholderNonce ends each plan's placeholders: a real value that
// happens to read as a placeholder (one in the state, a literal input)
// is never the placeholder a plan stands in, so a plan ahead never finds
// "no change" where the real value will change something.
func placeholderNonce() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
