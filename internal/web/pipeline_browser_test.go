package web_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// seedPipeline records pipeline web: dev (soak 1h) → staging → prod (one
// approval by someone other than the author). r-2 was verified in dev
// just now (soaking), r-1 by alice (verified: her signed commit's) is
// verified in staging and waits for prod's approval, and r-0 failed its
// verification in staging.
func (w *world) seedPipeline() {
	w.t.Helper()
	ctx := context.Background()
	p, ds := spec.ParsePipeline("web.yaml", []byte(`apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: dev.yaml, soak: 1h}
    - {name: staging, file: staging.yaml}
    - {name: prod, file: prod.yaml, approval: {required: 1, requireOtherApprover: true}}
`))
	if ds.HasErrors() {
		w.t.Fatal(ds)
	}
	must := func(err error) {
		w.t.Helper()
		if err != nil {
			w.t.Fatal(err)
		}
	}
	must(w.k.PutPipeline(ctx, p, "c0ffee", map[string]string{"dev": "shop/dev", "staging": "shop/staging", "prod": "shop/prod"}))
	long := time.Now().Add(-3 * time.Hour)
	for _, id := range []string{"r-0", "r-1", "r-2"} {
		_, _, err := w.k.AddRelease(ctx, store.Release{Pipeline: "web", ID: id, Template: "t.yaml@sha256:ab", Params: []byte(`{}`),
			Commit: "c0ffee", Author: "alice", AuthorVerified: true, Message: id, CreatedAt: long})
		must(err)
	}
	set := func(release, stage, state, reason string, at time.Time) {
		w.t.Helper()
		must(w.k.SetStage(ctx, view.StageState{Pipeline: "web", Release: release, Stage: stage, State: store.StageApplying, RunID: "run-" + release + stage, ChangedAt: at}, "", "shop/"+stage))
		st := view.StageState{Pipeline: "web", Release: release, Stage: stage, State: state, Reason: reason, RunID: "run-" + release + stage, ChangedAt: at}
		if state == store.StageSucceeded {
			st.VerifiedAt = at
		}
		must(w.k.SetStage(ctx, st, store.StageApplying, "shop/"+stage))
	}
	set("r-0", "dev", store.StageSucceeded, "", long)
	set("r-0", "staging", store.StageFailed, "VerificationFailed", long)
	set("r-1", "dev", store.StageSucceeded, "", long.Add(time.Minute))
	set("r-1", "staging", store.StageSucceeded, "", long)
	set("r-2", "dev", store.StageSucceeded, "", time.Now())
}

// TestPipelinePage: stages left to right with the release in each, its
// verdict, why the next waits (a soak counting down, an approval); a
// viewer has no buttons; an operator's Promote approves r-1 into prod,
// which is then Ready; Roll back asks dev to apply r-1 again, the
// release it verified before r-2. axe-core passes.
func TestPipelinePage(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.seedPipeline()

	code, body := get(t, w.client("viewer"), w.url+"/pipelines/web")
	if code != 200 || strings.Contains(body, `class="promote"`) || strings.Contains(body, `class="rollback"`) {
		t.Fatalf("the viewer's page (%d) has a promote button or fails:\n%s", code, body)
	}
	if _, body := get(t, w.client("viewer"), w.url+"/pipelines"); !strings.Contains(body, `href="/pipelines/web"`) {
		t.Fatalf("the pipelines list lacks web:\n%s", body)
	}

	signIn(t, ctx, w, "operator", "/pipelines/web", "ol.stages")
	order := eval[[]string](t, ctx, `[...document.querySelectorAll("ol.stages > li")].map(li => li.dataset.stage + ":" + Math.round(li.getBoundingClientRect().left))`)
	if len(order) != 3 || !strings.HasPrefix(order[0], "dev:") || !strings.HasPrefix(order[2], "prod:") {
		t.Fatalf("stages: %v", order)
	}
	lefts := eval[[]float64](t, ctx, `[...document.querySelectorAll("ol.stages > li")].map(li => li.getBoundingClientRect().left)`)
	if !(lefts[0] < lefts[1] && lefts[1] < lefts[2]) {
		t.Errorf("stages are not left to right: %v", lefts)
	}
	staging := text(t, ctx, `li[data-stage="staging"]`)
	for _, want := range []string{"r-1", "verified", "r-2", "Soaking"} {
		if !strings.Contains(staging, want) {
			t.Errorf("staging's column lacks %q:\n%s", want, staging)
		}
	}
	countdown := text(t, ctx, `li[data-stage="staging"] .countdown`)
	if !regexp.MustCompile(`^in (59m|1h)$`).MatchString(countdown) {
		t.Errorf("soak countdown = %q, want in 59m", countdown)
	}
	// A fake clock an hour on: the countdown says the soak is over.
	eval[bool](t, ctx, `knit.now = () => Date.now() + 3600e3; knit.tick(); true`)
	if got := text(t, ctx, `li[data-stage="staging"] .countdown`); got != "now" {
		t.Errorf("countdown an hour later = %q, want now", got)
	}
	prod := text(t, ctx, `li[data-stage="prod"]`)
	for _, want := range []string{"AwaitingApproval", "0 of 1 approvals", "alice"} {
		if !strings.Contains(prod, want) {
			t.Errorf("prod's column lacks %q:\n%s", want, prod)
		}
	}
	checkAxe(t, ctx, "/pipelines/web")

	run(t, ctx, "promote r-1 to prod", chromedp.Click(chromedp.CSS(`li[data-stage="prod"] form.promote button`)),
		chromedp.WaitVisible(chromedp.CSS(`li[data-stage="prod"] .waiting[data-reason="Ready"]`)))
	if flash := text(t, ctx, "body"); !strings.Contains(flash, "approved r-1 into prod: Ready") {
		t.Errorf("no flash of the approval:\n%s", flash)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('li[data-stage="prod"] form.promote').length`); n != 0 {
		t.Errorf("prod still offers a promote button once Ready")
	}

	if b := text(t, ctx, `li[data-stage="dev"] form.rollback button`); b != "Roll back dev to r-1" {
		t.Fatalf("dev's rollback button says %q", b)
	}
	run(t, ctx, "roll dev back", chromedp.Click(chromedp.CSS(`li[data-stage="dev"] form.rollback button`)),
		chromedp.WaitVisible(chromedp.CSS(`li[data-stage="dev"] .waiting[data-reason="Applying"]`)))
	if dev := text(t, ctx, `li[data-stage="dev"]`); !strings.Contains(dev, "queued: rollback by operator-1") || !strings.Contains(dev, "r-1") {
		t.Errorf("dev after the rollback:\n%s", dev)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('li[data-stage="dev"] form.rollback').length`); n != 0 {
		t.Errorf("dev offers another rollback while one is queued")
	}
}

// TestPipelinePageShowsAPendingStageChange (issue 37 item 3): a change of
// prod's own file waits, Pending, with its diff in prod's column, and
// the approval it asks for; an operator's Approve button approves it
// (then Ready: the server applies it), as knit promote --change does. A
// viewer has no button. axe-core passes.
func TestPipelinePageShowsAPendingStageChange(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.seedPipeline()
	if err := w.k.PutStageFile(context.Background(), view.StageFileRecord{Pipeline: "web", Stage: "prod", SeenHash: "h2", SeenCommit: "3e32ab12cd45ef",
		Change: view.StageChangeRecord{ID: "c-3e32ab12cd45", Commit: "3e32ab12cd45ef", Hash: "h2", State: store.StageChangePending,
			Diff:   "--- stages/prod.yaml@c0ffee\n+++ stages/prod.yaml@3e32ab12cd\n@@ -1 +1 @@\n-replicas: 3\n+replicas: 4\n",
			Author: "bob", AuthorVerified: true, Subject: "prod: 4 replicas"}}, "shop/prod", true); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, w.client("viewer"), w.url+"/pipelines/web"); !strings.Contains(body, "replicas: 4") || strings.Contains(body, `class="approve-change"`) {
		t.Fatalf("the viewer's page lacks the pending change's diff or has its button:\n%s", body)
	}
	signIn(t, ctx, w, "operator", "/pipelines/web", "ol.stages")
	prod := text(t, ctx, `li[data-stage="prod"]`)
	for _, want := range []string{"c-3e32ab12cd45", "Pending", "prod: 4 replicas", "-replicas: 3", "+replicas: 4",
		"0 of 1 approvals by someone other than its author, bob: knit promote web --change c-3e32ab12cd45 --to prod"} {
		if !strings.Contains(prod, want) {
			t.Errorf("prod's column lacks %q:\n%s", want, prod)
		}
	}
	checkAxe(t, ctx, "/pipelines/web")
	run(t, ctx, "approve prod's change", chromedp.Click(chromedp.CSS(`li[data-stage="prod"] form.approve-change button`)),
		chromedp.WaitNotPresent(chromedp.CSS(`li[data-stage="prod"] form.approve-change`)))
	if flash := text(t, ctx, "body"); !strings.Contains(flash, "approved change c-3e32ab12cd45 of prod: Ready") {
		t.Errorf("no flash of the change's approval:\n%s", flash)
	}
}
