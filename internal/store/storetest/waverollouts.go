package storetest

import (
	"context"
	"errors"
	"testing"

	"knit.dev/knit/internal/store"
)

// testWaveRollouts: a set's rollout is written only from the version its
// writer read, with its audit entry in the same transaction.
func testWaveRollouts(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.WaveRollout(ctx, "shop/fleet"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a rollout before any: %v", err)
	}
	r := store.WaveRollout{ID: "shop/fleet", Team: "shop", State: []byte(`{"wave":0}`)}
	must(t, s.PutWaveRollout(ctx, r, nil))
	if err := s.PutWaveRollout(ctx, r, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second write from version 0: %v, want ErrConflict", err)
	}
	got, err := s.WaveRollout(ctx, "shop/fleet")
	must(t, err)
	if got.Version != 1 || string(got.State) != `{"wave":0}` || got.UpdatedAt.IsZero() {
		t.Fatalf("rollout %+v", got)
	}
	got.State = []byte(`{"wave":1}`)
	must(t, s.PutWaveRollout(ctx, got, &store.AuditEvent{Env: "shop/fleet", Actor: "ann", Action: "fleet-skip"}))
	must(t, s.PutWaveRollout(ctx, store.WaveRollout{ID: "ops/infra", Team: "ops", State: []byte(`{}`)}, nil))
	shop, err := s.ListWaveRollouts(ctx, "shop")
	must(t, err)
	all, err := s.ListWaveRollouts(ctx, "")
	must(t, err)
	if len(shop) != 1 || shop[0].Version != 2 || string(shop[0].State) != `{"wave":1}` || len(all) != 2 || all[0].ID != "ops/infra" {
		t.Fatalf("shop's %+v, all %+v", shop, all)
	}
	audit, err := s.Audit(ctx, store.AuditFilter{Env: "shop/fleet"})
	must(t, err)
	if len(audit) != 1 || audit[0].Action != "fleet-skip" {
		t.Fatalf("audit %+v", audit)
	}
}
