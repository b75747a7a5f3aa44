package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCommandCheck(t *testing.T) {
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "API_TOKEN=s3cr3t-t0ken-value"}
	cmd := func(run string) *Command {
		return &Command{Run: run, Dir: dir, Env: env, Secrets: []string{"-----BEGIN KEY-----\nline-two-of-the-key\n-----END KEY-----"}}
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if m := measure(t, cmd("test -f ready"), time.Minute); m.Phase != PhaseSuccessful || *m.ExitCode != 0 {
		t.Errorf("in the work dir: %+v", m)
	}
	if m := measure(t, cmd("test -z \"$KNIT_NOT_PASSED\" && test -n \"$API_TOKEN\""), time.Minute); m.Phase != PhaseSuccessful {
		t.Errorf("exactly the tool environment: %+v", m)
	}
	m := measure(t, cmd(`echo "token is $API_TOKEN"; echo line-two-of-the-key >&2; exit 3`), time.Minute)
	if m.Phase != PhaseFailed || *m.ExitCode != 3 {
		t.Errorf("exit 3: %+v", m)
	}
	if strings.Contains(m.Message, "s3cr3t") || strings.Contains(m.Message, "line-two") || !strings.Contains(m.Message, "token is "+Masked) {
		t.Errorf("evidence shows a secret: %q", m.Message)
	}
}

func TestCommandCheckTimeoutIsAnError(t *testing.T) {
	m := measure(t, &Command{Run: "sleep 600", Dir: t.TempDir()}, 100*time.Millisecond)
	if m.Phase != PhaseError || m.Message != "timed out" {
		t.Errorf("got %+v", m)
	}
}

// A command printing without end leaves a short message; a secret cut by
// the kept window's start shows no part of itself.
func TestCommandCheckBoundsItsOutput(t *testing.T) {
	secret := strings.Repeat("Z", 100)
	c := &Command{Run: `i=0; while [ $i -lt 2000 ]; do echo "$SECRET"; i=$((i+1)); done; exit 1`, Dir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH"), "SECRET=" + secret}}
	m := measure(t, c, time.Minute)
	if m.Phase != PhaseFailed || len(m.Message) > outputTail+64 || strings.Contains(m.Message, "ZZZ") {
		t.Errorf("got %d bytes: %q", len(m.Message), m.Message)
	}
}

func TestMask(t *testing.T) {
	got := Mask("a abcdef b abc ab", []string{"abc", "abcdef", "ab"})
	if got != "a "+Masked+" b "+Masked+" ab" {
		t.Errorf("got %q", got)
	}
}

// Output cut in the middle of a line starts at the next whole line, so
// the cut line's end (part of a secret) is not kept unmasked.
func TestTailStartsAtAWholeLine(t *testing.T) {
	tl := &tail{max: 16}
	_, _ = tl.Write([]byte("first-secret-part\nend\n"))
	if got := tl.lines(); got != "end\n" {
		t.Errorf("got %q", got)
	}
	tl = &tail{max: 16}
	_, _ = tl.Write([]byte("short\n"))
	if got := tl.lines(); got != "short\n" {
		t.Errorf("got %q", got)
	}
}
