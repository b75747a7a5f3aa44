package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"knit.dev/knit/internal/runner/terraform"
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
	// Terragrunt is the Terragrunt binary knit is compared with ("": no
	// comparison).
	Terragrunt string
	// Modules is the size of the terraform environments; Delays the
	// work sizes measured: local-exec sleep per module, in seconds as
	// sleep(1) takes them. BoundDelay is the work size of the layered
	// apply judged against its physical bound ("": not measured).
	Modules    int
	Delays     []string
	BoundDelay string
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

// unitsDir matches the Terragrunt units folder in a recorded command line.
var unitsDir = regexp.MustCompile(`\$WORK/[^ ]*/terragrunt(-[0-9]+)?\b`)

// suite carries one run's state.
type suite struct {
	cfg  Config
	ctx  context.Context
	res  *Results
	seen map[string]bool
	// peak is knit's own largest peak memory in the terraform runs.
	peak int64
	// encryption is the environment that encrypts state as knit does; the
	// baseline runs with it.
	encryption []string
	// cpu sums, per operation over every shape and work size, the median
	// CPU time of knit (with its tools) and of the baseline's tools.
	cpu map[string]*[2]time.Duration
}

// Run measures everything the report holds.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	s := &suite{cfg: cfg, ctx: ctx, res: &Results{Started: time.Now()}, seen: map[string]bool{}, cpu: map[string]*[2]time.Duration{}}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	s.encryption = terraform.EncryptionEnv(key)
	if err := s.toolCounts(); err != nil {
		return nil, fmt.Errorf("tool processes: %w", err)
	}
	for _, delay := range cfg.Delays {
		for _, shape := range Shapes {
			if err := s.terraform(shape, delay); err != nil {
				return nil, fmt.Errorf("%s, %s s: %w", shape, delay, err)
			}
		}
	}
	if cfg.BoundDelay != "" {
		if err := s.boundTarget(); err != nil {
			return nil, fmt.Errorf("bound: %w", err)
		}
	}
	if cfg.Terragrunt != "" {
		if err := s.versusTerragrunt(); err != nil {
			return nil, fmt.Errorf("Terragrunt: %w", err)
		}
	}
	for _, op := range s.tfOps() {
		if c := s.cpu[op.name]; c != nil && c[1] > 0 {
			s.add(Figure{Name: fmt.Sprintf("%s: CPU time of knit and the tools it ran ÷ the baseline's tools, summed over shapes and work sizes (%s ÷ %s)", op.name, ms(c[0]), ms(c[1])),
				Value: fmt.Sprintf("%.3f", ratio(c[0], c[1])), Target: "— (informational)"})
		}
	}
	if err := s.encryptionCost(); err != nil {
		return nil, fmt.Errorf("encryption cost: %w", err)
	}
	s.add(Figure{Name: "knit's own peak memory (VmHWM of the knit process, tools not counted), largest over every terraform run above",
		Value: mib(s.peak), Target: "≤ 100 MiB", Met: met(s.peak <= 100<<20)})
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
// written as $WORK and the encryption settings as names only, and measures
// it.
func (s *suite) command(env []string, ok []int, name string, args ...string) (Sample, error) {
	shown := make([]string, 0, len(env)+1+len(args))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "TF_ENCRYPTION" || k == "TF_KNIT_STATE_KEY" {
			kv = k + "=…"
		}
		shown = append(shown, kv)
	}
	line := strings.Join(append(append(shown, filepath.Base(name)), args...), " ")
	line = strings.ReplaceAll(line, s.cfg.Work, "$WORK")
	if s.cfg.CLIConfig != "" {
		line = strings.ReplaceAll(line, s.cfg.CLIConfig, "$TOOLS/../tofurc")
	}
	line = strings.ReplaceAll(line, filepath.Dir(s.cfg.Tofu), "$TOOLS")
	line = dataDir.ReplaceAllString(line, "$$DATA")
	line = unitsDir.ReplaceAllString(line, "$$UNITS")
	if !s.seen[line] {
		s.seen[line] = true
		s.res.Commands = append(s.res.Commands, line)
	}
	return Exec(s.ctx, env, ok, name, args...)
}

// recorded runs a command through command, any exit status but 0 an error.
func (s *suite) recorded(env []string, name string, args ...string) (Sample, error) {
	return s.command(env, nil, name, args...)
}

func (s *suite) knit(dataDir string, ok []int, args ...string) (Sample, error) {
	return s.command([]string{"KNIT_DATA_DIR=" + dataDir}, ok, s.cfg.Knit, args...)
}

// tfOp is one operation measured on a terraform environment: the
// baseline's and knit's way of doing it.
type tfOp struct {
	name string
	base func(e *Env, dir string) (time.Duration, error)
	knit func(e *Env, data string) (Sample, error)
	// pairs is how many baseline-and-knit pairs each repeat takes: more
	// than one only for an operation that leaves the state as it found it.
	pairs int
}

// driftPairs is how many pairs of drift checks each repeat takes: a check
// changes nothing, costs about half a second, and its ratio is the
// noisiest of the four, so it gets more samples than one per repeat.
const driftPairs = 3

func (s *suite) tfOps() []tfOp {
	d := Direct{Tofu: s.cfg.Tofu, CLIConfig: s.cfg.CLIConfig, Parallelism: s.cfg.Parallelism, Env: s.encryption}
	par := fmt.Sprint(s.cfg.Parallelism)
	tf := []string{"--parallelism", par, "--tf-binary", s.cfg.Tofu}
	apply := func(e *Env, data string) (Sample, error) {
		return s.knit(data, nil, append([]string{"apply", "-f", e.File}, tf...)...)
	}
	return []tfOp{
		{"apply", func(e *Env, dir string) (time.Duration, error) { return d.Apply(s.ctx, e, dir) }, apply, 1},
		{"no-op re-apply", func(e *Env, dir string) (time.Duration, error) { return d.Apply(s.ctx, e, dir) },
			func(e *Env, data string) (Sample, error) {
				smp, err := apply(e, data)
				if err == nil && !strings.Contains(string(smp.Stdout), fmt.Sprintf("%d up to date", len(e.Names))) {
					err = fmt.Errorf("re-apply was not a no-op:\n%s", smp.Stdout)
				}
				return smp, err
			}, 1},
		{"drift", func(e *Env, dir string) (time.Duration, error) { return d.Drift(s.ctx, e, dir) },
			func(e *Env, data string) (Sample, error) {
				return s.knit(data, nil, append([]string{"drift", "-f", e.File}, tf...)...)
			}, driftPairs},
		{"teardown", func(e *Env, dir string) (time.Duration, error) { return d.Teardown(s.ctx, e, dir) },
			func(e *Env, data string) (Sample, error) {
				return s.knit(data, nil, append([]string{"teardown", "-f", e.File, "--auto-approve"}, tf...)...)
			}, 1},
	}
}

// terraform measures one shape at one work size (seconds of local-exec
// per module): the baseline and knit, in pairs, Repeat times, each through
// apply, no-op re-apply, drift and teardown. Which of a pair runs first
// alternates from one repeat to the next, so neither always finds the
// machine as the other left it.
func (s *suite) terraform(shape Shape, delay string) error {
	root := filepath.Join(s.cfg.Work, fmt.Sprintf("tf-%s-%s", shape, delay))
	e, err := GenerateTerraform(filepath.Join(root, "src"), shape, s.cfg.Modules, delay)
	if err != nil {
		return err
	}
	ops := s.tfOps()
	base, knit := make([][]time.Duration, len(ops)), make([][]time.Duration, len(ops))
	baseCPU, knitCPU := make([][]time.Duration, len(ops)), make([][]time.Duration, len(ops))
	for r := range s.cfg.Repeat {
		dir, data := filepath.Join(root, fmt.Sprintf("direct-%d", r)), filepath.Join(root, fmt.Sprintf("knit-%d", r))
		var line []string
		for k, op := range ops {
			for p := range op.pairs {
				b, bcpu, smp, err := s.pair(e, op, dir, data, (r+p)%2 == 1)
				if err != nil {
					return err
				}
				s.peak = max(s.peak, smp.SelfRSS)
				base[k], knit[k] = append(base[k], b), append(knit[k], smp.Wall)
				baseCPU[k], knitCPU[k] = append(baseCPU[k], bcpu), append(knitCPU[k], smp.CPU)
				line = append(line, fmt.Sprintf("%s %s/%s (cpu %s/%s)", op.name, ms(smp.Wall), ms(b), ms(smp.CPU), ms(bcpu)))
			}
		}
		s.logf("%s, %s s/module, #%d (knit/baseline): %s", shape, delay, r+1, strings.Join(line, ", "))
	}
	for k, op := range ops {
		c := s.cpu[op.name]
		if c == nil {
			c = &[2]time.Duration{}
			s.cpu[op.name] = c
		}
		c[0], c[1] = c[0]+median(knitCPU[k]), c[1]+median(baseCPU[k])
	}
	work, err := time.ParseDuration(delay + "s")
	if err != nil {
		return err
	}
	bound := Bound(e, work, s.cfg.Parallelism)
	for k, op := range ops {
		kn, bs := median(knit[k]), median(base[k])
		x := pairedRatio(knit[k], base[k])
		s.add(Figure{Name: fmt.Sprintf("%s, %s, %s s of work per module: knit ÷ baseline (%d pairs; medians %s ÷ %s)", op.name, shape, delay, len(knit[k]), ms(kn), ms(bs)),
			Value: fmt.Sprintf("%.3f", x), Target: "≤ 1.05", Met: met(x <= 1.05)})
		if op.name == "apply" && bound > 0 {
			s.add(Figure{Name: fmt.Sprintf("apply, %s, %s s of work per module: knit ÷ bound (%s ÷ %s)", shape, delay, ms(kn), ms(bound)),
				Value: fmt.Sprintf("%.3f", ratio(kn, bound)), Target: "— (informational)"})
		}
	}
	return nil
}

// boundTarget measures the layered graph at BoundDelay seconds per module
// against its physical bound: knit's first apply, Repeat times, the
// baseline alongside.
func (s *suite) boundTarget() error {
	root := filepath.Join(s.cfg.Work, "tf-bound")
	e, err := GenerateTerraform(filepath.Join(root, "src"), Layered, s.cfg.Modules, s.cfg.BoundDelay)
	if err != nil {
		return err
	}
	op := s.tfOps()[0]
	var base, knit []time.Duration
	for r := range s.cfg.Repeat {
		b, err := op.base(e, filepath.Join(root, fmt.Sprintf("direct-%d", r)))
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		smp, err := op.knit(e, filepath.Join(root, fmt.Sprintf("knit-%d", r)))
		if err != nil {
			return err
		}
		base, knit = append(base, b), append(knit, smp.Wall)
		s.logf("layered, %s s/module, #%d: knit %s, baseline %s", s.cfg.BoundDelay, r+1, ms(smp.Wall), ms(b))
	}
	work, err := time.ParseDuration(s.cfg.BoundDelay + "s")
	if err != nil {
		return err
	}
	bound := Bound(e, work, s.cfg.Parallelism)
	kn := median(knit)
	x := ratio(kn, bound)
	s.add(Figure{Name: fmt.Sprintf("apply, layered, %s s of work per module: knit ÷ bound (%s ÷ %s; baseline %s)", s.cfg.BoundDelay, ms(kn), ms(bound), ms(median(base))),
		Value: fmt.Sprintf("%.3f", x), Target: "≤ 1.25", Met: met(x <= 1.25)})
	return nil
}

// encryptionCost measures what state encryption costs the baseline: its
// apply of the layered graph with no work, with knit's encryption and
// without, alternating, Repeat times.
func (s *suite) encryptionCost() error {
	root := filepath.Join(s.cfg.Work, "tf-encryption")
	e, err := GenerateTerraform(filepath.Join(root, "src"), Layered, s.cfg.Modules, "0")
	if err != nil {
		return err
	}
	with := Direct{Tofu: s.cfg.Tofu, CLIConfig: s.cfg.CLIConfig, Parallelism: s.cfg.Parallelism, Env: s.encryption}
	without := with
	without.Env = nil
	var on, off []time.Duration
	for r := range s.cfg.Repeat {
		a, err := with.Apply(s.ctx, e, filepath.Join(root, fmt.Sprintf("on-%d", r)))
		if err != nil {
			return err
		}
		b, err := without.Apply(s.ctx, e, filepath.Join(root, fmt.Sprintf("off-%d", r)))
		if err != nil {
			return err
		}
		on, off = append(on, a), append(off, b)
	}
	x := ratio(median(on), median(off))
	s.add(Figure{Name: fmt.Sprintf("state encryption's cost to the baseline: apply, layered, 0 s of work per module, with knit's encryption ÷ without (%s ÷ %s)", ms(median(on)), ms(median(off))),
		Value: fmt.Sprintf("%.3f", x), Target: "— (informational)"})
	return nil
}

func (s *suite) add(f Figure) { s.res.Figures = append(s.res.Figures, f) }

// pair measures op once by the baseline and once by knit, knit first if
// knitFirst, and returns the baseline's wall and CPU time and knit's sample.
func (s *suite) pair(e *Env, op tfOp, dir, data string, knitFirst bool) (time.Duration, time.Duration, Sample, error) {
	var smp Sample
	var err error
	runKnit := func() error {
		smp, err = op.knit(e, data)
		return err
	}
	if knitFirst {
		if err := runKnit(); err != nil {
			return 0, 0, smp, err
		}
	}
	// The baseline's tools are this process's only children meanwhile.
	cpu0 := childrenCPU()
	b, err := op.base(e, dir)
	if err != nil {
		return 0, 0, smp, fmt.Errorf("baseline %s: %w", op.name, err)
	}
	bcpu := childrenCPU() - cpu0
	if !knitFirst {
		if err := runKnit(); err != nil {
			return 0, 0, smp, err
		}
	}
	return b, bcpu, smp, nil
}

// TempWork makes a scratch folder for a suite run.
func TempWork() (string, error) { return os.MkdirTemp("", "knit-bench-") }
