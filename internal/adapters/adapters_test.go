package adapters_test

import (
	"context"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/sqlite"
)

// TestOpenWiresTheShippedAdapters: Open with only a data dir keeps knit's
// records in the SQLite file there (and Close closes it, so another
// process opens it), and gives every component type a runner.
func TestOpenWiresTheShippedAdapters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := adapters.Open(ctx, adapters.Config{}); err == nil {
		t.Fatal("Open without a data dir succeeded")
	}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.CreateToken(ctx, "ci", "viewer", nil, "test"); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if toks, err := st.ListTokens(ctx); err != nil || len(toks) != 1 {
		t.Fatalf("tokens in %s's SQLite file: %+v, %v", dir, toks, err)
	}
	runners := adapters.Runners(ctx, adapters.Tools{DataDir: dir})
	for _, typ := range []string{spec.TypeTerraform, spec.TypeScript, spec.TypeHelm, spec.TypeManifests} {
		if runners[typ] == nil {
			t.Errorf("no runner for %s components", typ)
		}
	}
}
