package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"knit.dev/knit/internal/testtools/routertest"
)

const bgEnv = "shop/blue-green-haproxy"

// blueGreenWorld is the blue/green example applied at v1 (its first apply:
// plain), with preview checks that prove green is checked at the preview
// address while every live request still reaches blue, and scaleDownDelay
// delay ("" for: until knit rollout promote). It returns the world, its
// file, the live URL and a load running through it.
func blueGreenWorld(t *testing.T, delay string) (*world, string, string, *routertest.Load) {
	t.Helper()
	w, _, file := exampleWorld(t, "blue-green-haproxy")
	text := w.read(file)
	preview := `        previewChecks:
          - name: preview-answers
            http: {url: {valueFrom: router.preview_url}}
`
	// Green answers v2 at the preview address; the live one still v1.
	checks := `        previewChecks:
          - name: green-at-preview
            http: {url: {valueFrom: router.preview_url}, bodyRegex: "^v2"}
          - name: live-still-blue
            http: {url: {valueFrom: router.url}, bodyRegex: "^v1"}
`
	if !strings.Contains(text, preview) || !strings.Contains(text, "scaleDownDelay: 30s\n") {
		t.Fatalf("the example's previewChecks or scaleDownDelay changed:\n%s", text)
	}
	text = strings.Replace(text, preview, checks, 1)
	if delay == "" {
		text = strings.Replace(text, "        scaleDownDelay: 30s\n", "", 1)
	} else {
		text = strings.Replace(text, "scaleDownDelay: 30s", "scaleDownDelay: "+delay, 1)
	}
	w.write(map[string]string{file: text})
	w.ok("apply", "-f", file)
	live := w.output(bgEnv, "router", "url")
	load := routertest.StartLoad(t, live, routertest.LoadOptions{Workers: 3})
	if c := load.Await(t, 0, 100); c.ByVersion["v1"] != c.Total {
		t.Fatalf("before the change: %+v", c)
	}
	return w, file, live, load
}

// toV2 changes the example's app to v2 in the world's file.
func toV2(w *world, file string) {
	w.t.Helper()
	text := w.read(file)
	if !strings.Contains(text, "{name: app_version, value: v1}") {
		w.t.Fatalf("no app_version v1 in %s", file)
	}
	w.write(map[string]string{file: strings.Replace(text, "{name: app_version, value: v1}", "{name: app_version, value: v2}", 1)})
}

func (w *world) bgRollout() rolloutStatus {
	w.t.Helper()
	var s rolloutStatus
	if err := json.Unmarshal([]byte(w.ok("rollout", "status", bgEnv, "-o", "json").stdout), &s); err != nil {
		w.t.Fatal(err)
	}
	return s
}

// noGreen fails when app-green is still an applied component.
func (w *world) noGreen() {
	w.t.Helper()
	if st := w.ok("status", bgEnv).stdout; strings.Contains(st, "app-green") {
		w.t.Errorf("app-green is left:\n%s", st)
	}
}

// TestBlueGreenSwitchesAllTrafficAtOnceThroughHAProxy: a change of the
// app brings green (v2) up beside blue, checks it at the preview address
// while every live request still reaches blue (the preview checks say
// so), flips HAProxy: every request started after the flip reaches green;
// after scaleDownDelay blue's v1 instance is gone and green is destroyed,
// the app on v2 serving; the load generator saw no request lost or failed
// from start to end.
func TestBlueGreenSwitchesAllTrafficAtOnceThroughHAProxy(t *testing.T) {
	t.Parallel()
	w, file, _, load := blueGreenWorld(t, "1s")
	blue := w.output(bgEnv, "app", "url")
	toV2(w, file)
	start := load.Mark()
	r := w.knit("apply", "-f", file)
	if r.code != 0 {
		t.Fatalf("the rollout: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s := w.bgRollout()
	if s.State != "succeeded" {
		t.Fatalf("rollout %+v", s)
	}
	var phases []string
	for _, e := range s.Evidence {
		phases = append(phases, e.Phase)
		if e.Phase == "up" && (e.Status != "succeeded" || !strings.Contains(e.Verification, "Successful (2 checks)")) {
			t.Errorf("the preview checks' evidence: %+v", e)
		}
	}
	if got := strings.Join(phases, ","); got != "up,step,promote,finish" {
		t.Errorf("phases %s", got)
	}
	during := load.Since(start)
	if during.ByVersion["v1"] == 0 || during.ByVersion["v2"] == 0 {
		t.Errorf("the load saw no switch: %+v", during)
	}
	after := load.Mark()
	if c := load.Await(t, after, 200); c.ByVersion["v2"] != c.Total {
		t.Errorf("after the rollout: %+v", c)
	}
	// Blue's v1 instance is gone: its v2 one answers on its port.
	if c := routertest.Send(t, blue, 10); c.ByVersion["v2"] != 10 {
		t.Errorf("blue after scaleDownDelay: %+v", c)
	}
	w.noGreen()
	if c := load.Stop(); c.Failed != 0 || c.Errors != 0 {
		t.Errorf("requests lost or failed during the rollout: %+v", c)
	}
}

// TestBlueGreenAbortAfterTheFlipSendsTrafficBackToBlue: with no
// scaleDownDelay the rollout stops after the flip (exit 3, green
// serving); knit rollout abort flips HAProxy back: every request started
// after the abort reaches blue (v1), green is destroyed, the environment
// stays on v1, and no request was lost or failed.
func TestBlueGreenAbortAfterTheFlipSendsTrafficBackToBlue(t *testing.T) {
	t.Parallel()
	w, file, _, load := blueGreenWorld(t, "")
	toV2(w, file)
	r := w.knit("apply", "-f", file)
	if r.code != 3 {
		t.Fatalf("the rollout: exit %d, want 3 (paused after the flip)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	flipped := load.Mark()
	if c := load.Await(t, flipped, 200); c.ByVersion["v2"] != c.Total {
		t.Errorf("after the flip: %+v", c)
	}
	if r := w.knit("rollout", "abort", bgEnv, "--reason", "e2e"); r.code != 1 || !strings.Contains(r.stderr, "rollout aborted") {
		t.Fatalf("abort: exit %d\n%s", r.code, r.stderr)
	}
	back := load.Mark()
	if c := load.Await(t, back, 200); c.ByVersion["v1"] != c.Total {
		t.Errorf("after the abort: %+v", c)
	}
	if s := w.bgRollout(); s.State != "aborted" {
		t.Errorf("rollout %+v", s)
	}
	w.noGreen()
	if out := w.output(bgEnv, "app", "url"); routertest.Send(t, out, 1).ByVersion["v1"] != 1 {
		t.Errorf("the app is not on v1 after the abort")
	}
	if c := load.Stop(); c.Failed != 0 || c.Errors != 0 {
		t.Errorf("requests lost or failed: %+v", c)
	}
}

// TestBlueGreenGreenFailingAtPreviewNeverServes: a green that fails its
// preview checks (v2 answering 500 to everything) is destroyed without the
// switch ever flipping: not one live request reaches it, none fails, and
// the rollout aborts with the check's evidence, the environment on v1.
func TestBlueGreenGreenFailingAtPreviewNeverServes(t *testing.T) {
	t.Parallel()
	w, file, _, load := blueGreenWorld(t, "1s")
	toV2(w, file)
	text := w.read(file)
	w.write(map[string]string{file: strings.Replace(text, "{name: error_percent, value: 0}", "{name: error_percent, value: 100}", 1)})
	start := load.Mark()
	if r := w.knit("apply", "-f", file); r.code == 0 {
		t.Fatalf("a rollout whose green fails at preview succeeded:\n%s", r.stdout)
	}
	s := w.bgRollout()
	if s.State != "aborted" || !strings.Contains(s.Reason, "green-at-preview") {
		t.Errorf("rollout %+v", s)
	}
	w.noGreen()
	mark := load.Mark()
	load.Await(t, mark, 100)
	if c := load.Since(start); c.ByVersion["v2"] != 0 || c.ByVersion["v1"] != c.Total {
		t.Errorf("live requests during the rollout: %+v", c)
	}
	if c := load.Stop(); c.Failed != 0 || c.Errors != 0 {
		t.Errorf("requests lost or failed: %+v", c)
	}
}
