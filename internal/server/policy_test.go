package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/controller"
	"knit.dev/knit/internal/controller/drift"
	"knit.dev/knit/internal/controller/runqueue"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/server"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools"
)

const policyEnv = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: p}
spec:
  teamName: ops
  envName: p
  autoApprove: true
  drift: {schedule: "@every 200ms"}
  components:
    - {name: fix, type: script, script: {apply: "true"}, drift: {policy: reconcile}}
    - {name: ask, type: script, script: {apply: "true"}, drift: {policy: approve}}
    - {name: tell, type: script, script: {apply: "true"}, drift: {policy: alert}}
`

// receiver is a local webhook receiver that checks signatures and keeps
// the events it got, in order.
type receiver struct {
	mu     sync.Mutex
	events []map[string]any
	bad    int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if r.Header.Get(notify.SignatureHeader) != notify.Sign("s3cret", body) {
		rc.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev map[string]any
	json.Unmarshal(body, &ev)
	rc.events = append(rc.events, ev)
}

func (rc *receiver) kinds() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, e := range rc.events {
		out = append(out, e["kind"].(string))
	}
	return out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestScheduledDriftActsUnderEachPolicyAndNotifies(t *testing.T) {
	ctx := context.Background()
	fr := &fake.Runner{}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: t.TempDir(), Runners: map[string]runner.Runner{spec.TypeScript: fr}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() }) // after the server and its controllers stop
	env, diags := spec.Parse("p.yaml", t.TempDir(), []byte(policyEnv))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "t"}).Run(ctx); err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("apply: %v %v", res, err)
	}
	up := &receiver{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	downURL := testtools.DownURL(t) // a receiver that is down
	// The down sink is still retrying when the test ends: its undelivered
	// events are kept in the store at Close.
	serve(t, k, server.Config{PublicURL: "https://knit.example.com/"}, controller.Config{
		Drift: drift.Config{MinEvery: time.Millisecond, Tick: 20 * time.Millisecond},
		Notify: []notify.Sink{
			{Name: "down", Kind: notify.SinkWebhook, URL: downURL, Secret: "s3cret"},
			{Name: "up", Kind: notify.SinkWebhook, URL: upSrv.URL, Secret: "s3cret", Events: []string{string(notify.KindDriftFound), string(notify.KindApprovalNeeded)}},
		}}, nil)

	for _, c := range []string{"fix", "ask", "tell"} {
		fr.Drift(c) // changed out of band
	}
	state := func(c string) string {
		v, _ := knit.NewRecords(k).Environment(ctx, "ops/p")
		for _, cv := range v.Components {
			if cv.Name == c {
				return cv.Status
			}
		}
		return ""
	}
	waitUntil(t, "reconcile fixes fix, approve holds ask, alert reports tell", func() bool {
		return fr.Applied("fix") && state("ask") == "awaiting-approval" && state("tell") == "drifted"
	})
	if fr.Applied("tell") || fr.Applied("ask") {
		t.Fatal("a component whose policy is alert or approve was changed")
	}
	waitUntil(t, "the up receiver gets drift.found and approval.needed, signed, in order", func() bool {
		k := up.kinds()
		return len(k) >= 2
	})
	kinds := up.kinds()
	if kinds[0] != string(notify.KindApprovalNeeded) || kinds[1] != string(notify.KindDriftFound) || up.bad != 0 {
		t.Fatalf("events %v (bad signatures %d)", kinds, up.bad)
	}
	if !strings.Contains(up.events[0]["summary"].(string), "ask") {
		t.Fatalf("approval.needed names %v", up.events[0])
	}
	// Each event links to its run's dashboard page, at the public URL.
	for _, ev := range up.events[:2] {
		if want := "https://knit.example.com/runs/" + ev["runId"].(string); ev["url"] != want || ev["runId"] == "" {
			t.Errorf("%s: url %q, want %q", ev["kind"], ev["url"], want)
		}
	}
	if _, err := server.New(k, server.Config{PublicURL: "knit.example.com", Queue: runqueue.New(k, runqueue.Config{})}); err == nil || !strings.Contains(err.Error(), "https://knit.example.com") {
		t.Errorf("a public URL without a scheme: %v", err)
	}
}
