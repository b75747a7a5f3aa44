package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools/routertest"
)

// The acceptance of issue 42's canary through the canary example
// (examples/canary-nginx: real nginx, the app's v1 and v2 on Debian's
// haproxy, a real Prometheus scraping them), rolled out by real tofu
// under a bounded loopback load sent through nginx.

const exampleEnv = "shop/canary-nginx"

// errorRatio is the example's analysis query: the canary's share of 5xx
// answers over the last 10 s, as Prometheus scraped them.
const errorRatio = `sum(rate(haproxy_frontend_http_responses_total{component="app-canary",code="5xx"}[10s])) / sum(rate(haproxy_frontend_http_responses_total{component="app-canary"}[10s]))`

// promAnalysis is an analysis check of the canary's error ratio.
func promAnalysis(interval string) string {
	return `              - name: canary-errors
                prometheus:
                  url: {valueFrom: prometheus.url}
                  query: '` + errorRatio + `'
                  condition: result < 0.05
                interval: ` + interval + `
                count: 2
`
}

// gate is a check that holds its analysis until the test has measured
// the traffic at weight: it says it is there (GATE/at-W) and waits for
// GATE/go-W. Its analysis runs after the step before it was applied, so
// every request started while it waits meets the router at that weight.
func gate(dir string, weight int) string {
	at, goOn := filepath.Join(dir, fmt.Sprint("at-", weight)), filepath.Join(dir, fmt.Sprint("go-", weight))
	return `              - name: measured-at-` + fmt.Sprint(weight) + `
                command: ": > ` + at + ` && while [ ! -e ` + goOn + ` ]; do sleep 0.1; done"
                timeout: 10m
`
}

// canaryExample is the canary example's world with steps in place of
// the example's (each a YAML list item under steps:).
func canaryExample(t *testing.T, steps string) (*world, *routertest.Run, string) {
	t.Helper()
	w, run, file := exampleWorld(t, "canary-nginx")
	text := w.read(file)
	start, end := strings.Index(text, "        steps:\n"), strings.Index(text, "  components:\n")
	if start < 0 || end < start {
		t.Fatalf("examples/canary-nginx/environment.yaml: no steps: before components:")
	}
	w.write(map[string]string{file: text[:start] + "        steps:\n" + steps + text[end:]})
	return w, run, file
}

// setApp rewrites the app's version and error rate in the world's file.
func (w *world) setApp(file, version string, errorPercent int) {
	w.t.Helper()
	text := w.read(file)
	for _, v := range []string{"v1", "v2"} {
		text = strings.Replace(text, "{name: app_version, value: "+v+"}", "{name: app_version, value: "+version+"}", 1)
	}
	i := strings.Index(text, "{name: error_percent, value: ")
	j := i + strings.Index(text[i:], "}")
	text = text[:i] + fmt.Sprintf("{name: error_percent, value: %d", errorPercent) + text[j:]
	w.write(map[string]string{file: text})
}

// startKnit runs knit with args in the background; its exit comes on the
// returned channel (with its stderr).
func (w *world) startKnit(args ...string) (*exec.Cmd, <-chan result) {
	w.t.Helper()
	cmd := exec.Command(knitBin, args...)
	cmd.Dir, cmd.Env = w.dir, w.env
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		done <- result{stdout: out.String(), stderr: errb.String(), code: code}
	}()
	w.t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, done
}

// rolloutOf is env's rollout as knit rollout status -o json says it.
func (w *world) rolloutOf(env string) rolloutStatus {
	w.t.Helper()
	var s rolloutStatus
	if err := json.Unmarshal([]byte(w.ok("rollout", "status", env, "-o", "json").stdout), &s); err != nil {
		w.t.Fatal(err)
	}
	return s
}

// awaitFile waits for path to exist, or for the run done to end first
// (which fails the test).
func awaitFile(t *testing.T, path string, done <-chan result) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("knit ended before %s: exit %d\n%s\n%s", filepath.Base(path), r.code, r.stdout, r.stderr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// shareNear fails t unless v2's share of c is within 5 points of weight.
func shareNear(t *testing.T, what string, c routertest.Counts, weight int) {
	t.Helper()
	t.Logf("%s: v2 answered %.1f %% of %d requests", what, c.Share("v2"), c.Total)
	if got := c.Share("v2"); got < float64(weight)-5 || got > float64(weight)+5 {
		t.Errorf("%s: v2 answered %.1f %% of %d requests, want %d ± 5 (%+v)", what, got, c.Total, weight, c)
	}
}

// TestCanaryNginxHealthyShiftsTrafficByEachWeight: v2 rolls out through
// nginx by 10 → pause 3s → analysis (Prometheus) → 50 → analysis → 100.
// The requests started after each weight was applied (the analysis holds
// until the test has counted them) reach v2 by that weight ± 5 points;
// after 100 every one reaches v2; no request fails during the whole
// rollout; at the end the canary is gone, the stable app is v2, the
// router sends it everything and the applied revision is the file's.
func TestCanaryNginxHealthyShiftsTrafficByEachWeight(t *testing.T) {
	t.Parallel()
	gates := t.TempDir()
	steps := "          - setWeight: 10\n          - pause: {duration: 3s}\n          - analysis:\n" + promAnalysis("2s") + gate(gates, 10) +
		"          - setWeight: 50\n          - analysis:\n" + promAnalysis("2s") + gate(gates, 50) + "          - setWeight: 100\n"
	w, _, file := canaryExample(t, steps)
	w.ok("apply", "-f", file) // the first apply is plain: v1
	router := w.output(exampleEnv, "router", "url")
	load := routertest.StartLoad(t, router, routertest.LoadOptions{Workers: 2, Gap: 5 * time.Millisecond})

	w.setApp(file, "v2", 0)
	_, done := w.startKnit("apply", "-f", file)
	for _, weight := range []int{10, 50} {
		awaitFile(t, filepath.Join(gates, fmt.Sprint("at-", weight)), done)
		mark := load.Mark()
		shareNear(t, fmt.Sprintf("at weight %d", weight), load.Await(t, mark, 400), weight)
		if err := os.WriteFile(filepath.Join(gates, fmt.Sprint("go-", weight)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Once step 6 (setWeight 100) has run, the rollout is past it: every
	// request from then on reaches v2 (the canary, then the stable app
	// that took v2 while the canary served everything).
	var mark100 int64 = -1
	for mark100 < 0 {
		select {
		case r := <-done:
			if r.code != 0 {
				t.Fatalf("the rollout: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mark100 = load.Mark()
			done = nil
		case <-time.After(200 * time.Millisecond):
			if s := w.rolloutOf(exampleEnv); s.Step >= 6 || s.State == "succeeded" {
				mark100 = load.Mark()
			}
		}
	}
	if c := load.Await(t, mark100, 400); c.Share("v2") != 100 {
		t.Errorf("after the step to 100: %+v, want every request on v2", c)
	}
	if done != nil {
		if r := <-done; r.code != 0 {
			t.Fatalf("the rollout: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	end := load.Mark()
	if c := load.Await(t, end, 200); c.Share("v2") != 100 {
		t.Errorf("after the rollout: %+v, want every request on v2", c)
	}
	if all := load.Stop(); all.Failed+all.Errors != 0 {
		t.Errorf("requests failed during the rollout: %+v", all)
	}

	s := w.rolloutOf(exampleEnv)
	if s.State != "succeeded" || s.Weight != 0 {
		t.Errorf("the rollout at the end: %+v", s)
	}
	var weights []int
	for _, e := range s.Evidence {
		if e.Phase == "step" {
			weights = append(weights, e.Weight)
		}
	}
	if fmt.Sprint(weights) != "[10 10 50 50 100]" {
		t.Errorf("the steps ran at weights %v, want [10 10 50 50 100]", weights)
	}
	if st := w.ok("status", exampleEnv).stdout; strings.Contains(st, "app-canary") {
		t.Errorf("the canary instance is left:\n%s", st)
	}
	if c := routertest.Send(t, w.output(exampleEnv, "app", "url"), 5); c.ByVersion["v2"] != 5 {
		t.Errorf("the stable app: %+v, want v2", c)
	}
	applied := w.appliedSpec(exampleEnv)
	if !strings.Contains(applied, `"app_version","value":"v2"`) || strings.Contains(applied, "app-canary\"") {
		t.Errorf("the applied revision is not the file's v2:\n%s", applied)
	}
}

// appliedSpec is the spec (JSON) of the revision env is applied at.
func (w *world) appliedSpec(env string) string {
	w.t.Helper()
	st, ctx := w.openStore(), context.Background()
	e, err := st.Environment(ctx, env)
	if err != nil {
		w.t.Fatal(err)
	}
	rev, err := st.Revision(ctx, env, e.AppliedRevision)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(rev.Spec)
}

// resultRe is the value a Prometheus check's evidence names.
var resultRe = regexp.MustCompile(`result ([0-9.e+-]+) of query `)

// TestCanaryNginxFailingAbortsOnPrometheus: v2 answers 500 to every
// fifth request; the Prometheus analysis at weight 10 fails the step,
// the very next run sets the weight back to 0 (before the analysis's next
// measurement would have been due), fewer than 5 % of the requests sent
// through nginx during the rollout fail, the environment stays on v1,
// the failed step's revision is VerificationFailed, and the reason names
// the query and the value it gave.
func TestCanaryNginxFailingAbortsOnPrometheus(t *testing.T) {
	t.Parallel()
	const interval = 20 * time.Second
	steps := "          - setWeight: 10\n          - pause: {duration: 3s}\n          - analysis:\n" + promAnalysis(interval.String()) +
		"          - setWeight: 50\n          - setWeight: 100\n"
	w, _, file := canaryExample(t, steps)
	w.ok("apply", "-f", file)
	load := routertest.StartLoad(t, w.output(exampleEnv, "router", "url"), routertest.LoadOptions{Workers: 2, Gap: 5 * time.Millisecond})

	w.setApp(file, "v2", 20)
	r := w.knit("apply", "-f", file)
	if r.code != 1 || !strings.Contains(r.stderr, "rollout aborted") {
		t.Fatalf("the failing rollout: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	after := load.Mark()
	if c := load.Await(t, after, 200); c.ByVersion["v1"] != c.Total {
		t.Errorf("after the abort: %+v, want every request on v1", c)
	}
	all := load.Stop()
	if bad := all.Failed + all.Errors; all.Total == 0 || float64(bad) >= 0.05*float64(all.Total) {
		t.Errorf("%d of %d requests failed during the rollout, want fewer than 5 %% (%+v)", bad, all.Total, all)
	}
	if all.ByVersion["v2"] == 0 {
		t.Errorf("no request reached the canary: %+v", all)
	}

	s := w.rolloutOf(exampleEnv)
	m := resultRe.FindStringSubmatch(s.Reason)
	if s.State != "aborted" || !strings.Contains(s.Reason, "verification Failed") || !strings.Contains(s.Reason, errorRatio) || m == nil {
		t.Fatalf("the aborted rollout's reason does not name the query and its value: %+v", s)
	}
	if v, _ := strconv.ParseFloat(m[1], 64); v < 0.1 || v > 0.3 {
		t.Errorf("the analysis saw an error ratio of %s, want about 0.2: %s", m[1], s.Reason)
	}
	var phases []string
	failed := -1
	for i, e := range s.Evidence {
		phases = append(phases, fmt.Sprintf("%s/%d@%d:%s", e.Phase, e.Step, e.Weight, e.Status))
		if e.Weight > 10 {
			t.Errorf("a run at weight %d: %+v", e.Weight, s.Evidence)
		}
		if e.Status != "succeeded" && failed < 0 {
			failed = i
		}
	}
	want := "[up/0@0:succeeded step/0@10:succeeded step/2@10:failed abort/2@0:succeeded aborted/2@0:succeeded]"
	if fmt.Sprint(phases) != want {
		t.Fatalf("the rollout's runs: %v, want %s", phases, want)
	}
	st, ctx := w.openStore(), context.Background()
	failedRun, err := st.Run(ctx, s.Evidence[failed].RunID)
	if err != nil {
		t.Fatal(err)
	}
	abortRun, err := st.Run(ctx, s.Evidence[failed+1].RunID)
	if err != nil {
		t.Fatal(err)
	}
	// The run that set the weight back to 0 started after the failed
	// analysis ended and before its next measurement would have been due.
	if !abortRun.StartedAt.After(failedRun.FinishedAt.Add(-time.Millisecond)) || abortRun.StartedAt.Sub(failedRun.FinishedAt) >= interval {
		t.Errorf("the analysis failed at %s, the weight went back to 0 from %s: not within one interval (%s)", failedRun.FinishedAt, abortRun.StartedAt, interval)
	}
	rev, err := st.Revision(ctx, exampleEnv, failedRun.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Verification != store.VerificationFailed {
		t.Errorf("the failed step's revision is %q, want %s", rev.Verification, store.VerificationFailed)
	}
	if applied := w.appliedSpec(exampleEnv); !strings.Contains(applied, `"app_version","value":"v1"`) {
		t.Errorf("the environment left v1:\n%s", applied)
	}
	if c := routertest.Send(t, w.output(exampleEnv, "app", "url"), 5); c.ByVersion["v1"] != 5 {
		t.Errorf("the stable app: %+v, want v1", c)
	}
	if st := w.ok("status", exampleEnv).stdout; strings.Contains(st, "app-canary") {
		t.Errorf("the canary instance is left:\n%s", st)
	}
}

// TestCanaryEndingBelow100HandsOverBeforeTheStableIsReplaced: a canary
// whose last step is 50. The stable app takes the new revision at the
// end, and its replacement restarts it: while it serves half the traffic
// that would fail requests. The rollout hands everything to the canary
// (weight 100, a run of its own) before the stable app is replaced, so
// no request fails, and ends on v2 with the canary gone.
func TestCanaryEndingBelow100HandsOverBeforeTheStableIsReplaced(t *testing.T) {
	t.Parallel()
	w, _, file := canaryExample(t, "          - setWeight: 10\n          - setWeight: 50\n")
	w.ok("apply", "-f", file) // the first apply is plain: v1
	load := routertest.StartLoad(t, w.output(exampleEnv, "router", "url"), routertest.LoadOptions{Workers: 2, Gap: 5 * time.Millisecond})
	w.setApp(file, "v2", 0)
	w.ok("apply", "-f", file)
	end := load.Mark()
	if c := load.Await(t, end, 200); c.Share("v2") != 100 {
		t.Errorf("after the rollout: %+v, want every request on v2", c)
	}
	if all := load.Stop(); all.Failed+all.Errors != 0 {
		t.Errorf("requests failed during the rollout: %+v", all)
	}
	s := w.rolloutOf(exampleEnv)
	var phases []string
	for _, e := range s.Evidence {
		phases = append(phases, fmt.Sprintf("%s@%d", e.Phase, e.Weight))
	}
	if s.State != "succeeded" || strings.Join(phases, " ") != "up@0 step@10 step@50 handover@100 promote@0 finish@0" {
		t.Errorf("the rollout: %s, its runs %v, want succeeded through up@0 step@10 step@50 handover@100 promote@0 finish@0", s.State, phases)
	}
	if st := w.ok("status", exampleEnv).stdout; strings.Contains(st, "app-canary") {
		t.Errorf("the canary instance is left:\n%s", st)
	}
}
