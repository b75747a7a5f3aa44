package knit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// A tool that ignores interrupts and leaves a child behind: cancelling the
// run by its ID from another goroutine must leave no process of its group.
func TestCancelByRunIDKillsTheToolsWholeProcessGroup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: filepath.Join(dir, "data"), GracePeriod: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	env := parse(t, strings.NewReplacer("PIDFILE", pidFile).Replace(`
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: c}
spec:
  teamName: t
  envName: c
  autoApprove: true
  components:
    - name: stubborn
      type: script
      script: {apply: "trap '' INT; sleep 300 & echo $$ > PIDFILE; wait"}
`))
	r, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pgid int
	deadline := time.Now().Add(30 * time.Second)
	for pgid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pgid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the script never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	go func() {
		if err := k.Cancel(r.ID); err != nil {
			t.Error(err)
		}
	}()
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := r.Wait(waitCtx)
	if err != nil || res.Status != store.StatusInterrupted {
		t.Fatalf("run: %v %v", res, err)
	}
	// Killed processes linger as zombies until init reaps them: allow that.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) { // a hang guard
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has processes after the run ended (kill -0: %v)", pgid, err)
		}
	}
}
