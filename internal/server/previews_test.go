package server_test

import (
	"context"
	"strings"
	"testing"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// GET /api/v1/previews answers a branch's previews as the document says,
// each token seeing only its teams' environments; a branch name that is
// none is refused before anything is read.

// fakeRunners runs previews unsandboxed: fake runners run no code.
var fakeRunners = knit.PreviewPolicy{Unsandboxed: true}

func TestPreviewsAreTeamScopedAndConform(t *testing.T) {
	h := newHarness(t)
	admin := h.token("root", "admin")
	payViewer := h.token("pay-watcher", "viewer", "pay")
	opsViewer := h.token("ops-watcher", "viewer", "ops")
	h.seed("pay", "prod", envOpts{}, "seed")
	h.seed("ops", "web", envOpts{}, "seed")
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for _, id := range []string{"pay/prod", "ops/web"} {
		team, name, _ := strings.Cut(id, "/")
		doc := strings.Replace(envDoc(team, name, envOpts{}), "variables: [{name: db,", "variables: [{name: size, value: 2}, {name: db,", 1)
		env, diags := spec.Parse("env.yaml", t.TempDir(), []byte(doc))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		p, err := knit.NewPreview(h.k, knit.PreviewRequest{Policy: fakeRunners, Branch: "feature/x", Commit: commit,
			Change: store.PreviewUpdate, Env: env, Actor: "ada"}).Run(context.Background())
		if err != nil || p.Status != store.PreviewPlanned || p.Checksum == "" {
			t.Fatalf("preview of %s = %+v, %v; want planned with a checksum", id, p, err)
		}
	}
	envs := func(token string) []string {
		var ps []view.Preview
		h.do(call{method: "GET", path: "/api/v1/previews?branch=feature/x", token: token}, 200).decode(t, &ps)
		var out []string
		for _, p := range ps {
			out = append(out, p.Env)
		}
		return out
	}
	if got := strings.Join(envs(admin), ","); got != "ops/web,pay/prod" {
		t.Errorf("an admin sees previews of %s, want both", got)
	}
	if got := strings.Join(envs(payViewer), ","); got != "pay/prod" {
		t.Errorf("a pay token sees previews of %s, want pay/prod only", got)
	}
	if got := strings.Join(envs(opsViewer), ","); got != "ops/web" {
		t.Errorf("an ops token sees previews of %s, want ops/web only", got)
	}
	var ps []view.Preview
	h.do(call{method: "GET", path: "/api/v1/previews?branch=feature/x&commit=" + commit, token: payViewer}, 200).decode(t, &ps)
	if len(ps) != 1 || len(ps[0].Components) != 2 || ps[0].Components[0].Change+ps[0].Components[1].Change == 0 && ps[0].Components[0].Add+ps[0].Components[1].Add == 0 {
		t.Errorf("pay's preview = %+v, want its two components, one changed", ps)
	}
	h.do(call{method: "GET", path: "/api/v1/previews?branch=feature/other", token: admin}, 200).decode(t, &ps)
	if len(ps) != 0 {
		t.Errorf("another branch has previews: %+v", ps)
	}
	for _, bad := range []string{"", "feature/../main", "-x", "a%20b"} {
		// The document takes any string; the server refuses what is no branch.
		h.do(call{method: "GET", path: "/api/v1/previews?branch=" + bad, token: admin, invalid: bad == ""}, 400)
	}
	h.do(call{method: "GET", path: "/api/v1/previews?branch=feature/x&commit=zz", token: admin, invalid: true}, 400)
	h.do(call{method: "GET", path: "/api/v1/previews?branch=feature/x", invalid: true}, 401)
}
