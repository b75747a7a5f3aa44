package cli

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/regsource"
	"knit.dev/knit/internal/spec"
)

// loadEnv loads and validates file. Errors come back as one error carrying
// every diagnostic; warnings go to stderr and do not stop the command.
func (d *deps) loadEnv(file string) (*spec.Environment, error) {
	if file == "" {
		return nil, fmt.Errorf("no environment file: pass -f FILE")
	}
	env, diags := spec.LoadWith(file, d.specOptions())
	if err := diags.Err(); err != nil {
		return nil, err
	}
	for _, w := range diags.Warnings() {
		fmt.Fprintln(d.stderr, w.String())
	}
	return env, nil
}

// specOptions is what validation may know beyond the file: the git
// modules knit has fetched into the data dir (read, never fetched here),
// and git templates, fetched into the same cache. Templates and extended
// files may come from anywhere in the git work tree holding the file.
// Without a data dir, git modules are not checked and git templates not read.
func (d *deps) specOptions() spec.Options {
	dir, err := d.dataDir()
	if err != nil {
		return spec.Options{RepoRoot: true, ValuesSchema: d.valuesSchema()}
	}
	opts := gitOptions(context.Background(), dir)
	opts.RepoRoot = true
	opts.ValuesSchema = d.valuesSchema()
	return opts
}

// gitOptions reads git modules from knit's cache in dataDir, and fetches
// git templates into it.
func gitOptions(ctx context.Context, dataDir string) spec.Options {
	cache := gitsource.InDataDir(dataDir)
	return spec.Options{Fetched: cache.Fetched, FetchedRegistry: regsource.InDataDir(dataDir).Fetched,
		Checkout: func(url, ref string) (string, string, error) {
			return cache.Checkout(ctx, url, ref)
		}}
}
