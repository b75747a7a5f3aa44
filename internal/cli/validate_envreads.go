package cli

import (
	"context"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
)

// checkEnvReads adds to v what the store says of an environment file's
// reads of other environments' outputs (knit.Records.CheckEnvReads): a
// read the producer does not export to the file's team is an error; one
// not there yet, a warning. Without a store to read (none in the data dir,
// none named), the file's own checks are all there is.
func (d *deps) checkEnvReads(ctx context.Context, file string, opts spec.Options, v *validateView) error {
	if v.Kind != spec.KindEnvironment || !v.Valid || d.serverURL() != "" || !d.storeReachable() {
		return nil
	}
	env, _ := spec.LoadWith(file, opts)
	if env == nil || len(env.EnvReads()) == 0 {
		return nil
	}
	return d.withKnit(ctx, "text", func(k *knit.Knit) error {
		ds, err := knit.NewRecords(k).CheckEnvReads(ctx, env)
		if err != nil {
			return err
		}
		all := append(diag.Diagnostics{}, v.Diagnostics...)
		*v = newValidateView(v.File, v.Kind, append(all, ds...), v.summary)
		v.Environment, v.Components = env.ID(), len(env.Spec.Components)
		return nil
	})
}
