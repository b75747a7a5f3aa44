package routertest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestToolsAreDebians: each tool is found and is the version Debian
// ships (the one scripts/tools.sh installs), so the tests below drive
// the real thing.
func TestToolsAreDebians(t *testing.T) {
	for tool, args := range map[string][]string{
		"nginx":      {"-v"},
		"haproxy":    {"-v"},
		"prometheus": {"--version"},
		"socat":      {"-V"},
	} {
		out, err := exec.Command(Tool(t, tool), args...).CombinedOutput()
		if err != nil {
			t.Errorf("%s %v: %v\n%s", tool, args, err, out)
			continue
		}
		if !strings.Contains(strings.ToLower(string(out)), tool) {
			t.Errorf("%s %v says %q", tool, args, out)
		}
	}
}

// TestAMissingToolSkipsOrFails: a tool that is not installed is "", so
// Tool skips (or, in CI, fails) rather than running something else.
func TestAMissingToolSkipsOrFails(t *testing.T) {
	if p := Binary("no-such-router"); p != "" {
		t.Fatalf("Binary(no-such-router) = %q", p)
	}
}
