package procexec_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/procexec"
)

// A confined command runs as the sandbox's user, with no supplementary
// group, its CPU time bounded, and only the environment it is given; it
// cannot read a file only knit's user reads.
func TestAConfinedCommandRunsAsAnotherUserBounded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a command as another user") // CI and the dev container run as root
	}
	dir, err := os.MkdirTemp("", "knit-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sb := &procexec.Sandbox{UID: 65534, GID: 65534, CPU: 7 * time.Second, Dir: filepath.Join(dir, "sandbox")}
	if err := sb.Check(); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "knit.key")
	if err := os.WriteFile(secret, []byte("KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KNIT_SECRET_TEST", "leak")
	cmd := procexec.Command(context.Background(), "sh", "-c", `id -u; id -G; ulimit -t; env; cat "$0" || echo unreadable`, secret)
	cmd.Env = procexec.SandboxEnv(sb.Dir, "KNIT_VAR_X=1")
	sb.Confine(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := procexec.Run(context.Background(), cmd); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "65534" || lines[1] != "65534" || lines[2] != "7" {
		t.Errorf("uid, groups, cpu = %q, want 65534, 65534, 7:\n%s", lines[:3], out.String())
	}
	text := out.String()
	if strings.Contains(text, "KEY") || !strings.Contains(text, "unreadable") || strings.Contains(text, "KNIT_SECRET_TEST") ||
		!strings.Contains(text, "KNIT_VAR_X=1") {
		t.Errorf("the confined command read the key or knit's environment:\n%s", text)
	}
}
