// Package routertest starts, for one test, the real routers and metrics
// that canary and blue/green rollouts drive, each on loopback in a
// temporary folder of its own and stopped when the test ends: nginx
// routing by weights, HAProxy driven through its runtime API socket, small
// app servers (v1, v2) with Prometheus metrics and an error-rate knob, and
// Prometheus scraping them; and a bounded loopback load generator that
// counts responses by version and status. Every process it starts, and
// every one the example components start under its run folder, is killed
// by t.Cleanup. Import it from _test files only.
//
// The processes are Debian's nginx, haproxy, prometheus and socat (`make
// tools` installs them). A missing one skips the test with a message naming
// `make tools`, except when CI=true or KNIT_REQUIRE_TOOLS=1 (as `make test`
// sets): then it fails, as package testtools does for the other tools.
package routertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"knit.dev/knit/internal/testtools"
)

// debianPaths is where Debian's packages put each tool, in case the
// test's PATH lacks /usr/sbin.
var debianPaths = map[string]string{
	"nginx":      "/usr/sbin/nginx",
	"haproxy":    "/usr/sbin/haproxy",
	"prometheus": "/usr/bin/prometheus",
	"socat":      "/usr/bin/socat",
}

// Binary returns the path of tool (nginx, haproxy, prometheus or socat),
// "" when it is not installed.
func Binary(tool string) string {
	if p, err := exec.LookPath(tool); err == nil {
		return p
	}
	if p := debianPaths[tool]; isExec(p) {
		return p
	}
	return ""
}

// Tool returns the path of tool, skipping or failing t when it is missing
// (see the package comment).
func Tool(t testing.TB, tool string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: skipping a test that runs %s", tool)
	}
	p := Binary(tool)
	if p == "" {
		msg := tool + " not found: run make tools (it installs Debian's " + tool + " package)"
		if testtools.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// ToolPath is a PATH holding every tool's folder, then the test's own
// PATH: what the example components' scripts run with.
func ToolPath(t testing.TB) string {
	t.Helper()
	seen, dirs := map[string]bool{}, []string{}
	for _, tool := range []string{"nginx", "haproxy", "prometheus", "socat"} {
		d := filepath.Dir(Tool(t, tool))
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	path := ""
	for _, d := range dirs {
		path += d + string(os.PathListSeparator)
	}
	return path + os.Getenv("PATH")
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
