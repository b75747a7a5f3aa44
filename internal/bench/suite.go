package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Config says what to measure and with which binaries.
type Config struct {
	// Knit is the knit binary under test; Self is knit-bench itself (its
	// engine-fake subcommand measures the engine with the fake runner).
	Knit, Self string
	// Tofu and CLIConfig are the OpenTofu binary and its CLI config, used
	// by knit (--tf-binary) and by the direct baseline alike.
	Tofu, CLIConfig string
	// Work is a scratch folder; everything generated goes under it.
	Work string
	// Modules is the size of the terraform environments; Delay the
	// local-exec sleep (seconds, as sleep(1) takes it) per module.
	Modules int
	Delay   string
	// Parallelism is knit's (and the baseline's) --parallelism.
	Parallelism int
	// Repeat is how many times each terraform measurement is taken; the
	// median counts.
	Repeat int
	// Components is the size of the engine-alone environment; Small the
	// size it is compared with for flat memory.
	Components, Small int
	// Log receives progress lines.
	Log io.Writer
}

// Figure is one reported number with its target.
type Figure struct {
	Name   string
	Value  string
	Target string
	// Met is nil for figures without a target.
	Met *bool
}

// Results is everything one suite run measured.
type Results struct {
	Figures  []Figure
	Commands []string // the exact commands, templated (DATA, WORK)
	Started  time.Time
	Elapsed  time.Duration
}

// dataDir matches the per-measurement data dirs in a recorded command line.
var dataDir = regexp.MustCompile(`\$WORK/[^ ]*/(knit|fake)(-[0-9]+)?\b`)

// suite carries one run's state.
type suite struct {
	cfg  Config
	ctx  context.Context
	res  *Results
	seen map[string]bool
}

// Run measures everything the report holds.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	s := &suite{cfg: cfg, ctx: ctx, res: &Results{Started: time.Now()}, seen: map[string]bool{}}
	for _, shape := range Shapes {
		if err := s.terraform(shape); err != nil {
			return nil, fmt.Errorf("%s: %w", shape, err)
		}
	}
	if err := s.engineAlone(); err != nil {
		return nil, fmt.Errorf("engine alone: %w", err)
	}
	s.res.Elapsed = time.Since(s.res.Started)
	return s.res, nil
}

func (s *suite) logf(format string, args ...any) {
	fmt.Fprintf(s.cfg.Log, "knit-bench: "+format+"\n", args...)
}

// command records a command line for the report, with the scratch folder
// written as $WORK, and measures it.
func (s *suite) command(env []string, ok []int, name string, args ...string) (Sample, error) {
	line := strings.Join(append(append(append([]string{}, env...), filepath.Base(name)), args...), " ")
	line = strings.ReplaceAll(line, s.cfg.Work, "$WORK")
	line = strings.ReplaceAll(line, filepath.Dir(s.cfg.Tofu), "$TOOLS")
	line = dataDir.ReplaceAllString(line, "$$DATA")
	if !s.seen[line] {
		s.seen[line] = true
		s.res.Commands = append(s.res.Commands, line)
	}
	return Exec(s.ctx, env, ok, name, args...)
}

func (s *suite) knit(dataDir string, ok []int, args ...string) (Sample, error) {
	return s.command([]string{"KNIT_DATA_DIR=" + dataDir}, ok, s.cfg.Knit, args...)
}

// terraform measures one shape: direct baseline and knit's first apply,
// alternating, Repeat times; then the no-op re-apply and drift checks at
// parallelism 1 and Parallelism.
func (s *suite) terraform(shape Shape) error {
	root := filepath.Join(s.cfg.Work, "tf-"+string(shape))
	e, err := GenerateTerraform(filepath.Join(root, "src"), shape, s.cfg.Modules, s.cfg.Delay)
	if err != nil {
		return err
	}
	d := Direct{Tofu: s.cfg.Tofu, CLIConfig: s.cfg.CLIConfig, Parallelism: s.cfg.Parallelism}
	par := fmt.Sprint(s.cfg.Parallelism)
	var direct, first, noop, drift1, driftN []time.Duration
	for r := range s.cfg.Repeat {
		wall, err := d.Apply(s.ctx, e, filepath.Join(root, fmt.Sprintf("direct-%d", r)))
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		direct = append(direct, wall)
		data := filepath.Join(root, fmt.Sprintf("knit-%d", r))
		tf := []string{"--tf-binary", s.cfg.Tofu}
		apply := append([]string{"apply", "-f", e.File, "--parallelism", par}, tf...)
		a, err := s.knit(data, nil, apply...)
		if err != nil {
			return err
		}
		first = append(first, a.Wall)
		b, err := s.knit(data, nil, apply...)
		if err != nil {
			return err
		}
		noop = append(noop, b.Wall)
		if !strings.Contains(string(b.Stdout), fmt.Sprintf("%d up to date", s.cfg.Modules)) {
			return fmt.Errorf("re-apply was not a no-op:\n%s", b.Stdout)
		}
		for _, p := range []struct {
			par string
			dst *[]time.Duration
		}{{"1", &drift1}, {par, &driftN}} {
			c, err := s.knit(data, nil, append([]string{"drift", "-f", e.File, "--parallelism", p.par}, tf...)...)
			if err != nil {
				return err
			}
			*p.dst = append(*p.dst, c.Wall)
		}
		s.logf("%s #%d: direct %s, knit %s, no-op %s, drift p1 %s, p%s %s", shape, r+1,
			ms(wall), ms(a.Wall), ms(b.Wall), ms(drift1[r]), par, ms(driftN[r]))
	}
	n := s.cfg.Modules
	over := ratio(median(first), median(direct))
	s.add(Figure{Name: fmt.Sprintf("overhead, %d modules, %s: knit apply ÷ direct (%s ÷ %s)", n, shape, ms(median(first)), ms(median(direct))),
		Value: fmt.Sprintf("%.3f", over), Target: "≤ 1.10", Met: met(over <= 1.10)})
	nr := ratio(median(noop), median(first))
	s.add(Figure{Name: fmt.Sprintf("no-op re-apply, %d modules, %s: re-apply ÷ first apply (%s ÷ %s)", n, shape, ms(median(noop)), ms(median(first))),
		Value: fmt.Sprintf("%.4f", nr), Target: "≤ 0.05", Met: met(nr <= 0.05)})
	speed := ratio(median(drift1), median(driftN))
	f := Figure{Name: fmt.Sprintf("drift check, %d modules, %s: parallelism 1 ÷ parallelism %s (%s ÷ %s)", n, shape, par, ms(median(drift1)), ms(median(driftN))),
		Value: fmt.Sprintf("speed-up %.2f×", speed), Target: "≥ 1.5× (wide, layered); none for a chain (nothing can run in parallel)"}
	if shape != Chain {
		f.Met = met(speed >= 1.5)
	}
	s.add(f)
	return nil
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

func (s *suite) add(f Figure) { s.res.Figures = append(s.res.Figures, f) }

func met(b bool) *bool { return &b }

func median(ds []time.Duration) time.Duration {
	c := append([]time.Duration(nil), ds...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[len(c)/2]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func ms(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// TempWork makes a scratch folder for a suite run.
func TempWork() (string, error) { return os.MkdirTemp("", "knit-bench-") }
