package queuetest

import (
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// testGivenRunID: a request that names its run ID (a rollout's step,
// recorded in the store under that ID before it is queued) runs under
// that ID: Enqueue returns it, the job and the run's record have it.
func testGivenRunID(t *testing.T, newQueue New) {
	h := newQueue(t, Setup{Max: 2})
	env := applied(t, h, "pay", "named")
	want := knit.NewRunID()
	id, err := h.Queue.Enqueue(knit.RunRequest{Kind: engine.KindApply, EnvRef: env, Actor: "t", Reason: "named", RunID: want}, env)
	if err != nil {
		t.Fatal(err)
	}
	if id != want {
		t.Fatalf("Enqueue of a request naming run %s returned %s", want, id)
	}
	if j, ok := h.Queue.Job(id); !ok || j.ID != want || j.Req.RunID != want {
		t.Fatalf("Job(%s) = %+v %v", id, j, ok)
	}
	h.Start(t)
	if r := ended(t, h, want); r.Status != store.StatusSucceeded || r.Reason != "named" {
		t.Fatalf("the run named %s: %+v", want, r)
	}
}
