package knit_test

import (
	"context"
	"strings"
	"testing"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/sqlite"
)

// TestOpenTakesItsStoreAndRunnersFromTheCaller: the library opens no store
// and builds no runner of its own (the caller wires them, as internal/cli's
// adapters.go does); what it writes lands in the store it was given, and
// Close leaves that store to its owner unless handed over.
func TestOpenTakesItsStoreAndRunnersFromTheCaller(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	runners := map[string]runner.Runner{spec.TypeScript: &fake.Runner{}}
	if _, err := knit.Open(ctx, knit.Config{DataDir: dir, Runners: runners}); err == nil || !strings.Contains(err.Error(), "the caller wires them") {
		t.Fatalf("Open without a store: %v, want an error saying the caller wires it", err)
	}
	st, err := sqlite.Open(ctx, t.TempDir()) // not in the data dir: Open must not look there
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := knit.Open(ctx, knit.Config{DataDir: dir, Store: st}); err == nil {
		t.Fatal("Open without runners succeeded")
	}
	k, err := knit.Open(ctx, knit.Config{DataDir: dir, Store: st, Runners: runners})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := knit.NewCreateToken(k, "ci", "viewer", nil, "test").Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	toks, err := st.ListTokens(ctx) // the caller's store: still open, and it holds the token
	if err != nil || len(toks) != 1 || toks[0].Name != "ci" {
		t.Fatalf("tokens in the injected store after Close: %+v, %v", toks, err)
	}
}
