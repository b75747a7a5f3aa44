package gitops

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools"
)

// The benchmarks below measure the reconciler's own CPU time (getrusage of
// this process: git's processes are not counted) per poll, on a real
// repository over file:// and a real SQLite store, every run started at
// once by a queue that only says so. Each reports cpu-ms/op beside the
// wall time; nothing asserts a figure.

const benchTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: web}
spec:
  parameters:
    - {name: size, type: string, default: "1"}
  components:
    - name: app
      type: script
      script: {apply: "echo SIZE ${param.size}"}
`

func benchEnv(i, rev int) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: bench
  envName: e%04d
  template: {path: ../templates/web.yaml}
  parameters: {size: "%d"}
`, i, rev)
}

// startAll is a queue whose runs start at once; envs are the
// environments of the runs queued, in order.
type startAll struct {
	n    int
	envs []string
}

func (q *startAll) EnqueueWith(_ knit.RunRequest, env string, onStart func(error)) (string, error) {
	q.n++
	q.envs = append(q.envs, env)
	go onStart(nil)
	return knit.NewRunID(), nil
}

type benchFleet struct {
	b    testing.TB
	repo string
	g    *Reconciler
	w    *gitwatch.Watcher
	q    *startAll
	rev  int
}

// newBenchFleet is a repository of n environment files built from one
// template, recorded and reconciled: every want started.
func newBenchFleet(b testing.TB, n int) *benchFleet {
	return newFleetOn(b, n, nil)
}

// newFleetOn is newBenchFleet on the store wrap makes of the data dir's
// SQLite store (nil: that store itself).
func newFleetOn(b testing.TB, n int, wrap func(store.Store) store.Store) *benchFleet {
	files := map[string]string{"templates/web.yaml": benchTemplate}
	for i := range n {
		files[fmt.Sprintf("envs/e%04d.yaml", i)] = benchEnv(i, 0)
	}
	f := newRepoFleet(b, files, wrap)
	f.settle(n)
	return f
}

// newRepoFleet is a repository of files (the environment files under
// envs/), its one commit recorded and its runs started.
func newRepoFleet(b testing.TB, files map[string]string, wrap func(store.Store) store.Store) *benchFleet {
	repo := b.TempDir()
	testtools.RunGit(b, repo, "init", "-q", "-b", "main")
	testtools.WriteFiles(b, repo, files)
	testtools.RunGit(b, repo, "add", "-A")
	testtools.RunGit(b, repo, "commit", "-q", "-m", "first")
	ctx := context.Background()
	data := b.TempDir()
	cfg := knit.Config{DataDir: data}
	if wrap != nil {
		s, err := adapters.OpenStore(ctx, data, "")
		if err != nil {
			b.Fatal(err)
		}
		cfg.Store, cfg.CloseStore = wrap(s), true
	}
	k, err := adapters.Open(ctx, adapters.Config{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close() })
	q := &startAll{}
	g := New(k, q, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config: gitwatch.Config{URL: "file://" + repo, Branch: "main", Path: "envs/", CacheDir: b.TempDir()}})
	w, err := gitwatch.New(g.cfg.Config)
	if err != nil {
		b.Fatal(err)
	}
	f := &benchFleet{b: b, repo: repo, g: g, w: w, q: q}
	f.loop()
	f.settle(0)
	return f
}

// loop is one pass of Run's loop while holding the lease.
func (f *benchFleet) loop() {
	ctx := context.Background()
	f.g.pollGit(ctx, f.w)
	f.g.reconcileWants(ctx, f.w)
}

// settle waits until the queue started n runs in all and no want is pending.
func (f *benchFleet) settle(n int) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		f.g.mu.Lock()
		wants, _, _, err := f.g.gitState(context.Background())
		f.g.mu.Unlock()
		if err != nil {
			f.b.Fatal(err)
		}
		pending := 0
		for _, w := range wants {
			if w.Pending {
				pending++
			}
		}
		if pending == 0 && f.q.n >= n {
			return
		}
		if time.Now().After(deadline) {
			f.b.Fatalf("%d wants still pending, %d runs of %d started", pending, f.q.n, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *benchFleet) commitOne() {
	f.rev++
	testtools.WriteFiles(f.b, f.repo, map[string]string{"envs/e0000.yaml": benchEnv(0, f.rev)})
	testtools.RunGit(f.b, f.repo, "commit", "-q", "-am", fmt.Sprintf("rev %d", f.rev))
}

func cpuNow() time.Duration { return cpuOf(syscall.RUSAGE_SELF) }

// gitCPUNow is the CPU time of the finished child processes: git's.
func gitCPUNow() time.Duration { return cpuOf(syscall.RUSAGE_CHILDREN) }

func cpuOf(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter sums the CPU time of the measured spans: the process's own,
// and its git processes'.
type cpuMeter struct{ self, git, selfAt, gitAt time.Duration }

func (m *cpuMeter) start() { m.selfAt, m.gitAt = cpuNow(), gitCPUNow() }

func (m *cpuMeter) stop() {
	m.self += cpuNow() - m.selfAt
	m.git += gitCPUNow() - m.gitAt
}

func (m *cpuMeter) report(b *testing.B) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(m.self), "cpu-ms/op")
	b.ReportMetric(ms(m.git), "git-cpu-ms/op")
}

// BenchmarkIdlePoll is a poll that finds the branch where it was.
func BenchmarkIdlePoll(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("envs=%d", n), func(b *testing.B) {
			f := newBenchFleet(b, n)
			var m cpuMeter
			for b.Loop() {
				m.start()
				f.loop()
				m.stop()
			}
			m.report(b)
		})
	}
}

// BenchmarkOneFileCommit is a poll that finds one commit changing one
// environment file of n, and starts its one run.
func BenchmarkOneFileCommit(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			f := newBenchFleet(b, n)
			// The first commit after the server takes the lease reads the
			// newest revision of each environment it leaves alone once
			// (wantFor); the figure is of the commits after it.
			f.commitOne()
			f.loop()
			f.settle(n + 1)
			var m cpuMeter
			for b.Loop() {
				b.StopTimer()
				f.commitOne()
				started := f.q.n
				b.StartTimer()
				m.start()
				f.loop()
				m.stop()
				if f.q.n != started+1 {
					b.Fatalf("%d runs started, want 1", f.q.n-started)
				}
			}
			m.report(b)
		})
	}
}
