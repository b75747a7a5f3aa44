package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// toolCounts runs knit once more through every operation on the layered
// graph with no work, with a wrapper around tofu that logs each
// invocation, and reports tool processes per component.
func (s *suite) toolCounts() error {
	root := filepath.Join(s.cfg.Work, "tf-count")
	e, c, err := s.countable(root)
	if err != nil {
		return err
	}
	counted := *s
	counted.cfg.Tofu = c.wrapper
	targets := map[string]float64{"apply": 3, "no-op re-apply": 0, "drift": 1, "teardown": 1}
	what := map[string]string{"apply": "new components", "no-op re-apply": "unchanged", "drift": "in sync", "teardown": "auto-approved"}
	for _, op := range counted.tfOps() {
		c.reset()
		if _, err := op.knit(e, filepath.Join(root, "knit")); err != nil {
			return err
		}
		// version is asked once per tool binary on the machine, not per component.
		total, counts := c.count("version")
		x := float64(total) / float64(len(e.Names))
		s.add(Figure{Name: fmt.Sprintf("tool processes per component, %s (%s; %d components: %s)", op.name, what[op.name], len(e.Names), counts),
			Value: fmt.Sprintf("%.2f", x), Target: fmt.Sprintf("≤ %.0f", targets[op.name]), Met: met(x <= targets[op.name])})
	}
	return nil
}

// countable writes the layered graph with no work under root, and a
// counter beside it.
func (s *suite) countable(root string) (*Env, *counter, error) {
	e, err := GenerateTerraform(filepath.Join(root, "src"), Layered, s.cfg.Modules, "0")
	if err != nil {
		return nil, nil, err
	}
	c, err := newCounter(root, s.cfg.Tofu)
	return e, c, err
}

// counter is a wrapper around tofu that logs each invocation's command.
type counter struct{ wrapper, calls string }

func newCounter(dir, tofu string) (*counter, error) {
	c := &counter{wrapper: filepath.Join(dir, "tofu"), calls: filepath.Join(dir, "calls.log")}
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %q\nexec %q \"$@\"\n", c.calls, tofu)
	return c, os.WriteFile(c.wrapper, []byte(script), 0o755)
}

func (c *counter) reset() { _ = os.Remove(c.calls) }

// count is how many invocations were logged since reset, and how many of
// each command ("apply 20, init 20"), leaving out the commands in skip.
func (c *counter) count(skip ...string) (int, string) {
	data, _ := os.ReadFile(c.calls)
	per := map[string]int{}
	total := 0
	for _, cmd := range strings.Fields(string(data)) {
		if !slices.Contains(skip, cmd) {
			per[cmd]++
			total++
		}
	}
	var parts []string
	for cmd, n := range per {
		parts = append(parts, fmt.Sprintf("%s %d", cmd, n))
	}
	sort.Strings(parts)
	return total, strings.Join(parts, ", ")
}

// engineAlone measures knit's own cost on a large environment: the engine
// with the fake runner, the real CLI with script components, and the read
// commands; and, for flat memory, the same at a small size.
func (s *suite) engineAlone() error {
	big, err := s.engineSize(s.cfg.Components, true)
	if err != nil {
		return err
	}
	small, err := s.engineSize(s.cfg.Small, false)
	if err != nil {
		return err
	}
	n := s.cfg.Components
	perComp := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n) }
	fakeMs, cliMs := perComp(big["fake"].Wall), perComp(big["apply"].Wall)
	s.add(Figure{Name: fmt.Sprintf("engine alone, fake runner, %d components (whole process: load, store, walk; %s): time per component", n, ms(big["fake"].Wall)),
		Value: fmt.Sprintf("%.3f ms", fakeMs), Target: "≤ 2 ms (judged here)", Met: met(fakeMs <= 2)})
	s.add(Figure{Name: fmt.Sprintf("engine alone, fake runner, %d components: peak memory", n),
		Value: mib(big["fake"].MaxRSS), Target: "≤ 100 MiB (judged here)", Met: met(big["fake"].MaxRSS <= 100<<20)})
	s.add(Figure{Name: fmt.Sprintf("knit apply, %d script components running `true` (real CLI, one sh each; %s): time per component", n, ms(big["apply"].Wall)),
		Value: fmt.Sprintf("%.3f ms", cliMs), Target: "≤ 2 ms", Met: met(cliMs <= 2)})
	s.add(Figure{Name: fmt.Sprintf("knit apply, %d script components: peak memory", n),
		Value: mib(big["apply"].MaxRSS), Target: "≤ 100 MiB", Met: met(big["apply"].MaxRSS <= 100<<20)})
	for _, k := range []struct{ key, what string }{
		{"validate", "knit validate"}, {"graph", "knit graph"}, {"noop", "knit apply, no-op"},
	} {
		b, sm := big[k.key], small[k.key]
		s.add(Figure{Name: fmt.Sprintf("%s, %d components: time; peak memory (at %d components: %s)", k.what, n, s.cfg.Small, mib(sm.MaxRSS)),
			Value: fmt.Sprintf("%s; %s", ms(b.Wall), mib(b.MaxRSS)), Target: "memory ≤ 100 MiB", Met: met(b.MaxRSS <= 100<<20)})
	}
	st := big["status"]
	s.add(Figure{Name: fmt.Sprintf("knit status ENV, %d components (after the applies above): time (median of 5)", n),
		Value: ms(st.Wall), Target: "< 100 ms", Met: met(st.Wall < 100*time.Millisecond)})
	return nil
}

// engineSize runs the engine-alone measurements on an n-component layered
// script environment, Repeat times each (fresh data dirs for first
// applies): wall time is the median, peak memory the largest seen. full
// adds the fake-runner and status measurements.
func (s *suite) engineSize(n int, full bool) (map[string]Sample, error) {
	root := filepath.Join(s.cfg.Work, fmt.Sprintf("engine-%d", n))
	e, err := GenerateScript(filepath.Join(root, "src"), Layered, n)
	if err != nil {
		return nil, err
	}
	par := fmt.Sprint(s.cfg.Parallelism)
	data := func(kind string, r int) string { return filepath.Join(root, fmt.Sprintf("%s-%d", kind, r)) }
	type step struct {
		key  string
		run  func(r int) (Sample, error)
		reps int
	}
	steps := []step{
		{"validate", func(int) (Sample, error) { return s.command(nil, nil, s.cfg.Knit, "validate", "-f", e.File) }, s.cfg.Repeat},
		{"graph", func(int) (Sample, error) { return s.command(nil, nil, s.cfg.Knit, "graph", "-f", e.File) }, s.cfg.Repeat},
		{"apply", func(r int) (Sample, error) {
			return s.knit(data("knit", r), nil, "apply", "-f", e.File, "--parallelism", par)
		}, s.cfg.Repeat},
		{"noop", func(r int) (Sample, error) {
			return s.knit(data("knit", r), nil, "apply", "-f", e.File, "--parallelism", par)
		}, s.cfg.Repeat},
	}
	if full {
		steps = append(steps,
			step{"fake", func(r int) (Sample, error) {
				return s.command(nil, nil, s.cfg.Self, "engine-fake", "-f", e.File, "-data-dir", data("fake", r), "-parallelism", par)
			}, s.cfg.Repeat},
			step{"status", func(int) (Sample, error) { return s.knit(data("knit", 0), nil, "status", e.ID) }, 5})
	}
	out := map[string]Sample{}
	for _, st := range steps {
		var walls []time.Duration
		var peak int64
		for r := range st.reps {
			smp, err := st.run(r)
			if err != nil {
				return nil, err
			}
			walls, peak = append(walls, smp.Wall), max(peak, smp.MaxRSS)
		}
		out[st.key] = Sample{Wall: median(walls), MaxRSS: peak}
		s.logf("%d components: %s %s (median of %d), peak %s", n, st.key, ms(out[st.key].Wall), st.reps, mib(peak))
	}
	return out, nil
}
