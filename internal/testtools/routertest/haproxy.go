package routertest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// HAProxy is the example's blue/green router
// (examples/blue-green-haproxy/modules/haproxy-router/switch.sh): a live
// frontend sending every request to the active color, a preview one
// sending every request to the other, changed through the runtime API on
// its admin socket.
type HAProxy struct {
	// URL is the live frontend's, PreviewURL the preview one's.
	URL, PreviewURL string
	// Socket is the admin socket (mode 600, in the run folder).
	Socket string
	run    *Run
	state  string
}

// HAProxy starts haproxy routing live requests to active (blue or green)
// and preview ones to the other; blue and green are HOST:PORT.
func (r *Run) HAProxy(t testing.TB, blue, green, active string) *HAProxy {
	t.Helper()
	h := &HAProxy{run: r, state: r.folder(t, "haproxy")}
	h.Switch(t, blue, green, active)
	h.URL = "http://" + readAddr(t, h.state)
	h.PreviewURL = "http://" + strings.TrimSpace(readFile(t, filepath.Join(h.state, "preview_addr")))
	h.Socket = filepath.Join(h.state, "admin.sock")
	return h
}

// Switch points the colors at blue and green and makes active the live
// one, through the runtime API, as the router component's apply does.
func (h *HAProxy) Switch(t testing.TB, blue, green, active string) {
	t.Helper()
	h.run.script(t, "blue-green-haproxy/modules/haproxy-router/switch.sh",
		[]string{"STATE=" + h.state, "BLUE=" + blue, "GREEN=" + green, "ACTIVE=" + active}, "apply")
}

// Runtime sends one command to the admin socket (through socat) and
// returns HAProxy's answer.
func (h *HAProxy) Runtime(t testing.TB, command string) string {
	t.Helper()
	cmd := exec.Command(Tool(t, "socat"), "-t", "5", "stdio", "unix-connect:"+h.Socket)
	cmd.Stdin = strings.NewReader(command + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy runtime %q: %v\n%s", command, err, out)
	}
	return string(out)
}
