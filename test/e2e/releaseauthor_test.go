package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// twoStagePipeline is dev → prod, prod taking one approval by someone
// other than the release's author.
const twoStagePipeline = `apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: ../stages/dev.yaml}
    - name: prod
      file: ../stages/prod.yaml
      approval: {required: 1, requireOtherApprover: true}
`

// prodWaits is what knit pipeline status web -o json says of the release
// waiting to enter prod.
type prodWaits struct {
	Release, Reason, Message string
	Approval                 *struct {
		Required       int
		Author         string
		AuthorVerified bool
	}
}

// TestAPipelineReleaseIsItsSignersOnly: a pipeline release's author, for
// prod's requireOtherApprover, is only who signed its commit with a key
// the server trusts (--git-allowed-signers), never the name it claims.
// Over real git, tofu and knit serve, with tokens alice, bob and carol:
//   - bob's unsigned commit claiming alice: bob's approval alone (twice)
//     leaves the release awaiting a second distinct token (on main it
//     was Ready: alice was its author, bob "someone else"); alice's
//     approval then lets it into prod;
//   - bob's unsigned commit claiming bob: his approval is one of two, not
//     refused and not enough; carol's lets it in;
//   - a commit signed with bob's trusted key, claiming carol: the release
//     is bob's, verified: bob is refused, alice alone lets it in.
func TestAPipelineReleaseIsItsSignersOnly(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	key := w.trustedKey("bob")
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprint(rw, "ok") }))
	defer probe.Close()
	repo := newGitRepo(t, map[string]string{
		"modules/app-1/main.tf": appVersion(1), "modules/app-2/main.tf": appVersion(2),
		"modules/app-3/main.tf": appVersion(3), "modules/app-4/main.tf": appVersion(4),
		"templates/web.yaml": pipelineTemplate,
		"stages/dev.yaml":    stageEnv("dev", "1", probe.URL+"/dev"),
		"stages/prod.yaml":   stageEnv("prod", "1", probe.URL+"/prod"),
		"pipelines/web.yaml": twoStagePipeline,
	})
	s := w.startServer(gitServerArgs(repo, "--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms",
		"--git-allowed-signers", w.path("allowed_signers"))...)
	as := func(name string) []string {
		tok := strings.TrimSpace(w.ok("token", "create", name, "--role", "operator", "--team", "shop").stdout)
		return []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + tok}
	}
	alice, bob, carol := as("alice"), as("bob"), as("carol")
	prod := func() (cur string, waits prodWaits) {
		var p struct {
			Stages []struct {
				Name    string
				Current *struct{ Release string }
				Waiting *prodWaits
			}
		}
		r := w.knitWith(alice, "pipeline", "status", "web", "-o", "json")
		if r.code != 0 && strings.Contains(r.stderr, "pipeline web: not found") {
			return "", waits
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &p) != nil {
			t.Fatalf("knit pipeline status: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		for _, st := range p.Stages {
			if st.Name == "prod" {
				if st.Current != nil {
					cur = st.Current.Release
				}
				if st.Waiting != nil {
					waits = *st.Waiting
				}
			}
		}
		return cur, waits
	}
	// awaiting is the release of version v once it awaits prod's approval.
	awaiting := func(v int, before string) string {
		t.Helper()
		var waits prodWaits
		s.eventually(fmt.Sprintf("v%d awaits prod's approval", v), func() bool {
			_, waits = prod()
			return waits.Reason == "AwaitingApproval" && waits.Release != before
		})
		return waits.Release
	}
	promote := func(who []string, release string) result {
		return w.knitWith(who, "promote", "web", "--release", release, "--to", "prod", "--reason", "reviewed")
	}
	inProd := func(release string, v int) {
		t.Helper()
		s.eventually(release+" runs in prod", func() bool { cur, _ := prod(); return cur == release })
		if o := w.ok("output", "shop/prod", "app", "version"); strings.TrimSpace(o.stdout) != fmt.Sprint(v) {
			t.Fatalf("prod's app version: %q, want %d", o.stdout, v)
		}
	}
	stillWaits := func(who string, r result, release string) {
		t.Helper()
		if r.code != 3 || !strings.Contains(r.stdout, "1 of 2 approvals by distinct tokens") {
			t.Fatalf("%s's approval of %s: exit %d, want 3 (waiting for a second token)\n%s%s", who, release, r.code, r.stdout, r.stderr)
		}
		cur, waits := prod()
		if cur == release || waits.Release != release || waits.Reason != "AwaitingApproval" ||
			waits.Approval == nil || waits.Approval.Required != 2 || waits.Approval.AuthorVerified {
			t.Fatalf("prod after %s's approval of %s: current %q, waiting %+v %+v", who, release, cur, waits, waits.Approval)
		}
	}
	r0 := awaiting(1, "")

	// bob's unsigned commit claiming alice: bob alone is never enough.
	repo.commitAs("app v2", nil, []string{"--author", "alice <alice@example.com>"}, map[string]string{"stages/dev.yaml": stageEnv("dev", "2", probe.URL+"/dev")})
	r1 := awaiting(2, r0)
	for range 2 {
		stillWaits("bob", promote(bob, r1), r1)
	}
	var rels []struct {
		ID, Author     string
		AuthorVerified *bool
	}
	if err := json.Unmarshal([]byte(w.knitWith(alice, "releases", "web", "-o", "json").stdout), &rels); err != nil || len(rels) == 0 ||
		rels[0].ID != r1 || rels[0].Author != "alice" || rels[0].AuthorVerified == nil || *rels[0].AuthorVerified {
		t.Fatalf("knit releases web -o json: %+v, %v; want %s by alice, authorVerified false", rels, err, r1)
	}
	if r := w.knitWith(alice, "releases", "web"); !strings.Contains(r.stdout, "by alice (unverified") {
		t.Fatalf("knit releases web does not say alice is unverified:\n%s", r.stdout)
	}
	if r := promote(alice, r1); r.code != 0 {
		t.Fatalf("alice, the second token: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	inProd(r1, 2)

	// bob's unsigned commit claiming bob: his approval counts once.
	repo.commitAs("app v3", nil, []string{"--author", "bob <bob@example.com>"}, map[string]string{"stages/dev.yaml": stageEnv("dev", "3", probe.URL+"/dev")})
	r2 := awaiting(3, r1)
	stillWaits("bob", promote(bob, r2), r2)
	if r := promote(carol, r2); r.code != 0 {
		t.Fatalf("carol, the second token: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	inProd(r2, 3)

	// Signed with bob's trusted key, claiming carol: bob's, verified.
	repo.commitAs("app v4", []string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + key}, []string{"-S", "--author", "carol <carol@example.com>"},
		map[string]string{"stages/dev.yaml": stageEnv("dev", "4", probe.URL+"/dev")})
	r3 := awaiting(4, r2)
	if _, waits := prod(); waits.Approval == nil || waits.Approval.Author != "bob" || !waits.Approval.AuthorVerified || waits.Approval.Required != 1 {
		t.Fatalf("prod waits for the signed release with %+v, want author bob, verified, 1 required", waits.Approval)
	}
	if r := promote(bob, r3); r.code != 1 || !strings.Contains(r.stderr, "another approver") {
		t.Fatalf("bob approving the release he signed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := promote(alice, r3); r.code != 0 {
		t.Fatalf("alice alone approving bob's signed release: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	inProd(r3, 4)
}

// TestAStageGateTrustsOnlyAVerifiedReleaseAuthor: dev's own environment
// gates its plan and requires another approver. The release comes from
// an unsigned commit (claiming author t), so the run applying it to dev
// is an unverified change: bob's approval alone applies nothing (on main
// the run was the server's own, which any token approved alone); alice's
// then applies it.
func TestAStageGateTrustsOnlyAVerifiedReleaseAuthor(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprint(rw, "ok") }))
	defer probe.Close()
	gated := strings.Replace(stageEnvWith("dev", "1", probe.URL+"/dev", "  approval: {requireOtherApprover: true}\n"),
		"  autoApprove: true\n", "  autoApprove: false\n", 1)
	repo := newGitRepo(t, map[string]string{
		"modules/app-1/main.tf": appVersion(1), "templates/web.yaml": pipelineTemplate,
		"stages/dev.yaml": gated, "stages/prod.yaml": stageEnv("prod", "1", probe.URL+"/prod"),
		"pipelines/web.yaml": twoStagePipeline,
	})
	s := w.startServer(gitServerArgs(repo, "--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms")...)
	as := func(name string) []string {
		tok := strings.TrimSpace(w.ok("token", "create", name, "--role", "operator", "--team", "shop").stdout)
		return []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + tok}
	}
	alice, bob := as("alice"), as("bob")
	s.eventually("dev's plan awaits approval", func() bool {
		e, _ := s.env("shop/dev")
		return len(e.Components) == 1 && e.Components[0].Status == "awaiting-approval"
	})
	var runs struct {
		Items []struct{ Actor, Source string }
	}
	s.do("GET", "/api/v1/environments/shop/dev/runs", nil, &runs)
	if len(runs.Items) != 1 || runs.Items[0].Actor != "t" || runs.Items[0].Source != "git" {
		t.Fatalf("dev's runs: %+v, want one by t, source git (an unverified release's)", runs.Items)
	}
	if r := w.knitWith(bob, "approve", "shop/dev", "app", "--reason", "looks fine"); r.code != 1 || !strings.Contains(r.stderr, "two distinct tokens") {
		t.Fatalf("bob alone approving dev's plan of the unverified release: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if e, _ := s.env("shop/dev"); e.Components[0].Status != "awaiting-approval" {
		t.Fatalf("dev's app after bob's approval alone: %s", e.Components[0].Status)
	}
	if r := w.knitWith(alice, "approve", "shop/dev", "app", "--reason", "reviewed"); r.code != 0 {
		t.Fatalf("alice, the second approver: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("dev applies the release", func() bool {
		e, _ := s.env("shop/dev")
		return e.Components[0].Status == "applied"
	})
}
