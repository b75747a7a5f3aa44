package queuetest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// testResumeRollback: a rollback from revision 2 back to revision 1 dies
// after it recorded its target (revision 3, revision 1's spec) and
// before it recorded it applied (revision 2, the bad one, still is), or
// after; its resume is a rollback that ends with revision 1's spec
// applied, never an apply of revision 2 again.
func testResumeRollback(t *testing.T, newQueue New) {
	h := newQueue(t, Setup{Max: 4})
	ctx := context.Background()
	dead := deadPID(t)
	host, _ := os.Hostname()
	type tc struct {
		name, env, crashed string
		markedApplied      bool
		target             store.Revision
	}
	cases := []*tc{{name: "before"}, {name: "after", markedApplied: true}}
	for _, c := range cases {
		c.env = applied(t, h, "ops", "back-"+c.name)
		reapply(t, h, "ops", "back-"+c.name)
		first, err := h.Store.Revision(ctx, c.env, 1)
		if err != nil {
			t.Fatal(err)
		}
		// What the rollback records before it changes anything.
		c.target, err = h.Store.PutRevision(ctx, store.Environment{ID: c.env, Team: "ops", Name: "back-" + c.name},
			store.Revision{Env: c.env, Hash: first.Hash, Source: first.Source, Spec: first.Spec, Root: first.Root, CreatedAt: time.Now()})
		if err != nil || c.target.Number != 3 {
			t.Fatalf("record the rollback's target: %+v %v", c.target, err)
		}
		if c.markedApplied {
			if err := h.Store.SetAppliedRevision(ctx, c.env, c.target.Number); err != nil {
				t.Fatal(err)
			}
		}
		c.crashed = crashAt(t, h, store.Run{Env: c.env, Kind: engine.KindRollback, Revision: c.target.Number}, host, dead)
	}
	h.Start(t)
	for _, c := range cases {
		waitFor(t, c.env+"'s resume", func() bool { return recovery(t, h, c.env) != nil })
		r := ended(t, h, recovery(t, h, c.env).ID)
		if r.Kind != engine.KindRollback || r.Status != store.StatusSucceeded {
			t.Errorf("%s: a rollback interrupted %s recording its target applied resumed as %s (%s, %s), want a rollback that succeeded",
				c.env, c.name, r.Kind, r.Status, r.Error)
		}
		e, err := h.Store.Environment(ctx, c.env)
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.Store.Revision(ctx, c.env, e.AppliedRevision)
		if err != nil {
			t.Fatal(err)
		}
		if got.Hash != c.target.Hash {
			t.Errorf("%s: after the resume revision %d is applied, not revision 1's spec (the rollback's target %d)",
				c.env, e.AppliedRevision, c.target.Number)
		}
	}
}

// reapply applies a second revision of env name of team (its script
// changed) through the library.
func reapply(t *testing.T, h Harness, team, name string) {
	t.Helper()
	doc := strings.Replace(envDoc(team, name), `apply: "true"`, `apply: "echo v2"`, 1)
	env, diags := spec.Parse(name+".yaml", t.TempDir(), []byte(doc))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res, err := knit.NewRun(h.Knit, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Run(context.Background())
	if err != nil || res.Status != store.StatusSucceeded || res.Revision != 2 {
		t.Fatalf("apply revision 2 of %s: %+v %v", env.ID(), res, err)
	}
}
