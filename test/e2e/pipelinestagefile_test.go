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

// stageChangeStatus is knit pipeline status -o json's view of stage
// files' changes.
type stageChangeStatus struct {
	Stages []struct {
		Name              string
		ApplyStageChanges string
		StageChange       *struct{ ID, State, Diff, Reason, Message, Release string }
		Waiting           *struct{ Release, Reason, Message string }
	}
}

func (w *world) stageChange(env []string, stage string) (id, state, diff string) {
	w.t.Helper()
	var p stageChangeStatus
	r := w.knitWith(env, "pipeline", "status", "web", "-o", "json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &p) != nil {
		w.t.Fatalf("knit pipeline status: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range p.Stages {
		if s.Name == stage && s.StageChange != nil {
			return s.StageChange.ID, s.StageChange.State, s.StageChange.Diff
		}
	}
	return "", "", ""
}

// probeLog is a health endpoint that answers ok and remembers each path
// and query it was asked.
type probeLog struct {
	mu   sync.Mutex
	seen []string
	srv  *httptest.Server
}

func newProbeLog(t *testing.T) *probeLog {
	p := &probeLog{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.URL.Path+"?"+r.URL.RawQuery)
		p.mu.Unlock()
		fmt.Fprint(rw, "ok")
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *probeLog) asked(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.seen {
		if x == s {
			return true
		}
	}
	return false
}

// signedHook is a loopback webhook receiver that checks each event's
// HMAC and keeps the stage.pending ones.
func signedHook(t *testing.T) (*httptest.Server, func() []map[string]any) {
	var mu sync.Mutex
	var got []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte("s3cret"))
		m.Write(body)
		if r.Header.Get("X-Knit-Signature-256") != "sha256="+hex.EncodeToString(m.Sum(nil)) {
			t.Errorf("an unsigned or badly signed event: %s", body)
		}
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		if ev["kind"] == "stage.pending" {
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
		}
	}))
	t.Cleanup(hook.Close)
	return hook, func() []map[string]any { mu.Lock(); defer mu.Unlock(); return append([]map[string]any{}, got...) }
}

// TestAChangeOfProdsOwnFileWaitsForApproval (issue 37 item 3): a commit
// that changes only stages/prod.yaml (its health endpoint) is Pending in
// knit pipeline status, with its diff, and a stage.pending event arrives
// signed; nothing runs. Another team's token cannot approve it. knit
// serve killed -9 and started again still has it pending (told once).
// A second commit changes the file again before anyone approved: it
// replaces the first (whose approval is refused), and once approved
// only it applies, at the release prod runs; the first never does. A
// commit that changes only stages/dev.yaml applies at once.
func TestAChangeOfProdsOwnFileWaitsForApproval(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	probe := newProbeLog(t)
	hook, pending := signedHook(t)
	stages := "    - {name: dev, file: ../stages/dev.yaml}\n    - {name: prod, file: ../stages/prod.yaml}\n"
	config := w.notifyConfig("notify.yaml", hook.URL+"/hook")
	repo, s := webTrain(t, w, probe.srv.URL, []string{"dev", "prod"}, stages, nil, "--config", config)
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	var r0 string
	s.eventually("R0 verified in prod", func() bool {
		cur, _, _, _ := w.pipelineStatus(admin).stage("prod")
		r0 = cur
		return cur != ""
	})

	first := repo.commit("prod: health at /prod-4", map[string]string{"stages/prod.yaml": stageEnv("prod", "1", probe.srv.URL+"/prod-4")})
	s.eventually("prod's change is Pending", func() bool { _, state, _ := w.stageChange(admin, "prod"); return state == "Pending" })
	id, _, diff := w.stageChange(admin, "prod")
	if id != "c-"+first[:12] || !strings.Contains(diff, "+") || !strings.Contains(diff, "/prod-4") || !strings.Contains(diff, "-  parameters:") {
		t.Errorf("prod's pending change %s, want c-%s, with its diff:\n%s", id, first[:12], diff)
	}
	text := w.knitWith(admin, "pipeline", "status", "web").stdout
	if !strings.Contains(text, "stage prod: change "+id+" Pending") || !strings.Contains(text, "/prod-4") ||
		!strings.Contains(text, "knit promote web --change "+id+" --to prod") {
		t.Errorf("knit pipeline status does not show prod's pending change and its diff:\n%s", text)
	}
	s.eventually("stage.pending arrives signed", func() bool { return len(pending()) == 1 })
	if ev := pending()[0]; ev["pipeline"] != "web" || ev["stage"] != "prod" || ev["release"] != id || ev["env"] != "shop/prod" {
		t.Errorf("stage.pending event: %v", ev)
	}

	// Another team's operator: not theirs to approve (or even see).
	other := strings.TrimSpace(w.ok("token", "create", "mallory", "--role", "operator", "--team", "pay").stdout)
	if r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + other}, "promote", "web", "--change", id, "--to", "prod"); r.code == 0 {
		t.Errorf("team pay's token approved shop's stage change:\n%s", r.stdout)
	}

	// kill -9: still pending after the restart, told once.
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	s = w.startServerWithToken(s.token, append(gitServerArgs(repo, "--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms"), "--config", config)...)
	admin = []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	if got, state, _ := w.stageChange(admin, "prod"); got != id || state != "Pending" {
		t.Fatalf("after kill -9 and a restart prod's change is %s %s, want %s Pending", got, state, id)
	}

	second := repo.commit("prod: health at /prod-5", map[string]string{"stages/prod.yaml": stageEnv("prod", "1", probe.srv.URL+"/prod-5")})
	id2 := "c-" + second[:12]
	s.eventually("the second change replaces the first", func() bool { got, state, _ := w.stageChange(admin, "prod"); return got == id2 && state == "Pending" })
	if _, _, diff := w.stageChange(admin, "prod"); strings.Contains(diff, "/prod-4") || !strings.Contains(diff, "/prod-5") {
		t.Errorf("the second change's diff is not from what prod runs:\n%s", diff)
	}
	op := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + strings.TrimSpace(w.ok("token", "create", "carol", "--role", "operator", "--team", "shop").stdout)}
	if r := w.knitWith(op, "promote", "web", "--change", id, "--to", "prod"); r.code == 0 || !strings.Contains(r.stderr, id2) {
		t.Errorf("approving the replaced change: exit %d, want an error naming %s\n%s%s", r.code, id2, r.stdout, r.stderr)
	}
	if r := w.knitWith(op, "promote", "web", "--change", id2, "--to", "prod", "--reason", "new endpoint"); r.code != 0 {
		t.Fatalf("knit promote --change: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("prod's change applied", func() bool { _, state, _ := w.stageChange(admin, "prod"); return state == "Applied" })
	if !probe.asked("/prod-5?v=1") || probe.asked("/prod-4?v=1") {
		t.Errorf("prod's health was asked at %v: want /prod-5 at release 1, never /prod-4", probe.seen)
	}
	if cur, _, _, _ := w.pipelineStatus(admin).stage("prod"); cur != r0 {
		t.Errorf("prod's release after its stage change: %s, want %s still", cur, r0)
	}
	if audit := w.knitWith(admin, "audit", "shop/prod").stdout; !strings.Contains(audit, "approved stage change "+id2) {
		t.Errorf("the audit does not name carol's approval of %s:\n%s", id2, audit)
	}
	if n := len(pending()); n != 2 {
		t.Errorf("stage.pending heard %d times, want twice (one per change)", n)
	}

	// dev's own file: applied at once, no approval.
	dev := repo.commit("dev: health at /dev-2", map[string]string{"stages/dev.yaml": stageEnv("dev", "1", probe.srv.URL+"/dev-2")})
	s.eventually("dev's change applied at once", func() bool {
		got, state, _ := w.stageChange(admin, "dev")
		return got == "c-"+dev[:12] && state == "Applied"
	})
	if !probe.asked("/dev-2?v=1") {
		t.Errorf("dev's health was never asked at /dev-2: %v", probe.seen)
	}
}

// TestAStageChangeAndANewReleaseInOneCommit (issue 37 item 3): one commit
// makes release R1 (dev's module version) and changes prod's own file.
// R1 passes dev, then waits for prod: a release never carries a change of
// a stage's file nobody approved. Once the change is approved it applies
// at R0, the release prod runs, and then R1 enters prod with the file.
func TestAStageChangeAndANewReleaseInOneCommit(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	probe := newProbeLog(t)
	stages := "    - {name: dev, file: ../stages/dev.yaml}\n    - {name: prod, file: ../stages/prod.yaml}\n"
	repo, s := webTrain(t, w, probe.srv.URL, []string{"dev", "prod"}, stages, nil)
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	var r0 string
	s.eventually("R0 verified in prod", func() bool { r0, _, _, _ = w.pipelineStatus(admin).stage("prod"); return r0 != "" })

	both := repo.commit("app v2, prod at /prod-b", map[string]string{"stages/dev.yaml": stageEnv("dev", "2", probe.srv.URL+"/dev"),
		"stages/prod.yaml": stageEnv("prod", "1", probe.srv.URL+"/prod-b")})
	var r1 string
	s.eventually("R1 verified in dev waits for prod's change", func() bool {
		_, _, waiting, reason := w.pipelineStatus(admin).stage("prod")
		r1 = waiting
		return waiting != "" && waiting != r0 && reason == "AwaitingApproval"
	})
	if id, state, _ := w.stageChange(admin, "prod"); id != "c-"+both[:12] || state != "Pending" {
		t.Fatalf("prod's change: %s %s, want c-%s Pending", id, state, both[:12])
	}
	if probe.asked("/prod-b?v=1") || probe.asked("/prod-b?v=2") {
		t.Fatalf("prod ran its changed file before anyone approved it")
	}
	if r := w.knitWith(admin, "promote", "web", "--change", "c-"+both[:12], "--to", "prod"); r.code != 0 {
		t.Fatalf("knit promote --change: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("R1 verified in prod", func() bool { cur, _, _, _ := w.pipelineStatus(admin).stage("prod"); return cur == r1 })
	if _, state, _ := w.stageChange(admin, "prod"); state != "Applied" || !probe.asked("/prod-b?v=1") || !probe.asked("/prod-b?v=2") {
		t.Errorf("prod's change %s; its health was asked at %v: want /prod-b at R0 (v=1), then at R1 (v=2)", state, probe.seen)
	}
}
