package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The GitOps tests below keep environment files in envs/ and their modules
// in envs/modules/: relative paths resolve from the file's folder, in
// GitOps as in the CLI.

// gitRevision is a revision as the API lists it.
type gitRevision struct {
	Number int
	Commit string
	Source string
	Errors string
}

// revisions lists env's revisions, newest first.
func (s *server) revisions(env string) []gitRevision {
	var revs struct{ Items []gitRevision }
	s.do("GET", "/api/v1/environments/"+env+"/revisions", nil, &revs)
	return revs.Items
}

// appliedFrom reports whether env is provisioned at a revision of commit:
// its applied revision is the newest and comes from that commit, and its
// newest run, of that revision, succeeded.
func (s *server) appliedFrom(env, commit string) bool {
	e, code := s.env(env)
	revs := s.revisions(env)
	var runs struct {
		Items []struct {
			Status   string
			Revision int
		}
	}
	s.do("GET", "/api/v1/environments/"+env+"/runs", nil, &runs)
	return code == 200 && e.Status == "provisioned" && len(revs) > 0 && revs[0].Commit == commit && e.AppliedRevision == revs[0].Number &&
		len(runs.Items) > 0 && runs.Items[0].Status == "succeeded" && runs.Items[0].Revision == revs[0].Number
}

// logged waits until the server's log has a line matching re.
func (s *server) logged(what string, re *regexp.Regexp) {
	s.t.Helper()
	s.eventually(what, func() bool { return re.MatchString(s.logText()) })
}

func (s *server) logText() string { return s.log.String() }

// committed matches the log line of a commit the server recorded.
func committed(hash string) *regexp.Regexp {
	return regexp.MustCompile(`"msg":"git: commit","commit":"` + hash[:10] + `"`)
}

func gitServerArgs(repo *gitRepo, extra ...string) []string {
	return append([]string{"--git-url", "file://" + repo.bare, "--git-path", "envs/", "--git-poll", "200ms"}, extra...)
}

// nodeEnv is an environment of node components whose events go to events.
func nodeEnv(name, events string, comps ...string) string {
	return strings.ReplaceAll(envFile(name, comps...), "EVENTS", events)
}

func TestGitOpsCommitWhileTheCLIHoldsTheLockIsApplied(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	events := w.path("events.log")
	repo := newGitRepo(t, map[string]string{
		"envs/team/modules/node/main.tf": nodeModule,
		"envs/team/lock.yaml":            nodeEnv("lock", events, node("a", "")),
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("the first commit applied", func() bool { return s.appliedFrom("qa/lock", first) })

	// The CLI applies the same environment slowly, holding its lock.
	w.write(map[string]string{"modules/node/main.tf": nodeModule})
	w.writeEnv(envFile("lock", node("a", ""), node("slow", "        - {name: delay, value: 15}\n")))
	cli := exec.Command(knitBin, "apply", "-f", "env.yaml", "--auto-approve")
	cli.Dir, cli.Env = w.dir, w.env
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	defer cli.Process.Kill()
	waitFor(t, 2*time.Minute, func() bool { return strings.Contains(w.read("events.log"), "start slow ") })

	// A commit arrives meanwhile: the lock refuses its run...
	second := repo.commit("lock: add b", map[string]string{"envs/team/lock.yaml": nodeEnv("lock", events, node("a", ""), node("b", ""))})
	s.logged("the server's run refused by the CLI's lock", regexp.MustCompile(`another run holds the environment`))
	if err := cli.Wait(); err != nil {
		t.Fatalf("the CLI's apply: %v", err)
	}
	// ...and it is applied once the lock frees.
	s.eventually("the commit applied after the CLI's run", func() bool { return s.appliedFrom("qa/lock", second) })
	if !strings.Contains(w.read("events.log"), "end b ") {
		t.Fatalf("b, added by the commit, never applied:\n%s", w.read("events.log"))
	}
}

func TestGitOpsQueuedCommitIsAppliedAfterSIGTERMAndRestart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	events := w.path("events.log")
	slow := func(name string) string {
		return nodeEnv(name, events, node(name, "        - {name: delay, value: 8}\n"))
	}
	repo := newGitRepo(t, map[string]string{
		"envs/team/modules/node/main.tf": nodeModule,
		"envs/team/first.yaml":           slow("first"),
		"envs/team/second.yaml":          slow("second"),
	})
	head := git(t, repo.work, "rev-parse", "HEAD")
	// One run at a time: whichever environment goes first, the other waits in the queue.
	args := gitServerArgs(repo, "--max-concurrent-runs", "1")
	s := w.startServer(args...)
	waitFor(t, 2*time.Minute, func() bool { return len(w.eventTimes("start")) == 1 })
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	if n := len(w.eventTimes("start")); n != 1 {
		t.Fatalf("%d environments started before the stop, want 1 (the other queued)", n)
	}

	s2 := w.startServerWithToken(s.token, args...)
	for _, env := range []string{"qa/first", "qa/second"} {
		s2.eventually(env+" applied after the restart", func() bool { return s2.appliedFrom(env, head) })
	}
	if n := len(w.eventTimes("end")); n != 2 {
		t.Errorf("%d components finished, want 2", n)
	}
}

func TestTwoServersOnOneDataDirApplyEveryQuickCommitUpToHead(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	envs := []string{"a", "b"}
	tree := func(v int) map[string]string {
		m := map[string]string{}
		for _, e := range envs {
			m["envs/"+e+"/"+e+".yaml"] = gitEnv(e, files, fmt.Sprintf("%s-v%d", e, v), "", false)
		}
		return m
	}
	initial := tree(0)
	initial["envs/a/modules/file/main.tf"] = fileModule
	initial["envs/b/modules/file/main.tf"] = fileModule
	repo := newGitRepo(t, initial)
	s1 := w.startServer(gitServerArgs(repo)...)
	s2 := w.startServerWithToken(s1.token, gitServerArgs(repo)...)

	// Six commits in quick succession, each changing both environments.
	var head string
	for v := 1; v <= 6; v++ {
		head = repo.commit(fmt.Sprintf("v%d", v), tree(v))
	}
	for _, e := range envs {
		s1.eventually("shop/"+e+" at HEAD", func() bool { return s1.appliedFrom("shop/"+e, head) })
		for _, f := range []string{"-net.txt", "-web.txt"} {
			if got, want := w.read("files/"+e+f), e+"-v6"; got != want {
				t.Errorf("%s%s = %q, want %q (HEAD's)", e, f, got, want)
			}
		}
		if src := s1.revisions("shop/" + e)[0].Source; !strings.HasSuffix(src, "@"+head+":envs/"+e+"/"+e+".yaml") {
			t.Errorf("shop/%s's applied revision comes from %s, not its file at HEAD", e, src)
		}
	}
	// One server watches; the other serves without polling.
	ages := []float64{s1.pollAge(), s2.pollAge()}
	if (ages[0] < 0) == (ages[1] < 0) {
		t.Fatalf("git poll ages %v: exactly one server should poll (the other -1)", ages)
	}
}

// pollAge reads knit_git_poll_age_seconds (-1: this server never polled).
func (s *server) pollAge() float64 {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^knit_git_poll_age_seconds (\S+)$`).FindStringSubmatch(string(body))
	if m == nil {
		s.t.Fatalf("no knit_git_poll_age_seconds in /metrics:\n%s", body)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		s.t.Fatal(err)
	}
	return v
}

func TestRenamingOrDeletingACopyOfAnEnvironmentFileDestroysNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	ops := envFile("ops", countedComp("db", ""), countedComp("app", "      dependsOn: [db]\n"))
	probe := func(v string) string {
		return envFile("probe", countedComp("p", "        - {name: extra, value: \""+v+"\"}\n"))
	}
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf": countedModule,
		"envs/ops.yaml":                ops,
		"envs/probe.yaml":              probe("1"),
	})
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("ops applied", func() bool { e, _ := s.env("qa/ops"); return e.Status == "provisioned" })
	s.eventually("probe applied", func() bool { e, _ := s.env("qa/probe"); return e.Status == "provisioned" })
	w.calls()

	// Each step ends with a change of probe: once probe is applied, what
	// the commit did to ops has been queued, and has run.
	step := func(msg string, files map[string]string, v string) string {
		t.Helper()
		files["envs/probe.yaml"] = probe(v)
		hash := repo.commit(msg, files)
		s.eventually("probe at "+v, func() bool { return s.appliedFrom("qa/probe", hash) })
		s.eventually("ops idle", func() bool {
			var runs struct {
				Items []struct{ Status, Kind string }
			}
			s.do("GET", "/api/v1/environments/qa/ops/runs", nil, &runs)
			return len(runs.Items) > 0 && runs.Items[0].Status != "running" && runs.Items[0].Status != "queued"
		})
		return hash
	}
	step("ops: rename", map[string]string{"envs/ops.yaml": "", "envs/aaa-ops.yaml": ops}, "2")
	step("ops: a copy", map[string]string{"envs/ops-copy.yaml": ops}, "3")
	step("ops: drop the copy", map[string]string{"envs/aaa-ops.yaml": ""}, "4")

	for comp, cmds := range w.calls() {
		for _, c := range cmds {
			if c == "destroy" {
				t.Errorf("%s was destroyed: %v", comp, cmds)
			}
		}
	}
	if e, _ := s.env("qa/ops"); e.Status != "provisioned" {
		t.Errorf("ops is %s after a rename and the removal of one of two files declaring it", e.Status)
	}
	var audit struct {
		Items []struct{ Action, Detail string }
	}
	s.do("GET", "/api/v1/audit?env=qa/ops&limit=1000", nil, &audit)
	warned := false
	for _, a := range audit.Items {
		warned = warned || a.Action == "git-warning" && strings.Contains(a.Detail, "envs/aaa-ops.yaml was removed")
	}
	if !warned {
		t.Errorf("no warning recorded for the removal of one of two files declaring qa/ops: %+v", audit.Items)
	}
}

func TestACommitChangingOnlyAModuleReappliesTheComponentsThatUseIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.countingTofu()
	repo := newGitRepo(t, map[string]string{
		"envs/modules/x/main.tf": countedModule,
		"envs/modules/y/main.tf": countedModule,
		"envs/a.yaml":            envFile("a", strings.ReplaceAll(countedComp("ax", ""), "./modules/counted", "./modules/x"), strings.ReplaceAll(countedComp("ay", ""), "./modules/counted", "./modules/y")),
		"envs/b.yaml":            envFile("b", strings.ReplaceAll(countedComp("bx", ""), "./modules/counted", "./modules/x")),
		"envs/c.yaml":            envFile("c", strings.ReplaceAll(countedComp("cy", ""), "./modules/counted", "./modules/y")),
	})
	s := w.startServer(gitServerArgs(repo)...)
	for _, e := range []string{"a", "b", "c"} {
		s.eventually(e+" applied", func() bool { e, _ := s.env("qa/" + e); return e.Status == "provisioned" })
	}
	w.calls()
	revs := map[string]int{}
	for _, e := range []string{"a", "b", "c"} {
		revs[e] = s.revisions("qa/" + e)[0].Number
	}

	hash := repo.commit("x: a new output", map[string]string{"envs/modules/x/main.tf": countedModule + "output \"v2\" { value = \"v2\" }\n"})
	for _, e := range []string{"a", "b"} {
		s.eventually(e+" re-applied from the commit", func() bool { return s.appliedFrom("qa/"+e, hash) })
		if n := s.revisions("qa/" + e)[0].Number; n != revs[e]+1 {
			t.Errorf("qa/%s is at revision %d, want a new one (%d)", e, n, revs[e]+1)
		}
	}
	calls := w.calls()
	for _, comp := range []string{"ax", "bx"} {
		if !strings.Contains(strings.Join(calls[comp], " "), "apply") {
			t.Errorf("%s uses the changed module but was not applied: %v", comp, calls[comp])
		}
	}
	for _, comp := range []string{"ay", "cy"} {
		if len(calls[comp]) > 0 {
			t.Errorf("%s does not use the changed module but ran %v", comp, calls[comp])
		}
	}
	if n := s.revisions("qa/c")[0].Number; n != revs["c"] {
		t.Errorf("qa/c, which does not use the module, moved from revision %d to %d", revs["c"], n)
	}
}

func TestRelativePathsResolveFromTheFilesFolderInBothModes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	inner := gitEnv("inner", files, "v1", "", false)
	outer := strings.ReplaceAll(gitEnv("outer", files, "v1", "", false), "./modules/file", "./modules/rootfile")
	repo := newGitRepo(t, map[string]string{
		"envs/modules/file/main.tf": fileModule, // beside the files: found from their folder
		"modules/rootfile/main.tf":  fileModule, // at the repository's root: not found from envs/
		"envs/inner.yaml":           inner,
		"envs/outer.yaml":           outer,
	})

	// The CLI, on a checkout of the repository.
	w.ok("validate", "-f", filepath.Join(repo.work, "envs", "inner.yaml"))
	bad := w.knit("validate", "-f", filepath.Join(repo.work, "envs", "outer.yaml"))
	const msg = `module folder "./modules/rootfile" does not exist`
	if bad.code == 0 || !strings.Contains(bad.stdout+bad.stderr, msg) {
		t.Fatalf("validate of outer.yaml: exit %d, output:\n%s%s\nwant a failure saying %s", bad.code, bad.stdout, bad.stderr, msg)
	}

	// The server, on the same commit.
	head := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("inner applied", func() bool { return s.appliedFrom("shop/inner", head) })
	if got := w.read("files/inner-web.txt"); got != "v1" {
		t.Errorf("inner-web.txt = %q", got)
	}
	s.eventually("outer recorded invalid, with the CLI's message", func() bool {
		return strings.Contains(s.invalidErrors("shop/outer", "envs/outer.yaml"), msg)
	})
	if _, err := os.Stat(filepath.Join(files, "outer-net.txt")); err == nil {
		t.Error("outer, whose module is not in its folder, was applied")
	}
}

// invalidRecord is the ID of the environment that records the invalid file
// path, found by the file in its revision's source ("" if none).
func (s *server) invalidRecord(path string) string {
	var list struct{ Items []struct{ ID string } }
	s.do("GET", "/api/v1/environments?limit=1000", nil, &list)
	for _, e := range list.Items {
		for _, r := range s.revisions(e.ID) {
			if strings.HasSuffix(r.Source, ":"+path) && r.Errors != "" {
				return e.ID
			}
		}
	}
	return ""
}

func TestAnInvalidFileIsRecordedUnderItsPathAndForgottenWithIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	evil := strings.Replace(gitEnv("evil", files, "v1", "", false), "teamName: shop", "teamName: ../../../../tmp/x", 1)
	repo := newGitRepo(t, map[string]string{
		"envs/modules/file/main.tf": fileModule,
		"envs/evil.yaml":            evil,
		"envs/good.yaml":            gitEnv("good", files, "v1", "", false),
	})
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("good applied", func() bool { e, _ := s.env("shop/good"); return e.Status == "provisioned" })
	var id string
	s.eventually("the invalid file recorded", func() bool { id = s.invalidRecord("envs/evil.yaml"); return id != "" })
	if !regexp.MustCompile(`^git/envs-evil-yaml-[0-9a-f]+$`).MatchString(id) {
		t.Fatalf("the invalid file is recorded as %q, not under an ID made of its path", id)
	}
	var list struct{ Items []struct{ ID string } }
	s.do("GET", "/api/v1/environments?limit=1000", nil, &list)
	for _, e := range list.Items {
		if strings.Contains(e.ID, "..") || strings.Contains(e.ID, "tmp") {
			t.Errorf("an environment %q was made of the invalid file's names", e.ID)
		}
	}
	if _, code := s.env(id); code != 200 {
		t.Fatalf("GET %s: %d: the record cannot be addressed", id, code)
	}

	hash := repo.commit("drop evil", map[string]string{"envs/evil.yaml": ""})
	s.logged("the removal recorded", committed(hash))
	if _, code := s.env(id); code != 404 {
		t.Errorf("GET %s after the file's removal: %d, want 404", id, code)
	}
	if e, _ := s.env("shop/good"); e.Status != "provisioned" {
		t.Errorf("good is %s", e.Status)
	}
}

// link commits a symlink name -> target (without pushing: the next commit
// does).
func (r *gitRepo) link(name, target string) {
	p := filepath.Join(r.work, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(target, p); err != nil {
		r.t.Fatal(err)
	}
	git(r.t, r.work, "add", name)
}

// invalidErrors is the errors of the newest revision recording the invalid
// file path of environment id: under id, or under the record made of the
// path when the file never validated ("" if none yet).
func (s *server) invalidErrors(id, path string) string {
	revs := s.revisions(id)
	if len(revs) == 0 {
		if rec := s.invalidRecord(path); rec != "" {
			revs = s.revisions(rec)
		}
	}
	if len(revs) == 0 {
		return ""
	}
	return revs[0].Errors
}

// GitOps reads each commit's tree, symlinks included: a module that is a
// link out of the file's folder, or a module folder holding one, is refused
// as the CLI refuses it, naming the link, and nothing of what it points to
// is copied anywhere. The commit removing the links is applied.
func TestGitOpsRefusesASymlinkOutOfTheFilesFolder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	thief := strings.ReplaceAll(gitEnv("thief", files, "v1", "", false), "./modules/file", "./leak")
	inner := strings.ReplaceAll(gitEnv("inner", files, "v1", "", false), "./modules/file", "./modules/inner")
	repo := newGitRepo(t, map[string]string{
		"envs/modules/file/main.tf": fileModule,
		"envs/good.yaml":            gitEnv("good", files, "v1", "", false),
	})
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("good applied", func() bool { e, _ := s.env("shop/good"); return e.Status == "provisioned" })

	// The server's data dir, with good's work dir and state in it; and,
	// relative, the folder of every commit's tree.
	realData, err := filepath.EvalSymlinks(w.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	repo.link("envs/leak", w.dataDir)
	repo.link("envs/modules/inner/data", "../../../..")
	bad := repo.commit("links out", map[string]string{
		"envs/thief.yaml":            thief,
		"envs/inner.yaml":            inner,
		"envs/modules/inner/main.tf": fileModule,
	})
	s.logged("the commit recorded", committed(bad))
	// The link itself, by its name in the folder: not a copy of it found
	// by walking the data dir (which holds the commit's tree).
	leak := regexp.MustCompile(`(^|[^/])leak is a symlink to ` + regexp.QuoteMeta(realData) + `, outside the environment's folder`)
	s.eventually("thief recorded invalid, naming the link", func() bool {
		return leak.MatchString(s.invalidErrors("shop/thief", "envs/thief.yaml"))
	})
	link := regexp.MustCompile(`modules/inner/data is a symlink to \S+, outside`)
	s.eventually("inner recorded invalid, naming the link", func() bool {
		return link.MatchString(s.invalidErrors("shop/inner", "envs/inner.yaml"))
	})
	for _, name := range []string{"thief", "inner"} {
		if _, err := os.Stat(filepath.Join(w.dataDir, "work", "shop", name)); err == nil {
			t.Errorf("a work dir was made for %s, refused: files from outside its folder may be in it", name)
		}
		if _, err := os.Stat(filepath.Join(files, name+"-net.txt")); err == nil {
			t.Errorf("%s, refused, was applied", name)
		}
	}

	git(t, repo.work, "rm", "-q", "envs/leak", "envs/modules/inner/data")
	fixed := repo.commit("no links", map[string]string{
		"envs/thief.yaml": gitEnv("thief", files, "v1", "", false),
	})
	for _, id := range []string{"shop/thief", "shop/inner"} {
		s.eventually(id+" applied from the fix", func() bool { return s.appliedFrom(id, fixed) })
	}
	// Nothing of the data dir reached a module copy.
	top, err := os.ReadDir(w.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"thief", "inner"} {
		for _, comp := range []string{"net", "web"} {
			for _, e := range top {
				p := filepath.Join(w.dataDir, "work", "shop", name, comp, "module", e.Name())
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s is in the module copy of %s/%s: the data dir was copied", e.Name(), name, comp)
				}
			}
		}
	}
}
