package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
)

// session is one operation's handle on the tool: the folder it runs in, its
// complete environment, and the component's log. Every command starts through
// procexec, in a process group of its own: cancelling ctx sends the group
// SIGINT, and whatever is left of it (the tool, its providers, a
// provisioner's children) is killed when the grace period is over. The tool
// runs in its own group, so a terminal's Ctrl-C reaches it only this way.
//
// terraform-exec is not used to run the tool: it interrupts only the tool
// itself, never its process group, and kills only the tool after its delay,
// leaving providers and provisioners running; it also refuses TF_VAR_* in
// the environment it is given, which is where sensitive inputs must go.
type session struct {
	r   *Runner
	dir string
	env []string
	log io.Writer
	// readOnly: the state is shared and env's grant only reads it (the
	// tool must not lock it); wenv is env with the grant that writes.
	readOnly bool
	wenv     []string
	// sandbox, when set, confines every command; wd, the work dir, is
	// given to its user before each (sandbox.go).
	sandbox *procexec.Sandbox
	wd      string
}

// session prepares commands in dir with the tool environment plus extra
// (TF_ENCRYPTION, sensitive inputs as TF_VAR_*; see toolEnv). write, when
// the state is shared, is the grant that writes it (stateEnv): the session
// reads only until writing is asked for.
func (r *Runner) session(dir string, log io.Writer, extra, write map[string]string) *session {
	s := &session{r: r, dir: dir, env: r.env(extra), log: &procexec.LockedWriter{W: log}}
	s.wenv = s.env
	if write != nil {
		s.readOnly = true
		merged := make(map[string]string, len(extra)+len(write))
		for k, v := range extra {
			merged[k] = v
		}
		for k, v := range write {
			merged[k] = v
		}
		s.wenv = r.env(merged)
	}
	return s
}

// writing is the session for a command that changes state (apply,
// destroy): its grant writes.
func (s *session) writing() *session {
	w := *s
	w.env, w.readOnly = s.wenv, false
	return &w
}

// lockArgs is what a command that would lock the state adds when the
// session only reads it.
func (s *session) lockArgs(args []string) []string {
	if s.readOnly {
		return append(args, "-lock=false")
	}
	return args
}

// run runs the tool with args; stdout goes to stdout (the log when nil),
// stderr to the log. A failure's error carries the end of its stderr.
func (s *session) run(ctx context.Context, args []string, stdout io.Writer) error {
	if s.sandbox != nil {
		args = sandboxArgs(args)
		if err := s.sandbox.Own(s.wd); err != nil {
			return fmt.Errorf("%s: give the work dir to the sandbox: %w", args[0], err)
		}
	}
	cmd := procexec.CommandGrace(ctx, s.r.opts.GracePeriod, s.r.bin.Path, args...)
	cmd.Dir, cmd.Env = s.dir, s.env
	if s.sandbox != nil {
		s.sandbox.Confine(cmd)
	}
	if stdout == nil {
		stdout = s.log
	}
	var stderr tail
	cmd.Stdout = stdout
	cmd.Stderr = io.MultiWriter(s.log, &stderr)
	s.r.commands.Add(1)
	err := procexec.Run(ctx, cmd)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", args[0], ctx.Err())
	}
	if err != nil {
		text := stderr.String()
		return runner.WithCause(fmt.Errorf("%s: %w\n%s", args[0], err, strings.TrimSpace(text)), stderrCause(text))
	}
	return nil
}

// stream runs a command with -json output and returns what it said; a
// failure's error carries the tool's error diagnostics, which -json puts on
// stdout.
func (s *session) stream(ctx context.Context, args []string) (*stream, error) {
	st := newStream(s.log)
	err := s.run(ctx, args, st)
	st.flush()
	return st, st.explain(err)
}

// json runs a command whose stdout is one JSON document and decodes it into
// v. Its stdout never reaches the log: it may hold plans and sensitive values.
func (s *session) json(ctx context.Context, args []string, v any) error {
	var out bytes.Buffer
	if err := s.run(ctx, args, &out); err != nil {
		return err
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		return fmt.Errorf("%s: unreadable output: %w", args[0], err)
	}
	return nil
}

// env is the complete environment of one command: the allowlisted part of
// knit's own (procexec.ToolEnv with Options.ExtraEnv: never a KNIT_*
// variable), minus what knit decides itself, plus knit's settings and extra.
// The caller's TF_VAR_* never pass: inputs come only from knit. Nor do
// TF_CLI_ARGS*, TF_LOG* (logs would mix with the tool's output and may hold
// secrets), TF_WORKSPACE, TF_DATA_DIR (knit's layout needs .terraform in the
// run folder) or TF_REATTACH_PROVIDERS. A TF_ENCRYPTION of the caller's
// passes unless knit encrypts the component itself.
func (r *Runner) env(extra map[string]string) []string {
	m := map[string]string{}
	for _, kv := range procexec.ToolEnv(nil, r.opts.ExtraEnv) {
		k, v, _ := strings.Cut(kv, "=")
		if !knitManaged(k) {
			m[k] = v
		}
	}
	for _, kv := range r.bin.Env(nil) {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	m["TF_PLUGIN_CACHE_DIR"] = r.plugins.path
	// Link a provider the cache already holds instead of re-installing it
	// over the cached copy, which another component's plan or apply may be
	// running at that moment: init then writes to the cache only what is
	// missing, so tool runs never wait for an init. The cost: the lock file
	// in a component's private module copy records the hash of the cached
	// package only; a lock file shipped with the module is still enforced.
	m["TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE"] = "true"
	m["CHECKPOINT_DISABLE"] = "1"
	for k, v := range extra {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// knitManaged reports whether knit, not the caller's environment, decides
// a variable's value for the tool.
func knitManaged(name string) bool {
	for _, p := range []string{"TF_VAR_", "TF_CLI_ARGS", "TF_LOG", "TF_KNIT_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "TF_WORKSPACE", "TF_DATA_DIR", "TF_REATTACH_PROVIDERS", "TF_IN_AUTOMATION", "TF_INPUT",
		"TF_CLI_CONFIG_FILE", "TF_PLUGIN_CACHE_DIR":
		return true
	}
	return false
}

// tail keeps the last tailSize bytes written to it: enough of a failing
// tool's stderr for its error, however much it printed.
type tail struct{ buf []byte }

const tailSize = 16 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	if len(t.buf) > tailSize {
		return string(t.buf[len(t.buf)-tailSize:])
	}
	return string(t.buf)
}
