// Package script runs knit.dev/v1 `type: script` components: user commands
// run by sh, inputs given as JSON on stdin and as KNIT_VAR_<NAME>
// environment variables, outputs read as a JSON object from apply's stdout.
// Commands see only procexec.ToolEnv's allowlisted environment plus their
// inputs (a sandboxed component's: procexec.SandboxEnv and its inputs,
// run as the sandbox's user); apply's stdout (outputs, which may be secret) never reaches the log.
//
// The runner keeps two files in the component's work dir: the saved plan
// (the inputs apply will use) and the last outputs. Both may hold secrets
// (inputs from upstream sensitive outputs, sensitive outputs), so both are
// sealed with knit's key (AES-256-GCM, bound to the component and file
// name); secrets reach commands only through stdin and the environment.
package script

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
)

// Runner runs script components. It keeps each component's last outputs
// and planned inputs in its work dir, sealed.
type Runner struct {
	opts Options
	// sealer seals the work dir's files; nil without Options.Key (sealErr
	// says why when the key was unusable).
	sealer  *keyfile.Sealer
	sealErr error
	// digestKey keys the fingerprint of components with sensitive inputs.
	digestKey []byte
}

// Options configure a Runner. The zero value is ready to use.
type Options struct {
	// ExtraEnv names variables of knit's environment passed to commands in
	// addition to procexec.ToolEnv's allowlist. KNIT_* names never pass.
	ExtraEnv []string
	// GracePeriod is how long a cancelled command gets between its
	// interrupt (SIGINT) and SIGKILL to its process group. Zero means
	// procexec.Grace.
	GracePeriod time.Duration
	// Key (keyfile.Size bytes, keyfile.ScriptRunner's key) keys the
	// saved plan and outputs in each work dir and the fingerprints. Without it the
	// files are plain, and a component with sensitive inputs or outputs
	// is refused.
	Key []byte
}

// New returns a script runner configured by opts.
func New(opts Options) *Runner {
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = procexec.Grace
	}
	r := &Runner{opts: opts}
	if len(opts.Key) > 0 {
		r.sealer, r.digestKey, r.sealErr = keys(opts.Key)
	}
	return r
}

// keys are the sealer of the work files and the fingerprints' key, from
// the runner's key (keyfile.ScriptWorkFiles, keyfile.ScriptFingerprints).
func keys(runnerKey []byte) (*keyfile.Sealer, []byte, error) {
	seal, err := keyfile.ScriptWorkFiles.Under(keyfile.ScriptRunner, runnerKey)
	if err != nil {
		return nil, nil, err
	}
	digest, err := keyfile.ScriptFingerprints.Under(keyfile.ScriptRunner, runnerKey)
	if err != nil {
		return nil, nil, err
	}
	sl, err := keyfile.ScriptWorkFiles.Sealer(seal)
	return sl, digest, err
}

const (
	outputsFile = "outputs.json"
	planFile    = "plan.json"
	// appliedFile holds the fingerprint of the commands and inputs last
	// applied, sealed like the rest.
	appliedFile = "applied.fingerprint"
)

// Fingerprint hashes the commands and inputs. With sensitive inputs the
// hash is keyed, so the stored fingerprint lets nobody test guesses of a
// short secret.
func (r *Runner) Fingerprint(_ context.Context, c runner.Component, in runner.Inputs) (string, error) {
	b, err := json.Marshal(struct {
		Apply, Destroy, Plan string
		In                   runner.Inputs
	}{c.Def.Script.Apply, c.Def.Script.Destroy, c.Def.Script.Plan, in})
	if err != nil {
		return "", err
	}
	if len(c.Sensitive) == 0 {
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:]), nil
	}
	if r.digestKey == nil {
		return "", errNoKey(c)
	}
	m := hmac.New(sha256.New, r.digestKey)
	m.Write(b)
	return "keyed:" + hex.EncodeToString(m.Sum(nil)), nil
}

// Plan says what Apply would do. A component never applied (no recorded
// outputs) is always created: its plan command still runs (and its
// failure fails the plan), but its "no changes" must not leave the
// component unapplied and its dependents without outputs. After that, the plan command decides when there is
// one (exit 0: no changes, 2: changes, like terraform's
// -detailed-exitcode); without one, the component changes exactly when
// its commands or inputs did since its last apply (their fingerprint), and
// the plan says that reality was not checked (runner.Plan.Unchecked). The
// plan saves the inputs it was made with, so Apply applies exactly them.
func (r *Runner) Plan(ctx context.Context, c runner.Component, in runner.Inputs, opts runner.PlanOptions) (*runner.Plan, error) {
	if err := r.canKeep(c); err != nil {
		return nil, err
	}
	p := &runner.Plan{Destroying: opts.Destroy}
	addr := "script." + c.Def.Name
	_, err := os.Stat(filepath.Join(c.WorkDir, outputsFile))
	applied := err == nil || c.Applied != ""
	switch {
	case opts.Destroy:
		if applied {
			p.Destroy, p.Resources = 1, []runner.ResourceChange{{Address: addr, Action: runner.ActionDelete}}
		}
	case c.Def.Script.Plan == "" && !applied:
		p.Add, p.Resources = 1, []runner.ResourceChange{{Address: addr, Action: runner.ActionCreate}}
	case c.Def.Script.Plan == "":
		p.Unchecked = true
		same, err := r.sameAsApplied(ctx, c, in)
		if err != nil {
			return nil, err
		}
		if !same {
			p.Change, p.Resources = 1, []runner.ResourceChange{{Address: addr, Action: runner.ActionUpdate}}
		}
	default:
		_, err := r.run(ctx, c, c.Def.Script.Plan, in, stdoutToLog)
		var ee *exec.ExitError
		switch {
		case err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 2):
			return nil, fmt.Errorf("plan command: %w", err)
		case !applied: // whatever the plan command says
			p.Add, p.Resources = 1, []runner.ResourceChange{{Address: addr, Action: runner.ActionCreate}}
		case err != nil: // exit 2
			p.Change, p.Resources = 1, []runner.ResourceChange{{Address: addr, Action: runner.ActionUpdate}}
		}
	}
	if p.Add+p.Change > 0 {
		// What apply will print is unknown until it runs.
		for _, o := range c.Def.Outputs {
			p.OutputChanges = append(p.OutputChanges, o.Name)
		}
	}
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	if body, err = r.seal(c, planFile, body); err != nil {
		return nil, err
	}
	p.File = filepath.Join(c.WorkDir, planFile)
	write := func(p string, b []byte) error { return os.WriteFile(p, b, 0o600) }
	if c.Sandbox != nil {
		write = procexec.CreateFile // the sandbox's folder: never through its links
	}
	if err := write(p.File, body); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	p.Checksum = hex.EncodeToString(sum[:])
	return p, nil
}

// Apply runs the apply command with the planned inputs (or the destroy
// command for a destroy plan) and records its outputs.
func (r *Runner) Apply(ctx context.Context, c runner.Component, p *runner.Plan) (runner.Outputs, error) {
	body, err := os.ReadFile(p.File)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != p.Checksum {
		return nil, errors.New("the saved plan changed since it was made: plan again")
	}
	if body, err = r.open(c, planFile, body); err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	var in runner.Inputs
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	if p.Destroying {
		return runner.Outputs{}, r.Destroy(ctx, c, in)
	}
	stdout, err := r.run(ctx, c, c.Def.Script.Apply, in, stdoutOutputs)
	if err != nil {
		return nil, fmt.Errorf("apply command: %w", err)
	}
	outs, err := parseOutputs(c, stdout)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(outs)
	if err == nil {
		b, err = r.seal(c, outputsFile, b)
	}
	if err != nil {
		return nil, fmt.Errorf("record outputs: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.WorkDir, outputsFile), b, 0o600); err != nil {
		return nil, err
	}
	fp, err := r.Fingerprint(ctx, c, in)
	var sealed []byte
	if err == nil {
		sealed, err = r.seal(c, appliedFile, []byte(fp))
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(c.WorkDir, appliedFile), sealed, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("record what was applied: %w", err)
	}
	return outs, nil
}

// sameAsApplied reports whether the commands and inputs are those of the
// last apply. A component applied by a knit that kept no fingerprint is
// taken as changed.
func (r *Runner) sameAsApplied(ctx context.Context, c runner.Component, in runner.Inputs) (bool, error) {
	if c.Applied != "" { // the store's word: this host's files may be another apply's
		now, err := r.Fingerprint(ctx, c, in)
		return err == nil && now == c.Applied, err
	}
	was, err := os.ReadFile(filepath.Join(c.WorkDir, appliedFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if was, err = r.open(c, appliedFile, was); err != nil {
		return false, err
	}
	now, err := r.Fingerprint(ctx, c, in)
	return err == nil && now == string(was), err
}

// Destroy runs the destroy command, if any, and forgets the outputs.
func (r *Runner) Destroy(ctx context.Context, c runner.Component, in runner.Inputs) error {
	if c.Def.Script.Destroy != "" {
		if _, err := r.run(ctx, c, c.Def.Script.Destroy, in, stdoutToLog); err != nil {
			return fmt.Errorf("destroy command: %w", err)
		}
	}
	for _, f := range []string{outputsFile, appliedFile} {
		if err := os.Remove(filepath.Join(c.WorkDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Outputs returns the outputs recorded by the last apply.
func (r *Runner) Outputs(_ context.Context, c runner.Component) (runner.Outputs, error) {
	b, err := os.ReadFile(filepath.Join(c.WorkDir, outputsFile))
	if errors.Is(err, os.ErrNotExist) {
		return runner.Outputs{}, nil
	}
	if err != nil {
		return nil, err
	}
	if b, err = r.open(c, outputsFile, b); err != nil {
		return nil, fmt.Errorf("read outputs: %w", err)
	}
	var outs runner.Outputs
	return outs, json.Unmarshal(b, &outs)
}

// parseOutputs reads apply's stdout as a JSON object (empty: no outputs),
// flagging outputs the spec declares sensitive.
func parseOutputs(c runner.Component, stdout []byte) (runner.Outputs, error) {
	outs := runner.Outputs{}
	if len(bytes.TrimSpace(stdout)) == 0 {
		return outs, nil
	}
	var raw map[string]any
	if err := json.Unmarshal(stdout, &raw); err != nil {
		return nil, fmt.Errorf("apply command must print its outputs as one JSON object on stdout: %w", err)
	}
	for k, v := range raw {
		o := c.Def.Output(k)
		outs[k] = runner.Output{Value: v, Sensitive: o != nil && o.Sensitive}
	}
	return outs, nil
}

// stdoutUse says where a command's stdout goes.
type stdoutUse int

const (
	// stdoutToLog: plan and destroy print progress; it goes to the log.
	stdoutToLog stdoutUse = iota
	// stdoutOutputs: apply prints its outputs, which may be secret; they
	// are returned for parsing and never written to the log.
	stdoutOutputs
)

// run executes command with sh in the work dir, with the tool environment
// plus the inputs, and returns stdout when it holds outputs. Stderr always
// goes to the log.
func (r *Runner) run(ctx context.Context, c runner.Component, command string, in runner.Inputs, use stdoutUse) ([]byte, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	cmd := procexec.CommandGrace(ctx, r.opts.GracePeriod, "sh", "-c", command)
	cmd.Dir = c.WorkDir
	cmd.Env = r.env(in)
	if c.Sandbox != nil {
		// Code nobody reviewed: its user, its work dir, nothing of knit's
		// environment but the inputs (placeholders for secret ones).
		if err := c.Sandbox.Own(c.WorkDir); err != nil {
			return nil, fmt.Errorf("give the work dir to the sandbox: %w", err)
		}
		cmd.Env = procexec.SandboxEnv(c.WorkDir, inputEnv(in)...)
		c.Sandbox.Confine(cmd)
	}
	cmd.Stdin = bytes.NewReader(body)
	// stdout and stderr are copied by two goroutines: serialise their writes
	// to the log. What the log gets is watched for the failure's cause:
	// stderr, and stdout where it is progress.
	cause := &runner.CauseWriter{}
	log := &procexec.LockedWriter{W: io.MultiWriter(c.Log, cause)}
	stdout := &outputsBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if use == stdoutOutputs {
		cmd.Stdout = stdout
	}
	err = procexec.Run(ctx, cmd)
	if ctx.Err() != nil {
		return stdout.Bytes(), err
	}
	return stdout.Bytes(), runner.WithCause(err, cause.Cause())
}

// maxOutputs bounds what apply may print on stdout (its outputs).
const maxOutputs = 16 << 20

// outputsBuffer keeps apply's stdout up to maxOutputs: a script that
// prints its progress there instead of on stderr fails with a hint, and
// does not fill knit's memory.
type outputsBuffer struct{ bytes.Buffer }

func (b *outputsBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxOutputs {
		return 0, fmt.Errorf("apply printed more than %d MiB on stdout: stdout is for its outputs as one JSON object; print progress on stderr", maxOutputs>>20)
	}
	return b.Buffer.Write(p)
}

// env is what a command sees: knit's environment filtered by
// procexec.ToolEnv (no KNIT_* variable of knit's own), then the inputs as
// KNIT_VAR_*, which knit sets on purpose.
func (r *Runner) env(in runner.Inputs) []string {
	return append(procexec.ToolEnv(nil, r.opts.ExtraEnv), inputEnv(in)...)
}

// inputEnv renders inputs as KNIT_VAR_<NAME>=value (strings raw, others JSON).
func inputEnv(in runner.Inputs) []string {
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := in[k].(string)
		if !ok {
			b, _ := json.Marshal(in[k])
			v = string(b)
		}
		env = append(env, "KNIT_VAR_"+strings.ToUpper(strings.ReplaceAll(k, "-", "_"))+"="+v)
	}
	return env
}
