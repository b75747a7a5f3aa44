package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestPipelineNotificationsArriveSigned (issue 37 item 5): a release's
// way through dev → qa (one approval) → prod (its one window closed)
// reaches a loopback webhook, each event signed with the sink's secret
// and naming pipeline, release and stage: verified in dev, waiting for
// qa's approval, verified in qa, waiting for prod's window; a second
// release whose health check fails in dev is release.failed there.
func TestPipelineNotificationsArriveSigned(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	type heard struct{ Kind, Pipeline, Release, Stage string }
	var mu sync.Mutex
	var got []heard
	hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte("s3cret"))
		m.Write(body)
		if r.Header.Get("X-Knit-Signature-256") != "sha256="+hex.EncodeToString(m.Sum(nil)) {
			t.Errorf("an unsigned or badly signed event: %s", body)
		}
		var h heard
		_ = json.Unmarshal(body, &h)
		if strings.HasPrefix(h.Kind, "release.") {
			mu.Lock()
			got = append(got, h)
			mu.Unlock()
		}
	}))
	t.Cleanup(hook.Close)
	seen := func(kind, stage string) (release string) {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range got {
			if h.Kind == kind && h.Stage == stage && h.Pipeline == "web" {
				release = h.Release
			}
		}
		return release
	}
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("v") == "2" {
			rw.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(rw, "ok")
	}))
	defer probe.Close()
	repo, s := webTrain(t, w, probe.URL, []string{"dev", "qa", "prod"}, `    - {name: dev, file: ../stages/dev.yaml}
    - {name: qa, file: ../stages/qa.yaml, approval: {required: 1}}
    - name: prod
      file: ../stages/prod.yaml
      windows: {allow: [{schedule: "0 0 29 2 *", duration: 1m}]}
`, nil, "--config", w.notifyConfig("notify.yaml", hook.URL+"/hook"))
	var r0 string
	s.eventually("release.verified in dev, then release.awaiting-approval for qa", func() bool {
		r0 = seen("release.verified", "dev")
		return r0 != "" && seen("release.awaiting-approval", "qa") == r0
	})
	op := strings.TrimSpace(w.ok("token", "create", "carol", "--role", "operator", "--team", "shop").stdout)
	if r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + op}, "promote", "web", "--release", r0, "--to", "qa"); r.code != 0 {
		t.Fatalf("knit promote to qa: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("release.verified in qa, then release.window-closed for prod", func() bool {
		return seen("release.verified", "qa") == r0 && seen("release.window-closed", "prod") == r0
	})

	repo.commit("app v2", map[string]string{"stages/dev.yaml": stageEnv("dev", "2", probe.URL+"/dev")})
	s.eventually("release.failed in dev", func() bool { r := seen("release.failed", "dev"); return r != "" && r != r0 })

	mu.Lock()
	defer mu.Unlock()
	counts := map[string]int{}
	for _, h := range got {
		counts[h.Kind+" "+h.Stage+" "+h.Release]++
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("%s heard %d times, want once", k, n)
		}
	}
}
