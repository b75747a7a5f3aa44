package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// TestAnInvalidFileIsVisibleToTheTeamOwningItsPath (issue 37 item 9): a
// new file under envs/data/ that does not validate is recorded for team
// data, which knit.yaml's owners give that path: a data operator's token
// lists it and reads why; another team's does not see it. A file no
// owner rule names stays the admins' (team git).
func TestAnInvalidFileIsVisibleToTheTeamOwningItsPath(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	typo := strings.Replace(gitEnv("warehouse", files, "v1", "", false), "type: terraform", "type: terrafrom", 1)
	repo := newGitRepo(t, map[string]string{
		"envs/modules/file/main.tf": fileModule,
		"envs/data/warehouse.yaml":  strings.Replace(typo, "teamName: shop", "teamName: data", 1),
		"envs/loose.yaml":           strings.Replace(typo, "envName: warehouse", "envName: loose", 1),
	})
	w.write(map[string]string{"knit.yaml": "owners:\n  - {path: \"envs/data/**\", team: data}\n  - {path: \"envs/pay/*.yaml\", team: pay}\n"})
	s := w.startServer(append(gitServerArgs(repo), "--config", w.path("knit.yaml"))...)
	var id, loose string
	s.eventually("both invalid files recorded", func() bool {
		id, loose = s.invalidRecord("envs/data/warehouse.yaml"), s.invalidRecord("envs/loose.yaml")
		return id != "" && loose != ""
	})
	if !regexp.MustCompile(`^data/git-envs-data-warehouse-yaml-[0-9a-f]+$`).MatchString(id) || !strings.HasPrefix(loose, "git/") {
		t.Fatalf("recorded as %q and %q, want data/git-… (its path's owner) and git/… (no owner)", id, loose)
	}
	data := strings.TrimSpace(w.ok("token", "create", "dana", "--role", "operator", "--team", "data").stdout)
	pay := strings.TrimSpace(w.ok("token", "create", "paul", "--role", "operator", "--team", "pay").stdout)
	as := func(tok string) []string { return []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + tok} }
	if r := w.knitWith(as(data), "status"); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Errorf("knit status for team data: exit %d, want %s listed\n%s%s", r.code, id, r.stdout, r.stderr)
	}
	if r := w.knitWith(as(data), "status", id); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "terrafrom") {
		t.Errorf("knit status %s for team data: exit %d, want the validation error\n%s%s", id, r.code, r.stdout, r.stderr)
	}
	if r := w.knitWith(as(pay), "status"); strings.Contains(r.stdout, id) || strings.Contains(r.stdout, loose) {
		t.Errorf("team pay sees another team's record:\n%s", r.stdout)
	}
}
