package adapters_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/testtools/pgtest"
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
	if _, _, err := knit.NewCreateToken(k, "ci", "viewer", nil, "test").Run(ctx); err != nil {
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

// TestOpenStoreOnPostgres: with a DSN, OpenStore keeps knit's records in
// that PostgreSQL database, sealing with the data dir's knit.key, and
// writes no SQLite file; Open wires the library onto it.
func TestOpenStoreOnPostgres(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dsn := pgtest.Start(t).DB(t)
	st, err := adapters.OpenStore(ctx, dir, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*postgres.Store); !ok {
		st.Close()
		t.Fatalf("OpenStore with a DSN opened a %T", st)
	}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir, Store: st, CloseStore: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := knit.NewCreateToken(k, "ci", "viewer", nil, "test").Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, sqlite.DBFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a SQLite file beside the Postgres store: %v", err)
	}
	key, err := keyfile.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := postgres.Open(ctx, dsn, key)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if toks, err := pg.ListTokens(ctx); err != nil || len(toks) != 1 {
		t.Fatalf("tokens in the Postgres store: %+v, %v", toks, err)
	}
}

// TestOpenTakesTheKeyItIsHanded: a caller that read knit.key once hands
// it over (Tools.Key) and Open reads no key file: the data dir's, made
// unreadable to knit (group-readable, which a read refuses), stands
// unread, while without the key Open reads it and refuses.
func TestOpenTakesTheKeyItIsHanded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	key, err := keyfile.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(keyfile.Path(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir}}); err == nil {
		t.Fatal("Open read a group-readable knit.key")
	}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir}, Tools: adapters.Tools{Key: key}})
	if err != nil {
		t.Fatalf("Open with the key handed over: %v", err)
	}
	k.Close()
}
