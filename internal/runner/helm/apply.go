package helm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	"knit.dev/knit/internal/kube"
	"knit.dev/knit/internal/runner"
)

// Apply installs or upgrades the release with the planned values. A failed
// install is uninstalled (its hooks too) and a failed upgrade rolled back;
// the error names the object that failed and its last status conditions.
// With chart.test, the chart's tests run after it and a failing test fails
// the apply.
func (r *Runner) Apply(ctx context.Context, c runner.Component, p *runner.Plan) (runner.Outputs, error) {
	var saved savedPlan
	if err := r.sealer.ReadJSON(p.File, p.Checksum, &saved); err != nil {
		return nil, err
	}
	if saved.Destroy {
		return runner.Outputs{}, r.Destroy(ctx, c, saved.Inputs)
	}
	ch, err := r.loadChart(ctx, c)
	if err != nil {
		return nil, err
	}
	if digest(ch) != saved.Chart {
		return nil, errors.New("the chart changed since the plan was made: plan again")
	}
	rel, err := r.connect(ctx, c, saved.Inputs)
	if err != nil {
		return nil, err
	}
	cl := rel.cl
	cur, err := rel.current()
	if err != nil {
		return nil, err
	}
	var out *release.Release
	if cur == nil {
		// A release that failed before has history but nothing deployed: start over.
		if h, _ := rel.cfg.Releases.History(rel.name); len(h) > 0 {
			if err := rel.uninstall(ctx, cl); err != nil {
				return nil, fmt.Errorf("remove failed release %s: %w", rel.name, err)
			}
		}
		// The chart's crds/ CRDs first, as Helm's install does, but server-side
		// applied and waited for until Established, a bounded wait.
		crds, err := r.installCRDs(c, ch)
		if err != nil {
			return nil, err
		}
		missing, err := missingCRDs(ctx, cl, crds)
		if err != nil {
			return nil, err
		}
		if err := rel.createCRDs(ctx, missing, c.Log); err != nil {
			return nil, err
		}
		if err := rel.ensureNamespace(ctx); err != nil {
			return nil, err
		}
		inst := action.NewInstall(rel.cfg)
		inst.ReleaseName, inst.Namespace, inst.SkipCRDs = rel.name, rel.ns, true
		inst.Wait, inst.Timeout = c.Def.Chart.Wait, rel.timeout
		out, err = inst.RunWithContext(ctx, ch, saved.Values)
		if err != nil {
			why := rel.explain(ctx, cl, out, err)
			fmt.Fprintf(c.Log, "install of %s failed: %v\n", rel.name, why)
			if uerr := rel.uninstall(ctx, cl); uerr != nil {
				return nil, fmt.Errorf("install %s: %w (and removing it failed: %v)", rel.name, why, uerr)
			}
			return nil, fmt.Errorf("install %s: %w (rolled back: the release and its hooks were removed)", rel.name, why)
		}
	} else {
		up := rel.upgradeAction()
		up.Wait, up.Timeout = c.Def.Chart.Wait, rel.timeout
		out, err = up.RunWithContext(ctx, rel.name, ch, saved.Values)
		if err != nil {
			why := rel.explain(ctx, cl, out, err)
			fmt.Fprintf(c.Log, "upgrade of %s failed: %v\n", rel.name, why)
			now, err := rel.rollback(c, cur, why)
			if now != nil {
				if uerr := r.updateRevision(c, now); uerr != nil {
					fmt.Fprintf(c.Log, "record revision %d: %v\n", now.Version, uerr)
				}
			}
			return nil, err
		}
	}
	fmt.Fprintf(c.Log, "release %s in %s: revision %d, %s\n", out.Name, out.Namespace, out.Version, out.Info.Status)
	outs, err := r.saveOutputs(ctx, c, rel, out)
	if err != nil {
		return nil, err
	}
	if c.Def.Chart.Test {
		if err := rel.test(ctx, cl, c.Log); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// rollback returns the release to cur after a failed upgrade. Helm records
// the rollback as a new revision, which it returns.
func (rel *helmRelease) rollback(c runner.Component, cur *release.Release, why error) (*release.Release, error) {
	rb := action.NewRollback(rel.cfg)
	rb.Version, rb.Timeout, rb.Wait, rb.MaxHistory = cur.Version, rel.timeout, c.Def.Chart.Wait, rel.maxHistory
	if rerr := rb.Run(rel.name); rerr != nil {
		return nil, fmt.Errorf("upgrade %s: %w (and rolling back failed: %v)", rel.name, why, rerr)
	}
	now, err := rel.current()
	if err != nil || now == nil {
		return nil, fmt.Errorf("upgrade %s: %w (rolled back to revision %d)", rel.name, why, cur.Version)
	}
	return now, fmt.Errorf("upgrade %s: %w (rolled back to revision %d's release, now revision %d)", rel.name, why, cur.Version, now.Version)
}

// updateRevision gives the saved outputs the revision and status of now,
// so that the revision output stays Helm's after a rollback.
func (r *Runner) updateRevision(c runner.Component, now *release.Release) error {
	file := filepath.Join(c.WorkDir, outputsFile)
	outs, err := kube.LoadOutputs(r.sealer, file)
	if err != nil || len(outs) == 0 {
		return err
	}
	outs["revision"] = runner.Output{Value: int64(now.Version)}
	outs["status"] = runner.Output{Value: now.Info.Status.String()}
	return kube.SaveOutputs(r.sealer, file, outs)
}

// uninstall removes the release, waits until its objects are gone, then
// deletes the hooks it left behind (a failed hook Job survives Helm's
// uninstall) and waits for them too.
func (rel *helmRelease) uninstall(ctx context.Context, cl *kube.Client) error {
	hooks, err := rel.leftoverHooks(ctx, cl)
	if err != nil {
		return err
	}
	un := action.NewUninstall(rel.cfg)
	un.Timeout, un.Wait = rel.timeout, true
	if _, err := un.Run(rel.name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return rel.log.explain(err)
	}
	// Hooks of the uninstall itself (pre/post-delete) are leftovers too.
	return rel.deleteAndWait(ctx, cl, hooks)
}

func (r *Runner) saveOutputs(ctx context.Context, c runner.Component, rel *helmRelease, out *release.Release) (runner.Outputs, error) {
	outs, err := kube.DeclaredOutputs(ctx, rel.cl, c.Def, rel.ns)
	if err != nil {
		return nil, err
	}
	outs["release"] = runner.Output{Value: out.Name}
	outs["namespace"] = runner.Output{Value: out.Namespace}
	outs["revision"] = runner.Output{Value: int64(out.Version)}
	outs["status"] = runner.Output{Value: out.Info.Status.String()}
	return outs, kube.SaveOutputs(r.sealer, filepath.Join(c.WorkDir, outputsFile), outs)
}

// Destroy uninstalls the release, deletes the hooks it left behind and the
// namespace knit created for it, and waits until all of them are gone (at
// most chart.timeout; the error names what is still terminating). What
// Helm's uninstall keeps stays, and the log says what and why (see
// teardownSplit); so does the namespace while kept objects live in it. A
// release that does not exist is gone already.
func (r *Runner) Destroy(ctx context.Context, c runner.Component, in runner.Inputs) error {
	rel, err := r.connect(ctx, c, in)
	if err != nil {
		return err
	}
	cl := rel.cl
	cur, err := rel.current()
	if err != nil {
		return err
	}
	_, kept, err := rel.teardownSplit(ctx, cur)
	if err != nil {
		return err
	}
	keptNS, err := rel.keptNamespace(ctx, kept)
	if err != nil {
		return err
	}
	if err := rel.uninstall(ctx, cl); err != nil {
		return fmt.Errorf("uninstall %s: %w", rel.name, err)
	}
	fmt.Fprintf(c.Log, "uninstalled %s from %s\n", rel.name, rel.ns)
	if keptNS != nil {
		if err := rel.disown(ctx); err != nil {
			return err
		}
		kept = append(kept, *keptNS)
	} else if removed, err := rel.removeNamespace(ctx); err != nil {
		return err
	} else if removed {
		fmt.Fprintf(c.Log, "deleted namespace %s (knit created it for %s)\n", rel.ns, rel.owner)
	}
	logKept(kept, c.Log)
	if err := os.Remove(filepath.Join(c.WorkDir, outputsFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Outputs returns the outputs recorded by the last apply.
func (r *Runner) Outputs(_ context.Context, c runner.Component) (runner.Outputs, error) {
	return kube.LoadOutputs(r.sealer, filepath.Join(c.WorkDir, outputsFile))
}
