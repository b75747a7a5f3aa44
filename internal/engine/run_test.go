package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
)

// blockUntil makes the fake runner's apply of component wait for release
// (or the run's cancellation) and says when it started.
func blockUntil(h *harness, component string) (started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.r.Hook = func(ctx context.Context, op, c string) error {
		if c != component || op != "apply" {
			return nil
		}
		once.Do(func() { close(started) })
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return started, release
}

func TestStartReturnsTheRunIDAtOnceAndCancelByIDInterruptsIt(t *testing.T) {
	h := newHarness(t)
	started, _ := blockUntil(h, "b")
	env := parse(t, diamond)
	r, err := h.e.Start(context.Background(), engine.KindApply, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if r.ID == "" {
		t.Fatal("no run ID")
	}
	if rec, err := h.st.Run(context.Background(), r.ID); err != nil || rec.Status != store.StatusRunning {
		t.Fatalf("run record right after Start: %+v, %v", rec, err)
	}
	<-started
	go func() {
		if err := h.e.Cancel(r.ID); err != nil {
			t.Error(err)
		}
	}()
	res, err := waitRun(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusInterrupted {
		t.Fatalf("status %s, want interrupted", res.Status)
	}
	if rec, _ := h.st.Run(context.Background(), r.ID); rec.Status != store.StatusInterrupted {
		t.Fatalf("stored status %s", rec.Status)
	}
	h.r.Hook = nil
	if res, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"}); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("next run: %v %v", res, err)
	}
	if err := h.e.Cancel("no-such-run"); !errors.Is(err, engine.ErrNoRun) {
		t.Fatalf("cancel of unknown run: %v", err)
	}
}

// waitRun waits for a run with a hang guard.
func waitRun(t *testing.T, r *engine.Run) (*engine.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := r.Wait(ctx)
	if ctx.Err() != nil {
		t.Fatal("run did not finish within a minute")
	}
	return res, err
}

func wideEnv(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: knit.dev/v1\nkind: Environment\nmetadata: {name: wide}\nspec:\n  teamName: t\n  envName: wide\n  autoApprove: true\n  components:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {name: c%02d, type: script, script: {apply: \"true\"}}\n", i)
	}
	return b.String()
}

func TestASubscriberThatNeverReadsMissesEventsAndNeverStopsTheRun(t *testing.T) {
	h := newHarness(t)
	h.e.EventRetention = engine.Retention{Events: 20} // 30 components make well over 20 events
	started, release := blockUntil(h, "c00")
	r, err := h.e.Start(context.Background(), engine.KindApply, parse(t, wideEnv(30)), engine.Options{Actor: "tester", Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	silent := r.Subscribe(0) // never read while the run goes on
	<-started
	close(release)
	res, err := waitRun(t, r)
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("run: %v %v", res, err)
	}
	ev, ok := silent.Next(context.Background())
	if !ok || ev.Kind != engine.Dropped || ev.Missed < 1 {
		t.Fatalf("silent subscriber's first event %+v, want a dropped notice", ev)
	}
	// Then the events kept, up to the end of the run.
	n := 0
	for {
		ev, ok := silent.Next(context.Background())
		if !ok {
			break
		}
		n++
		if ev.Kind == engine.RunFinished && n != 20 {
			t.Fatalf("%d events after the notice, want the 20 kept", n)
		}
	}
}

func TestALateSubscriberGetsTheRunSoFarThenLiveEventsInOrder(t *testing.T) {
	h := newHarness(t)
	started, release := blockUntil(h, "d")
	r, err := h.e.Start(context.Background(), engine.KindApply, parse(t, diamond), engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	<-started // a, b and c are done by now
	sub := r.Subscribe(0)
	var got []engine.Event
	for {
		ev, ok := sub.Next(context.Background())
		if !ok {
			break
		}
		got = append(got, ev)
		if ev.Kind == engine.ComponentStatus && ev.Component == "d" && ev.Status == engine.Applying {
			close(release) // everything after this is live
		}
	}
	if got[0].Kind != engine.RunStarted || got[len(got)-1].Kind != engine.RunFinished {
		t.Fatalf("first %s, last %s", got[0].Kind, got[len(got)-1].Kind)
	}
	for i, ev := range got {
		if ev.Seq != int64(i+1) || ev.RunID != r.ID || ev.Env != "t/diamond" {
			t.Fatalf("event %d: seq %d run %s env %s", i, ev.Seq, ev.RunID, ev.Env)
		}
	}
	if last := got[len(got)-1]; last.RunStatus != store.StatusSucceeded {
		t.Fatalf("run finished %s", last.RunStatus)
	}
	// Resuming after an event misses nothing.
	resumed := r.Subscribe(3)
	if ev, _ := resumed.Next(context.Background()); ev.Seq != 4 {
		t.Fatalf("resume after 3 gave seq %d", ev.Seq)
	}
}

func TestAPanicInASubscriberFailsTheRunAndFreesTheLock(t *testing.T) {
	h := newHarness(t)
	env := parse(t, diamond)
	res, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester", OnEvent: func(ev engine.Event) {
		if ev.Kind == engine.ComponentStatus {
			panic("subscriber broke")
		}
	}})
	if err == nil || !strings.Contains(err.Error(), "panic in event subscriber: subscriber broke") {
		t.Fatalf("run error %v", err)
	}
	if res.Status != store.StatusFailed {
		t.Fatalf("status %s", res.Status)
	}
	if rec, _ := h.st.Run(context.Background(), res.RunID); rec.Status != store.StatusFailed || !strings.Contains(rec.Error, "subscriber broke") {
		t.Fatalf("stored run %+v", rec)
	}
	if res, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"}); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("next run: %v %v", res, err)
	}
}

func TestAPanicInARunnerFailsTheRunAndFreesTheLock(t *testing.T) {
	h := newHarness(t)
	h.r.Hook = func(_ context.Context, op, c string) error {
		if c == "b" {
			panic("runner broke")
		}
		return nil
	}
	env := parse(t, diamond)
	res, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"})
	if err == nil || !strings.Contains(err.Error(), "runner broke") {
		t.Fatalf("run error %v", err)
	}
	if res.Status != store.StatusFailed || res.Component("b").Status != engine.Failed || res.Component("d").Status != engine.Skipped {
		t.Fatalf("status %s, b %s, d %s", res.Status, res.Component("b").Status, res.Component("d").Status)
	}
	h.r.Hook = nil
	if res, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"}); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("next run: %v %v", res, err)
	}
}

func TestTwelveEnvironmentsRunConcurrentlyThroughOneEngine(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			doc := strings.Replace(diamond, "envName: diamond", fmt.Sprintf("envName: e%02d", i), 1)
			res, err := h.e.Apply(context.Background(), parse(t, doc), engine.Options{Actor: "tester"})
			if err != nil || res.Status != store.StatusSucceeded {
				t.Errorf("env %d: %v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
	envs, err := h.st.Environments(context.Background(), store.EnvironmentFilter{})
	if err != nil || len(envs) != 12 {
		t.Fatalf("%d environments, %v", len(envs), err)
	}
}

func TestAnEngineWithoutIdentityCannotTakeALiveLock(t *testing.T) {
	h := newHarness(t)
	started, release := blockUntil(h, "b")
	env := parse(t, diamond)
	r, err := h.e.Start(context.Background(), engine.KindApply, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	anon := &engine.Engine{Store: h.st, Runners: h.e.Runners, DataDir: h.dir}
	if _, err := anon.Apply(context.Background(), env, engine.Options{Actor: "anon"}); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("engine without identity: %v, want ErrLocked", err)
	}
	close(release)
	if _, err := waitRun(t, r); err != nil {
		t.Fatal(err)
	}
	audit, _ := h.st.Audit(context.Background(), store.AuditFilter{Env: env.ID()})
	if !hasAudit(audit, "refused", "") {
		t.Fatal("the refusal is not in the audit trail")
	}
}

func TestToolLogLinesAreEventsWithSecretsMasked(t *testing.T) {
	h := newHarness(t)
	h.r.LogInputs = true // the tool prints its inputs, the token among them
	var mu sync.Mutex
	var lines []string
	res, err := h.e.Apply(context.Background(), parse(t, diamond), engine.Options{Actor: "tester", OnEvent: func(ev engine.Event) {
		if ev.Kind == engine.LogLine && ev.Component == "d" {
			mu.Lock()
			lines = append(lines, ev.Line)
			mu.Unlock()
		}
	}})
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("%v %v", res, err)
	}
	all := strings.Join(lines, "\n")
	if strings.Contains(all, "s3cr3t-token") || !strings.Contains(all, "token=(sensitive value)") || !strings.Contains(all, "url=http://b/a-1") {
		t.Fatalf("d's live log lines:\n%s", all)
	}
}

// TestARunEnsuresTheEnvironmentsFilesFirst: before a run reads anything,
// the engine asks EnsureDir for the environment's folder; when it cannot be
// had, the run fails with why and runs no component.
func TestARunEnsuresTheEnvironmentsFilesFirst(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	env := parse(t, chain4)
	var asked []string
	h.e.EnsureDir = func(_ context.Context, dir string) error {
		asked = append(asked, dir)
		return errors.New("commit abc is gone from the repository")
	}
	res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err == nil || !strings.Contains(err.Error(), "commit abc is gone") {
		t.Fatalf("apply: %v", err)
	}
	if len(asked) != 1 || asked[0] != env.Dir {
		t.Errorf("EnsureDir was asked %q, want %q once", asked, env.Dir)
	}
	if calls := h.r.Calls(""); len(calls) != 0 {
		t.Errorf("runner calls after the files could not be had: %+v", calls)
	}
	if res != nil && res.Status != store.StatusFailed {
		t.Errorf("run status %q", res.Status)
	}
}
