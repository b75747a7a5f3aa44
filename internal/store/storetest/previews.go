package storetest

import (
	"testing"

	"knit.dev/knit/internal/store"
)

func testPreviews(t *testing.T, s store.Store) {
	ctx := t.Context()
	got, err := s.ListPreviews(ctx, store.PreviewFilter{Branch: "feature/a"})
	must(t, err)
	equal(t, "no previews", len(got), 0)

	shop := store.Preview{Branch: "feature/a", Commit: "c1", Env: "shop/dev", Team: "shop", Change: store.PreviewUpdate,
		Status: store.PreviewPlanned, Checksum: "sum1", BaseRevision: 3, RunID: "r1",
		Components: []byte(`[{"name":"app"}]`), Policy: []byte(`{"denied":false}`), CreatedAt: at(1)}
	other := store.Preview{Branch: "feature/a", Commit: "c1", Env: "ops/x", Team: "ops", Change: store.PreviewCreate,
		Status: store.PreviewFailed, Error: "boom", CreatedAt: at(1)}
	later := store.Preview{Branch: "feature/a", Commit: "c2", Env: "shop/dev", Team: "shop", Change: store.PreviewUpdate,
		Status: store.PreviewPlanned, Checksum: "sum2", CreatedAt: at(2)}
	elsewhere := store.Preview{Branch: "feature/b", Commit: "c3", Env: "shop/dev", Team: "shop", Change: store.PreviewDestroy,
		Status: store.PreviewPlanned, Checksum: "sum1", CreatedAt: at(3)}
	for _, p := range []store.Preview{shop, other, later, elsewhere} {
		must(t, s.PutPreview(ctx, p))
	}
	all, err := s.ListPreviews(ctx, store.PreviewFilter{Branch: "feature/a"})
	must(t, err)
	equal(t, "a branch's previews, newest first, then by env", all, []store.Preview{later, other, shop})

	// A team-limited reader sees only its teams' environments.
	ops, err := s.ListPreviews(ctx, store.PreviewFilter{Branch: "feature/a", Teams: []string{"ops"}})
	must(t, err)
	equal(t, "ops only", ops, []store.Preview{other})
	one, err := s.ListPreviews(ctx, store.PreviewFilter{Branch: "feature/a", Commit: "c1", Env: "shop/dev", Teams: []string{"shop", "web"}})
	must(t, err)
	equal(t, "one commit, one env", one, []store.Preview{shop})

	// Every branch's previews of one environment.
	envs, err := s.ListPreviews(ctx, store.PreviewFilter{Env: "shop/dev"})
	must(t, err)
	equal(t, "one env, every branch", envs, []store.Preview{elsewhere, later, shop})

	// The same branch, commit and environment again replaces the preview.
	shop.Status, shop.Checksum, shop.Error = store.PreviewFailed, "", "locked"
	must(t, s.PutPreview(ctx, shop))
	one, err = s.ListPreviews(ctx, store.PreviewFilter{Branch: "feature/a", Commit: "c1", Env: "shop/dev"})
	must(t, err)
	equal(t, "replaced", one, []store.Preview{shop})

	// By checksum: planned previews of the environment only.
	by, err := s.PreviewsByChecksum(ctx, "shop/dev", "sum1")
	must(t, err)
	equal(t, "by checksum", by, []store.Preview{elsewhere})
	by, err = s.PreviewsByChecksum(ctx, "ops/x", "sum1")
	must(t, err)
	equal(t, "another environment's checksum", len(by), 0)
	if err := s.PutPreview(ctx, store.Preview{Branch: "b"}); err == nil {
		t.Error("a preview without commit and environment was stored")
	}
}
