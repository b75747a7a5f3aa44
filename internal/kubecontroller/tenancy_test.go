package kubecontroller_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/kubecontroller"
	"knit.dev/knit/internal/store"
)

// TestObjectNamingAnotherTeamIsRefused: in a namespace that acts for team
// qa (--team-for-namespace), an object naming team ops is Stalled
// OtherTeam with a message naming both teams, nothing runs, knit's store
// has no ops environment, and deleting the object destroys nothing.
func TestObjectNamingAnotherTeamIsRefused(t *testing.T) {
	h := start(t)
	h.apply(taker("ops", ""))
	e := h.stalledWith("taker", kubecontroller.ReasonOtherTeam, "team qa", "teamName ops", "--team-for-namespace")
	if _, ok := readFile(t, filepath.Join(h.files, "object.txt")); ok {
		t.Error("the object's component ran")
	}
	if _, err := knit.NewRecords(h.k).EnvironmentRecord(context.Background(), "ops/prod"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ops/prod in the store: %v", err)
	}
	if err := h.c.Delete(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	h.waitGone("taker")
}

// TestUnmappedNamespaceRunsNothing: with no --team-for-namespace for its
// namespace and no --default-team, an object is Stalled
// NamespaceNotMapped, naming the flags; with --default-team qa the same
// object of team qa applies.
func TestUnmappedNamespaceRunsNothing(t *testing.T) {
	h := startWith(t, func(h *harness, o *kubecontroller.Options) { o.Tenancy = kubecontroller.Tenancy{} })
	h.apply(taker("qa", ""))
	h.stalledWith("taker", kubecontroller.ReasonNamespaceNotMapped, h.ns, "--team-for-namespace "+h.ns+"=TEAM", "--default-team")
	if _, ok := readFile(t, filepath.Join(h.files, "object.txt")); ok {
		t.Error("the object's component ran")
	}

	d := startWith(t, func(h *harness, o *kubecontroller.Options) { o.Tenancy = kubecontroller.Tenancy{DefaultTeam: "qa"} })
	d.apply(taker("qa", ""))
	d.waitEnv("taker", "Ready=True with --default-team qa", condIs(kubecontroller.CondReady, "True"))
	if got, _ := readFile(t, filepath.Join(d.files, "object.txt")); got != "object\n" {
		t.Errorf("object.txt = %q", got)
	}
}
