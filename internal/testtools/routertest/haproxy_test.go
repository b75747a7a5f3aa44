package routertest

import (
	"os"
	"strings"
	"testing"
)

// TestHAProxySwitchMovesAllTrafficAtOnce: with a load running through the
// live frontend, green is reachable at the preview address while every
// live request reaches blue; the switch then moves every request started
// after it to green, and back to blue on the way back; no request is
// lost or failed on the way.
func TestHAProxySwitchMovesAllTrafficAtOnce(t *testing.T) {
	r := NewRun(t)
	blue, green := r.App(t, "v1", 0), r.App(t, "v2", 0)
	h := r.HAProxy(t, blue.Addr, blue.Addr, "blue") // green not up yet: blue's address
	load := StartLoad(t, h.URL, LoadOptions{Workers: 4})
	load.Await(t, 0, 100)

	h.Switch(t, blue.Addr, green.Addr, "blue") // green up, not live
	if c := Send(t, h.PreviewURL, 50); c.ByVersion["v2"] != 50 {
		t.Errorf("preview before the switch: %+v", c)
	}
	before := load.Mark()
	if c := load.Await(t, before, 200); c.ByVersion["v1"] != c.Total {
		t.Errorf("live before the switch reached green: %+v", c)
	}

	h.Switch(t, blue.Addr, green.Addr, "green")
	after := load.Mark()
	if c := load.Await(t, after, 300); c.ByVersion["v2"] != c.Total {
		t.Errorf("live requests started after the switch: %+v", c)
	}
	if c := Send(t, h.PreviewURL, 20); c.ByVersion["v1"] != 20 {
		t.Errorf("preview after the switch: %+v", c)
	}

	h.Switch(t, blue.Addr, green.Addr, "blue") // an abort flips back
	back := load.Mark()
	if c := load.Await(t, back, 300); c.ByVersion["v1"] != c.Total {
		t.Errorf("live requests started after flipping back: %+v", c)
	}
	if c := load.Stop(); c.Failed != 0 || c.Errors != 0 {
		t.Errorf("requests lost or failed across the switches: %+v", c)
	}
}

// TestHAProxyAdminSocketIsTheOwnersOnly: the runtime API's socket lies in
// the run folder with mode 600 (another user of the machine cannot flip
// traffic) and answers its owner.
func TestHAProxyAdminSocketIsTheOwnersOnly(t *testing.T) {
	r := NewRun(t)
	blue := r.App(t, "v1", 0)
	h := r.HAProxy(t, blue.Addr, blue.Addr, "blue")
	st, err := os.Stat(h.Socket)
	if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket %s: %v, %v", h.Socket, st.Mode(), err)
	}
	if out := h.Runtime(t, "show servers state live"); !strings.Contains(out, "blue") || !strings.Contains(out, "green") {
		t.Errorf("show servers state: %s", out)
	}
	if out := h.Runtime(t, "get weight live/green"); !strings.HasPrefix(out, "0 ") {
		t.Errorf("green's live weight: %q", out)
	}
}
