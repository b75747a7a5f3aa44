package terraform

import (
	"context"
	"errors"

	"knit.dev/knit/internal/runner"
)

var _ runner.Preparer = (*Runner)(nil)

// errInputsUnknown is initKey's answer for a layout collected without the
// inputs when what init reads depends on them.
var errInputsUnknown = errors.New("init depends on inputs that are not known yet")

// PrepareAhead runs init for a component before its turn, while the
// components it depends on are still running, so that its turn costs one
// tool process. The inputs are not known yet, so the module is laid out
// with an empty inputs file (the turn writes the real one; init does not
// read it) and nothing is done when init would depend on them: a
// configuration that refers to variables where init evaluates them
// (backend, module sources). Nothing is done either when the work dir is
// already initialised for this module: a prepared work dir is not written
// to at all.
//
// The init is the one the turn would have run (same key, same stamp), so
// the turn finds it done and skips it; if it failed, the turn runs it again
// and reports the error there.
func (r *Runner) PrepareAhead(ctx context.Context, c runner.Component) error {
	wd, err := workDir(c)
	if err != nil {
		return err
	}
	l, err := r.layout(ctx, c, nil)
	if err != nil {
		return err
	}
	l.inputsUnknown = true
	current, err := r.initCurrent(&prepared{layout: l, wd: wd, dir: runFolder(wd, l.sub)})
	if errors.Is(err, errInputsUnknown) || (err == nil && current) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = r.prepareLayout(ctx, c, l)
	return err
}
