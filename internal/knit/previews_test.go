package knit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/progress"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools"
	"knit.dev/knit/internal/view"
)

const previewCommit = "0123456789abcdef0123456789abcdef01234567"

// openWith is open with the fake runner r and policy folders.

// fakeRunners runs previews unsandboxed: fake runners run no code.
var fakeRunners = knit.PreviewPolicy{Unsandboxed: true}

func openWith(t *testing.T, r *fake.Runner, policies ...string) *knit.Knit {
	t.Helper()
	k, err := adapters.Open(context.Background(), adapters.Config{Config: knit.Config{DataDir: t.TempDir(),
		Policies: policies, Runners: map[string]runner.Runner{spec.TypeScript: r}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// dbRunner is a fake runner whose db outputs a host.
func dbRunner() *fake.Runner {
	return &fake.Runner{OutputsFor: func(name string, _ runner.Inputs) runner.Outputs {
		if name == "db" {
			return runner.Outputs{"host": {Value: "db.internal"}}
		}
		return nil
	}}
}

// A preview plans the branch's file against what the environment applied,
// and applies nothing, records no revision, and leaves the plan waiting
// for approval as it was: still pending, still the one to approve. The
// policies judge it; the Markdown names their warnings.
func TestPreviewAppliesNothingAndLeavesAWaitingPlanAlone(t *testing.T) {
	ctx := context.Background()
	r := dbRunner()
	policies := t.TempDir()
	testtools.WriteFiles(t, policies, map[string]string{"watch.rego": "package knit\n\nwarn contains {\"msg\": \"app changes are watched\", \"component\": \"app\"} if true\n"})
	k := openWith(t, r, policies)
	apply(t, k, parse(t, envDoc("shop", "dev")), "alice", false) // app waits for approval
	waiting, err := knit.NewRecords(k).Approvals(ctx, "shop/dev", store.ApprovalPending)
	if err != nil || len(waiting) != 1 {
		t.Fatalf("approvals = %+v, %v; want app's, pending", waiting, err)
	}
	applies := len(r.Calls("apply"))

	branch := parse(t, strings.Replace(envDoc("shop", "dev"), "{name: size, value: 1}", "{name: size, value: 2}", 1))
	p, err := knit.NewPreview(k, knit.PreviewRequest{Policy: fakeRunners, Branch: "feature/x", Commit: previewCommit, Change: store.PreviewUpdate, Env: branch, Actor: "ada"}).Run(ctx)
	if err != nil || p.Status != store.PreviewPlanned || p.Checksum == "" || p.BaseRevision != 1 {
		t.Fatalf("preview = %+v, %v; want planned against revision 1 with a checksum", p, err)
	}
	if n := len(r.Calls("apply")); n != applies {
		t.Errorf("the preview applied %d components", n-applies)
	}
	after, err := knit.NewRecords(k).Approvals(ctx, "shop/dev", store.ApprovalPending)
	if err != nil || len(after) != 1 || after[0].ID != waiting[0].ID || after[0].PlanChecksum != waiting[0].PlanChecksum {
		t.Errorf("approvals after the preview = %+v, %v; want %+v untouched", after, err, waiting)
	}
	revs, err := knit.NewRecords(k).Revisions(ctx, "shop/dev", "", 100)
	if err != nil || len(revs.Items) != 1 {
		t.Errorf("revisions after the preview = %d, %v; want 1", len(revs.Items), err)
	}
	ps, err := knit.NewRecords(k).Previews(ctx, "feature/x", "")
	if err != nil || len(ps) != 1 {
		t.Fatalf("previews = %+v, %v", ps, err)
	}
	byName := map[string]string{}
	for _, c := range ps[0].Components {
		byName[c.Name] = c.Status + " " + c.Counts()
	}
	if byName["db"] != "up to date ~0 +0 -0" || byName["app"] != "planned ~0 +1 -0" {
		t.Errorf("components = %v; want db up to date, app planned +1", byName)
	}
	if len(ps[0].Decisions) != 1 || ps[0].Decisions[0].Kind != engine.DecisionWarn {
		t.Errorf("decisions = %+v, want the warning", ps[0].Decisions)
	}
	md := knit.PreviewMarkdown("feature/x", previewCommit, ps)
	for _, want := range []string{"`shop/dev` (update): planned", "| app | planned | ~0 +1 -0 |", "- warning: app changes are watched", p.Checksum} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}

	// The same inputs plan to the same checksum.
	again, err := knit.NewPreview(k, knit.PreviewRequest{Policy: fakeRunners, Branch: "feature/x", Commit: previewCommit, Change: store.PreviewUpdate, Env: branch}).Run(ctx)
	if err != nil || again.Checksum != p.Checksum {
		t.Errorf("the same preview again: checksum %s, %v; want %s", again.Checksum, err, p.Checksum)
	}
}

// A removed file previews as destroys; a held lock refuses the preview
// and records nothing.
func TestPreviewOfARemovedFileDestroysAndALockRefusesIt(t *testing.T) {
	ctx := context.Background()
	k := openWith(t, dbRunner())
	apply(t, k, parse(t, envDoc("shop", "dev")), "alice", true)
	p, err := knit.NewPreview(k, knit.PreviewRequest{Policy: fakeRunners, Branch: "feature/rm", Commit: previewCommit, Change: store.PreviewDestroy, EnvRef: "shop/dev"}).Run(ctx)
	if err != nil || p.Status != store.PreviewPlanned {
		t.Fatalf("preview = %+v, %v", p, err)
	}
	ps, _ := knit.NewRecords(k).Previews(ctx, "feature/rm", "")
	if len(ps) != 1 || len(ps[0].Components) != 2 {
		t.Fatalf("previews = %+v", ps)
	}
	for _, c := range ps[0].Components {
		if c.Destroy != 1 {
			t.Errorf("%s previews %s, want -1", c.Name, c.Counts())
		}
	}
	if e, err := knit.NewRecords(k).Environment(ctx, "shop/dev"); err != nil || e.Status != engine.EnvApplied {
		t.Errorf("shop/dev after a destroy preview: %+v, %v", e.Status, err)
	}

	if err := k.State().HoldLease(ctx, store.Lock{Env: "shop/dev", RunID: "held", Owner: "someone", Host: "elsewhere", PID: 1}, time.Hour); err != nil {
		t.Fatal(err)
	}
	_, err = knit.NewPreview(k, knit.PreviewRequest{Policy: fakeRunners, Branch: "feature/locked", Commit: previewCommit, Change: store.PreviewDestroy, EnvRef: "shop/dev"}).Run(ctx)
	if !errors.Is(err, engine.ErrLocked) {
		t.Errorf("preview of a locked environment: %v, want ErrLocked", err)
	}
	if ps, _ := knit.NewRecords(k).Previews(ctx, "feature/locked", ""); len(ps) != 0 {
		t.Errorf("a refused preview was recorded: %+v", ps)
	}
}

// The teardown that follows a removed file, with nothing moved since its
// destroy was previewed, applies the plan the preview showed: the same
// checksum, and the audit trail links the preview and the teardown.
func TestATeardownAppliesThePreviewedDestroyAndTheAuditLinksThem(t *testing.T) {
	ctx := context.Background()
	r := dbRunner()
	k := openWith(t, r)
	apply(t, k, parse(t, envDoc("shop", "dev")), "alice", true)
	p, err := knit.NewPreview(k, knit.PreviewRequest{Policy: fakeRunners, Branch: "feature/rm", Commit: previewCommit, Change: store.PreviewDestroy, EnvRef: "shop/dev"}).Run(ctx)
	if err != nil || p.Status != store.PreviewPlanned || p.Checksum == "" {
		t.Fatalf("preview = %+v, %v", p, err)
	}
	res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindTeardown, EnvRef: "shop/dev", Actor: "git", Source: "git", AutoApprove: true}).Run(ctx)
	if err != nil || res.Status != store.StatusSucceeded {
		t.Fatalf("teardown: %+v, %v", res, err)
	}
	if res.Checksum != p.Checksum || res.Preview == nil || res.Preview.Branch != "feature/rm" {
		t.Errorf("teardown checksum %q, preview %+v; want the preview's %q", res.Checksum, res.Preview, p.Checksum)
	}
	page, err := knit.NewRecords(k).Audit(ctx, knit.AuditFilter{Env: "shop/dev"})
	if err != nil {
		t.Fatal(err)
	}
	linked := false
	for _, a := range page.Items {
		linked = linked || a.Action == engine.AuditPreviewApplied && a.RunID == res.RunID && strings.Contains(a.Detail, p.Checksum)
	}
	if !linked {
		t.Errorf("no %s entry on the teardown's run: %+v", engine.AuditPreviewApplied, page.Items)
	}
	// What it destroyed is gone, by the previewed plan applied.
	if e, err := knit.NewRecords(k).Environment(ctx, "shop/dev"); err != nil || e.Status != engine.EnvTornDown {
		t.Errorf("shop/dev after the teardown: %+v, %v", e.Status, err)
	}
	if n := len(r.Calls("destroy")); n != 0 {
		t.Errorf("the previewed teardown ran %d one-step destroys, want the destroy plan applied", n)
	}
	// A teardown nobody previewed destroys in one step, as before, and
	// links nothing.
	apply(t, k, parse(t, envDoc("shop", "qa")), "alice", true)
	res, err = knit.NewRun(k, knit.RunRequest{Kind: engine.KindTeardown, EnvRef: "shop/qa", Actor: "git", Source: "git", AutoApprove: true}).Run(ctx)
	if err != nil || res.Status != store.StatusSucceeded || res.Preview != nil {
		t.Fatalf("teardown of shop/qa: %+v, %v", res, err)
	}
	if n := len(r.Calls("destroy")); n != 2 {
		t.Errorf("the teardown nobody previewed ran %d one-step destroys, want 2", n)
	}
}

// A preview with no sandbox (and no explicit --preview-unsandboxed) runs
// nothing of the branch: it is recorded failed, saying why.
func TestAPreviewWithoutASandboxRunsNothing(t *testing.T) {
	r := dbRunner()
	k := openWith(t, r)
	ctx := context.Background()
	branch := parse(t, envDoc("shop", "dev"))
	p, err := knit.NewPreview(k, knit.PreviewRequest{Branch: "feature/x", Commit: previewCommit, Change: store.PreviewCreate, Env: branch}).Run(ctx)
	if err != nil || p.Status != store.PreviewFailed || !strings.Contains(p.Error, "not previewed: cannot run code of unreviewed branches as another user") {
		t.Fatalf("preview = %+v, %v; want failed, saying no sandbox", p, err)
	}
	for _, op := range []string{"plan", "fingerprint"} {
		if n := len(r.Calls(op)); n != 0 {
			t.Errorf("the runner was asked to %s %d times", op, n)
		}
	}
}

// Everything of a branch that reaches the preview.ready Markdown renders
// as text: HTML, images, links, code spans and mentions are escaped.
func TestPreviewMarkdownEscapesWhatABranchControls(t *testing.T) {
	evil := "<img src=x onerror=alert(1)> ![x](http://h/x.png) [a](b) `c` @here *e* &lt;"
	md := knit.PreviewMarkdown("feature/`x`|y", previewCommit, []view.Preview{{Env: "shop/dev", Change: "update", Status: "failed",
		Error: evil + "\n# heading", Components: []view.PreviewComponent{{Name: evil, Status: "planned", Placeholders: []string{"pw"}}},
		Decisions: []progress.Decision{{Kind: "warn", Message: evil, File: "policies/p.rego", Line: 3, Rule: "warn"}}}})
	for _, bad := range []string{"<img", "![x](", "[a](", "`c`", " @here", "*e*", "\n# heading", "`x`"} {
		if strings.Contains(md, bad) {
			t.Errorf("the Markdown holds %q:\n%s", bad, md)
		}
	}
	for _, want := range []string{`&lt;img src\=x onerror\=alert\(1\)&gt;`, `\!\[x\]\(http\://h/x\.png\)`, "&#64;here", "&amp;lt;", "> \\# heading", "placeholders for its sensitive inputs: pw"} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
}
