package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FleetConfig is what Fleet measures: knit serve following a repository of
// environment files, each with one script component, built from one
// template.
type FleetConfig struct {
	Knit, Work string
	Log        io.Writer
	// IdleSizes are the repositories whose idle polls are measured,
	// CommitSizes those whose one-file commits are (the largest of either
	// is also the fleet applied from one commit).
	IdleSizes, CommitSizes []int
	// Commits is how many one-file commits are measured per size; Idle
	// how long idle polls are measured (at one poll a second).
	Commits int
	Idle    time.Duration
	MaxRuns int
	// CPUProfile, when set, is where the largest repository's server
	// writes its CPU profile (knit serve --cpu-profile).
	CPUProfile string
}

// FleetReport holds Fleet's figures, by repository size.
type FleetReport struct {
	Cfg FleetConfig
	// IdlePoll is the server's own CPU time per idle poll; IdlePollGit
	// adds that of the processes it waited for (git).
	IdlePoll, IdlePollGit map[int]time.Duration
	// Commit is the server's own CPU time per one-file commit, push to
	// applied, the idle polls' cost taken out; CommitGit adds that of the
	// processes it waited for (git, the run's sh); CommitLatency is the
	// median push → applied; CommitRuns the runs each commit started
	// (always 1 when behaviour is right).
	Commit, CommitGit, CommitLatency map[int]time.Duration
	CommitRuns                       map[int][]int
	// The fleet: FleetEnvs environments applied from their first commit,
	// in FleetTime, costing the server FleetCPU of its own; Bound is the
	// same number of the components' sh processes, MaxRuns at a time.
	FleetEnvs           int
	FleetTime, FleetCPU time.Duration
	FleetBound          time.Duration
}

// pollEvery is the servers' --git-poll.
const pollEvery = time.Second

// Fleet measures the idle polls, one-file commits and a fleet's first
// apply of knit serve on repositories of the configured sizes.
func Fleet(ctx context.Context, cfg FleetConfig) (FleetReport, error) {
	rep := FleetReport{Cfg: cfg, IdlePoll: map[int]time.Duration{}, IdlePollGit: map[int]time.Duration{}, Commit: map[int]time.Duration{},
		CommitGit: map[int]time.Duration{}, CommitLatency: map[int]time.Duration{}, CommitRuns: map[int][]int{}}
	sizes := map[int]bool{}
	for _, n := range append(append([]int(nil), cfg.IdleSizes...), cfg.CommitSizes...) {
		sizes[n] = true
	}
	var order []int
	for n := range sizes {
		order = append(order, n)
	}
	sort.Ints(order)
	for _, n := range order {
		if err := fleetOf(ctx, cfg, n, order[len(order)-1] == n, &rep); err != nil {
			return rep, fmt.Errorf("%d environments: %w", n, err)
		}
	}
	return rep, nil
}

// fleetRepo is a repository of n environment files the fleet's server
// follows, and its events file (a line per apply).
type fleetRepo struct {
	ctx                    context.Context
	root, bare, work, data string
	events                 string
	n                      int
}

func (r *fleetRepo) git(dir string, args ...string) error {
	return runGit(r.ctx, dir, args...)
}

// runGit runs git in dir as the load test's author, with no user config.
func runGit(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=loadtest", "GIT_AUTHOR_EMAIL=l@example.com",
		"GIT_COMMITTER_NAME=loadtest", "GIT_COMMITTER_EMAIL=l@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

const fleetTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: app}
spec:
  parameters:
    - {name: name, type: string}
    - {name: rev, type: string, default: "0"}
  components:
    - name: app
      type: script
      script: {apply: "echo applied ${param.name} ${param.rev} >> EVENTS"}
`

func fleetEnv(i, rev int) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: fleet
  envName: e%04d
  autoApprove: true
  template: {path: ../templates/app.yaml}
  parameters: {name: e%04d, rev: "%d"}
`, i, i, rev)
}

func newFleetRepo(ctx context.Context, work string, n int) (*fleetRepo, error) {
	root := filepath.Join(work, fmt.Sprintf("fleet-%d", n))
	r := &fleetRepo{ctx: ctx, root: root, bare: filepath.Join(root, "envs.git"), work: filepath.Join(root, "work"),
		data: filepath.Join(root, "data"), events: filepath.Join(root, "events.log"), n: n}
	if err := os.MkdirAll(filepath.Join(r.work, "envs"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(r.work, "templates"), 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{"templates/app.yaml": strings.ReplaceAll(fleetTemplate, "EVENTS", r.events)}
	for i := range n {
		files[fmt.Sprintf("envs/e%04d.yaml", i)] = fleetEnv(i, 0)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(r.work, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	for _, step := range [][]string{{"init", "-q", "--bare", "-b", "main", r.bare}, {"-C", r.work, "init", "-q", "-b", "main"},
		{"-C", r.work, "remote", "add", "origin", r.bare}, {"-C", r.work, "add", "."},
		{"-C", r.work, "commit", "-q", "-m", fmt.Sprintf("%d environments", n)}} {
		if err := r.git(root, step...); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *fleetRepo) push() error { return r.git(r.work, "push", "-q", "origin", "main") }

// commitOne changes environment file 0 to rev and commits it.
func (r *fleetRepo) commitOne(rev int) error {
	if err := os.WriteFile(filepath.Join(r.work, "envs", "e0000.yaml"), []byte(fleetEnv(0, rev)), 0o644); err != nil {
		return err
	}
	return r.git(r.work, "commit", "-q", "-am", fmt.Sprintf("e0000 rev %d", rev))
}

// applied counts the events file's lines, and whether one says line.
func (r *fleetRepo) applied(line string) (int, bool) {
	b, err := os.ReadFile(r.events)
	if err != nil {
		return 0, false
	}
	return bytes.Count(b, []byte("\n")), line != "" && bytes.Contains(b, []byte(line+"\n"))
}

// waitFor waits until ok, for at most limit.
func waitFor(ctx context.Context, limit time.Duration, ok func() bool) error {
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

func fleetOf(ctx context.Context, cfg FleetConfig, n int, fleet bool, rep *FleetReport) error {
	r, err := newFleetRepo(ctx, cfg.Work, n)
	if err != nil {
		return err
	}
	args := []string{"--git-url", "file://" + r.bare, "--git-path", "envs/", "--git-poll", pollEvery.String(),
		"--max-concurrent-runs", strconv.Itoa(cfg.MaxRuns)}
	if fleet && cfg.CPUProfile != "" {
		args = append(args, "--cpu-profile", cfg.CPUProfile)
	}
	srv, err := startServer(ctx, cfg.Knit, r.data, cfg.Work, args...)
	if err != nil {
		return err
	}
	defer srv.stop()
	pid := srv.cmd.Process.Pid
	time.Sleep(2 * time.Second) // started, its first polls of an empty branch done
	cpu0, start := ownCPU(pid), time.Now()
	if err := r.push(); err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Minute, func() bool { got, _ := r.applied(""); return got >= n }); err != nil {
		return fmt.Errorf("the first commit's %d environments: %w", n, err)
	}
	took, cpu := time.Since(start), ownCPU(pid)-cpu0
	cfg.logf("%d environments applied from one commit in %s, server CPU %s", n, took.Round(time.Millisecond), cpu)
	if fleet {
		rep.FleetEnvs, rep.FleetTime, rep.FleetCPU = n, took, cpu
		if rep.FleetBound, err = shBound(ctx, r, n, cfg.MaxRuns); err != nil {
			return err
		}
	}
	time.Sleep(3 * time.Second) // the runs' last records written
	idle := idlePerPoll(pid, cfg.Idle)
	if containsInt(cfg.IdleSizes, n) {
		rep.IdlePoll[n], rep.IdlePollGit[n] = idle.own, idle.all
		cfg.logf("%d environments: idle poll %s of CPU, %s with git", n, idle.own, idle.all)
	}
	if containsInt(cfg.CommitSizes, n) {
		if err := oneFileCommits(ctx, cfg, r, pid, idle, rep); err != nil {
			return err
		}
	}
	want := n
	if containsInt(cfg.CommitSizes, n) {
		want += 1 + cfg.Commits // the warm-up and the measured commits
	}
	if got, _ := r.applied(""); got != want {
		return fmt.Errorf("%d applies recorded, want %d: one per environment and one per one-file commit", got, want)
	}
	return nil
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// pollCPU is CPU time per poll: the server's own, and with the processes
// it waited for.
type pollCPU struct{ own, all time.Duration }

// idlePerPoll is the server's CPU time over window ÷ the polls in it.
func idlePerPoll(pid int, window time.Duration) pollCPU {
	own0, child0 := ownCPU(pid), childCPUTime(pid)
	time.Sleep(window)
	polls := time.Duration(window / pollEvery)
	own := ownCPU(pid) - own0
	return pollCPU{own: own / polls, all: (own + childCPUTime(pid) - child0) / polls}
}

// oneFileCommits pushes Commits commits, each changing one environment
// file, and measures each from the push to its apply.
func oneFileCommits(ctx context.Context, cfg FleetConfig, r *fleetRepo, pid int, idle pollCPU, rep *FleetReport) error {
	var own, all time.Duration
	var lat []time.Duration
	// The first commit after the server took the lease reads the newest
	// revision of each environment it leaves alone, once: a warm-up, not
	// counted.
	if err := r.commitOne(1); err != nil {
		return err
	}
	if err := r.push(); err != nil {
		return err
	}
	if err := waitFor(ctx, 5*time.Minute, func() bool { _, ok := r.applied("applied e0000 1"); return ok }); err != nil {
		return fmt.Errorf("the first one-file commit: %w", err)
	}
	time.Sleep(1500 * time.Millisecond)
	for rev := 2; rev <= cfg.Commits+1; rev++ {
		if err := r.commitOne(rev); err != nil {
			return err
		}
		before, _ := r.applied("")
		cpu0, child0, start := ownCPU(pid), childCPUTime(pid), time.Now()
		if err := r.push(); err != nil {
			return err
		}
		line := fmt.Sprintf("applied e0000 %d", rev)
		if err := waitFor(ctx, 5*time.Minute, func() bool { _, ok := r.applied(line); return ok }); err != nil {
			return fmt.Errorf("one-file commit %d: %w", rev, err)
		}
		lat = append(lat, time.Since(start))
		time.Sleep(1500 * time.Millisecond) // the run's records, the next poll
		polls := time.Duration(time.Since(start) / pollEvery)
		o, c := ownCPU(pid)-cpu0, childCPUTime(pid)-child0
		own += max(0, o-idle.own*polls)
		all += max(0, o+c-idle.all*polls)
		after, _ := r.applied("")
		rep.CommitRuns[r.n] = append(rep.CommitRuns[r.n], after-before)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	n := time.Duration(cfg.Commits)
	rep.Commit[r.n], rep.CommitGit[r.n], rep.CommitLatency[r.n] = own/n, all/n, lat[len(lat)/2]
	cfg.logf("%d files: one-file commit: server CPU %s (with git %s), push → applied median %s, runs %v",
		r.n, own/n, all/n, lat[len(lat)/2], rep.CommitRuns[r.n])
	return nil
}

// shBound runs the fleet's n components' commands themselves, at most
// maxRuns at a time: the least any orchestrator can take.
func shBound(ctx context.Context, r *fleetRepo, n, maxRuns int) (time.Duration, error) {
	sink := filepath.Join(r.root, "bound.log")
	sem := make(chan struct{}, maxRuns)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cmd := exec.CommandContext(ctx, "sh", "-c", fmt.Sprintf("echo applied e%04d 0 >> %s", i, sink))
			if err := cmd.Run(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return time.Since(start), <-errs
}

// ownCPU is the time a process's threads have run (Linux, nanoseconds
// from each thread's schedstat), else its CPU time in clock ticks.
func ownCPU(pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return cpuTime(pid)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return cpuTime(pid)
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		sum += time.Duration(ns)
	}
	return sum
}

// childCPUTime is the user and system CPU time of a process's children it
// waited for (Linux), or 0.
func childCPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 15 {
		return 0
	}
	u, _ := strconv.ParseInt(f[13], 10, 64)
	s, _ := strconv.ParseInt(f[14], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

func (c *FleetConfig) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}
