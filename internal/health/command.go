package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"knit.dev/knit/internal/procexec"
)

// Command is a command check: Run, by sh in Dir with exactly Env (the tool
// environment), is healthy when it exits 0.
type Command struct {
	Run string
	Dir string
	Env []string
	// Secrets are values that must never appear in evidence, besides
	// every value of Env.
	Secrets []string
	// Mask, when set, masks evidence instead of Mask(s, Env's values and
	// Secrets): the caller's one masking rule.
	Mask func(string) string
}

// outputTail is how much of a command's output a measurement keeps, of
// the last keptOutput bytes it wrote, masked first.
const (
	outputTail = 512
	keptOutput = 64 << 10
)

// Measure runs the command once: exit 0 is Successful, another exit code
// Failed; a command that cannot start or outlives the timeout is an Error.
func (c *Command) Measure(ctx context.Context) Measurement {
	out := &tail{max: keptOutput}
	cmd := procexec.CommandGrace(ctx, 0, "sh", "-c", c.Run)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = c.Dir, c.Env, out, out
	err := procexec.Run(ctx, cmd)
	said := lastBytes(c.mask(out.lines()), outputTail)
	var exit *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return Measurement{Phase: PhaseError, Message: "timed out"}
	case err == nil:
		code := 0
		return Measurement{Phase: PhaseSuccessful, ExitCode: &code, Message: "exit 0"}
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		code := exit.ExitCode()
		msg := fmt.Sprintf("exit %d", code)
		if said != "" {
			msg += ": " + said
		}
		return Measurement{Phase: PhaseFailed, ExitCode: &code, Message: msg}
	default:
		return Measurement{Phase: PhaseError, Message: c.mask(err.Error())}
	}
}

// mask replaces every secret, and every value of the environment, in s.
func (c *Command) mask(s string) string {
	if c.Mask != nil {
		return c.Mask(s)
	}
	var vals []string
	for _, kv := range c.Env {
		if _, v, ok := strings.Cut(kv, "="); ok {
			vals = append(vals, v)
		}
	}
	return Mask(s, append(vals, c.Secrets...))
}

// Masked is what a masked value is replaced with.
const Masked = "(sensitive value)"

// Mask replaces in s every line of every secret of three characters or
// more, longest first, so that no secret or part of a multi-line one shows.
func Mask(s string, secrets []string) string {
	var lines []string
	for _, sec := range secrets {
		for _, l := range strings.Split(sec, "\n") {
			if l = strings.TrimSpace(l); len(l) >= 3 {
				lines = append(lines, l)
			}
		}
	}
	// Longest first, so a secret containing another goes whole.
	for i := 1; i < len(lines); i++ {
		for j := i; j > 0 && len(lines[j]) > len(lines[j-1]); j-- {
			lines[j], lines[j-1] = lines[j-1], lines[j]
		}
	}
	for _, l := range lines {
		s = strings.ReplaceAll(s, l, Masked)
	}
	return s
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	buf bytes.Buffer
	cut bool // some output was dropped
}

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max {
		p, t.cut = p[len(p)-t.max:], true
	}
	t.buf.Write(p)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
		t.cut = true
	}
	return n, nil
}

// lines is what was kept, starting at a whole line once output was cut:
// masking works line by line, and a secret cut in two would not be masked.
func (t *tail) lines() string {
	s := t.buf.String()
	if t.cut {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			return s[i+1:]
		}
		return ""
	}
	return s
}

// lastBytes is the end of s, at most n bytes, trimmed.
func lastBytes(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
