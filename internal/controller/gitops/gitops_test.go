package gitops_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/controller/gitops"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/testtools"
)

const hangGuard = 15 * time.Second

func envDoc(name string) string {
	return strings.ReplaceAll(`
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: pay
  envName: NAME
  autoApprove: true
  components:
    - name: db
      type: script
      script: {apply: "true"}
`, "NAME", name)
}

// start is one run the reconciler queued, and how to answer whether it
// started.
type start struct {
	req     knit.RunRequest
	env     string
	onStart func(error)
}

// queue hands every run the reconciler queues to the test.
type queue struct{ starts chan start }

func (q *queue) EnqueueWith(req knit.RunRequest, env string, onStart func(error)) (string, error) {
	q.starts <- start{req, env, onStart}
	return knit.NewRunID(), nil
}

func (q *queue) next(t *testing.T) start {
	t.Helper()
	select {
	case s := <-q.starts:
		return s
	case <-time.After(hangGuard):
		t.Fatal("the reconciler queued nothing")
		return start{}
	}
}

// repoOfOne is a repository whose one commit adds envs/one.yaml, and a
// library on a store of its own.
func repoOfOne(t *testing.T) (string, *knit.Knit) {
	t.Helper()
	repo := t.TempDir()
	testtools.RunGit(t, repo, "init", "-q")
	testtools.WriteFiles(t, repo, map[string]string{"envs/one.yaml": envDoc("one")})
	testtools.RunGit(t, repo, "add", "-A")
	testtools.RunGit(t, repo, "commit", "-q", "-m", "add one")
	k, err := adapters.Open(context.Background(), adapters.Config{Config: knit.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return repo, k
}

// TestPollsOnTheClockAndRetriesALockedRun drives the reconciler with an
// injected clock: it polls at start, sees a new commit when its poll
// interval has passed on the clock (no webhook), retries a run an
// environment's lock refused once its backoff has passed, and leaves no
// ticker or timer behind when Run returns.
func TestPollsOnTheClockAndRetriesALockedRun(t *testing.T) {
	repo, k := repoOfOne(t)
	ctx := context.Background()
	fc := clock.NewFake(time.Now())
	q := &queue{starts: make(chan start, 10)}
	g := gitops.New(k, q, gitops.Config{Poll: time.Minute, Clock: fc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config: gitwatch.Config{URL: "file://" + repo, Branch: "main", Path: "envs/", CacheDir: t.TempDir()}})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Run(runCtx) }()

	first := q.next(t)
	if first.env != "pay/one" || first.req.Kind != engine.KindApply || first.req.Source != "git" {
		t.Fatalf("first run: %s %+v", first.env, first.req)
	}
	if g.LastPoll().IsZero() {
		t.Fatal("no poll recorded after the first")
	}
	// Another run holds the environment's lock: the reconciler retries
	// after its backoff (one second at first), on the clock.
	changed := fc.Changed()
	first.onStart(engine.ErrLocked)
	<-changed // the retry's timer is set
	fc.Advance(time.Second)
	retry := q.next(t)
	if retry.env != "pay/one" || retry.req.Commit != first.req.Commit {
		t.Fatalf("retry: %s %+v", retry.env, retry.req)
	}
	retry.onStart(nil)

	testtools.WriteFiles(t, repo, map[string]string{"envs/two.yaml": envDoc("two")})
	testtools.RunGit(t, repo, "add", "-A")
	testtools.RunGit(t, repo, "commit", "-q", "-m", "add two")
	fc.Advance(time.Minute) // the poll interval: no webhook needed
	second := q.next(t)
	if second.env != "pay/two" || !strings.Contains(second.req.Reason, "add two") {
		t.Fatalf("after a poll interval: %s %+v", second.env, second.req)
	}
	second.onStart(nil)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Run did not return")
	}
	if n := fc.Pending(); n != 0 {
		t.Fatalf("%d tickers or timers left after Run returned", n)
	}
}

// TestALeaderKilledAfterItsRunStartedDoesNotApplyTheCommitTwice: the
// reconciler queued a commit's run, the run started (its revision is
// recorded), and the server died before it heard so. The next leader
// finds the want still pending: it marks it done instead of queueing the
// commit's apply again beside the resume of the interrupted run.
func TestALeaderKilledAfterItsRunStartedDoesNotApplyTheCommitTwice(t *testing.T) {
	repo, k := repoOfOne(t)
	ctx := context.Background()
	fc := clock.NewFake(time.Now())
	leader := func() (*queue, func()) {
		q := &queue{starts: make(chan start, 10)}
		g := gitops.New(k, q, gitops.Config{Poll: time.Minute, Clock: fc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Config: gitwatch.Config{URL: "file://" + repo, Branch: "main", Path: "envs/", CacheDir: t.TempDir()}})
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- g.Run(runCtx) }()
		return q, func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	q1, stop1 := leader()
	first := q1.next(t)
	if _, err := knit.NewRun(k, first.req).Run(ctx); err != nil { // it runs; its onStart is never heard
		t.Fatal(err)
	}
	stop1()

	q2, stop2 := leader()
	defer stop2()
	// Two more commits: every run of the pass that saw two is queued
	// before three's (one pass queues every pending want).
	for _, name := range []string{"two", "three"} {
		testtools.WriteFiles(t, repo, map[string]string{"envs/" + name + ".yaml": envDoc(name)})
		testtools.RunGit(t, repo, "add", "-A")
		testtools.RunGit(t, repo, "commit", "-q", "-m", "add "+name)
		fc.Advance(time.Minute)
		for {
			s := q2.next(t)
			if s.env == "pay/one" {
				t.Fatalf("the next leader queued pay/one's commit again: %+v", s.req)
			}
			s.onStart(nil)
			if s.env == "pay/"+name {
				break
			}
		}
	}
}
