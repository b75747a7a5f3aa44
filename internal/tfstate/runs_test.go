package tfstate_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools/pgtest"
	"knit.dev/knit/internal/tfstate"
)

// TestALockOfARunThatLostItsEnvironmentIsTakenOver: replica A's run-a
// (holding the environment's lock) applies; its tool is killed (-9) with
// the state lock held, and A's knit stays alive as far as this host can
// tell — as a replica on another machine looks: the dead-PID rule cannot
// judge it. While run-a still holds the environment's lock, B is refused
// naming the lock (no two applies at once). Once a recovery run (run-b)
// has taken the environment's lock over, as a lease ends, B's apply for
// run-b takes the state lock over and applies; the state is then
// unlocked. Before the store judged locks by their run, B's apply failed
// "state is locked" for ever.
func TestALockOfARunThatLostItsEnvironmentIsTakenOver(t *testing.T) {
	pg := pgtest.Start(t)
	dsn := pg.DB(t)
	env := environment(t, blockingModule)
	a := newReplica(t, openPG(t, dsn), env)
	b := newReplica(t, openPG(t, dsn), env)
	ctx := context.Background()
	dir := t.TempDir()
	in := func(n int) runner.Inputs { return runner.Inputs{"password": secret, "n": n, "dir": dir} }
	hold := func(run, host string) {
		t.Helper()
		l := store.Lock{Env: env.ID(), RunID: run, Owner: "knit", PID: 1, Host: host}
		if _, err := a.st.AcquireLock(ctx, l, time.Hour, func(store.Lock) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}

	hold("run-a", "machine-a")
	a.c.Run = "run-a"
	t.Cleanup(func() { os.WriteFile(filepath.Join(dir, "go"), nil, 0o600) }) // ends the orphaned provisioner
	done := make(chan error, 1)
	go func() { _, _, err := a.r.PlanApply(ctx, a.c, in(1)); done <- err }()
	waitFile(t, filepath.Join(dir, "started"), done)
	_, l, err := a.st.TFState(ctx, "team/prod/db")
	if l.ID == "" || l.Run != "run-a" {
		t.Fatalf("state lock while A applies: %+v, %v; want one recorded for run-a", l, err)
	}
	killTool(t, dir, done)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// run-a still holds the environment: its state lock stands (even
	// against a tool of run-a's on another replica); a run that does not
	// hold the environment reaches nothing.
	var locked *terraform.StateLockedError
	if _, _, err := b.r.PlanApply(ctx, b.c, in(1)); err == nil || !strings.Contains(err.Error(), "invalid auth") {
		t.Fatalf("B for a run that does not hold the environment: %v, want the state refused (403)\n%s", err, b.log)
	}
	b.c.Run = "run-a"
	if _, _, err := b.r.PlanApply(ctx, b.c, in(1)); !errors.As(err, &locked) || locked.ID != l.ID {
		t.Fatalf("B while run-a holds the environment: %v, want the state locked by %s\n%s", err, l.ID, b.log)
	}

	// The recovery run took the environment's lock over: the lock is stale.
	hold("run-b", "machine-b")
	b.c.Run = "run-b"
	if _, _, err := b.r.PlanApply(ctx, b.c, in(1)); err != nil {
		t.Fatalf("the recovery run's apply: %v\n%s", err, b.log)
	}
	if _, l, err := b.st.TFState(ctx, "team/prod/db"); err != nil || l.ID != "" {
		t.Fatalf("state lock after the recovery apply: %+v, %v; want unlocked", l, err)
	}
	p, err := b.r.Plan(ctx, b.c, in(1), runner.PlanOptions{})
	if err != nil || p.HasChanges() {
		t.Fatalf("plan after the recovery: %+v, %v; want no changes\n%s", p, err, b.log)
	}
}

// TestAGrantNamesItsRun: the run a tool locks for is the one its grant
// names: a password of one run's grant does not open the state under
// another run's name (nor with none), and a LOCK records the grant's run.
func TestAGrantNamesItsRun(t *testing.T) {
	st := openSQLite(t)
	srv, err := tfstate.Start(st)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const key = "team/prod/db"
	if _, err := st.AcquireLock(t.Context(), store.Lock{Env: "team/prod", RunID: "run-a"}, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	g := srv.Grant(key, "run-a", true)
	if g["TF_HTTP_USERNAME"] != "knit run run-a" {
		t.Fatalf("user name %q, want it to name run-a", g["TF_HTTP_USERNAME"])
	}
	send := func(user string) int {
		req, err := http.NewRequest("LOCK", srv.Addr()+"/state/"+key, bytes.NewReader(lockBody("l1")))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, g["TF_HTTP_PASSWORD"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, user := range []string{"knit run run-b", "knit", "knit run ", "knit read run-a"} {
		if code := send(user); code != http.StatusUnauthorized {
			t.Errorf("LOCK as %q with run-a's password: %d, want 401", user, code)
		}
	}
	if code := send("knit run run-a"); code != http.StatusOK {
		t.Fatalf("LOCK with run-a's grant: %d", code)
	}
	if _, l, _ := st.TFState(t.Context(), key); l.ID != "l1" || l.Run != "run-a" {
		t.Errorf("lock %+v, want l1 for run-a", l)
	}
}
