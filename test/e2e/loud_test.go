package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// hookEvent is one notification a receiver got, its signature checked.
type hookEvent struct {
	Kind, Env, Summary, File, Commit string
	Branch, Markdown                 string
	Revision                         int
	Errors                           []string
	Signed                           bool
}

// hookReceiver is a loopback webhook receiver that checks each event's
// signature with the secret notifyConfig writes.
type hookReceiver struct {
	url    string
	mu     sync.Mutex
	events []hookEvent
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev hookEvent
		_ = json.Unmarshal(body, &ev)
		m := hmac.New(sha256.New, []byte("s3cret"))
		m.Write(body)
		ev.Signed = hmac.Equal([]byte(r.Header.Get("X-Knit-Signature-256")), []byte("sha256="+hex.EncodeToString(m.Sum(nil))))
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/hook"
	return h
}

// of returns the events of kind received so far.
func (h *hookReceiver) of(kind string) []hookEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hookEvent
	for _, ev := range h.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// TestAnInvalidCommitIsLoud: a commit whose environment file does not
// validate shows, with every error at its file:line, in knit status (list
// and environment), on the dashboard's list and graph page, and as a signed
// invalid.revision notification; the revision diff of the one-word typo is
// a few lines naming the component. A commit that puts the file back as it
// was applies it again and ends the alarm.
func TestAnInvalidCommitIsLoud(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	hook := newHookReceiver(t)
	good := gitEnv("loud", files, "v1", "", false)
	repo := newGitRepo(t, map[string]string{"envs/modules/file/main.tf": fileModule, "envs/loud.yaml": good})
	first := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(append(gitServerArgs(repo), "--config", w.notifyConfig("notify.yaml", hook.url))...)
	s.eventually("the first commit applied", func() bool { return s.appliedFrom("shop/loud", first) })

	// A one-word typo.
	typo := strings.Replace(good, "      dependsOn: [net]\n", "      dependsOn: [nett]\n", 1)
	broken := repo.commit("web after nett", map[string]string{"envs/loud.yaml": typo})
	s.eventually("the invalid.revision notification", func() bool { return len(hook.of("invalid.revision")) > 0 })
	ev := hook.of("invalid.revision")[0]
	wantErr := regexp.MustCompile(`^envs/loud\.yaml:\d+:\d+: spec\.components\[1\]\.dependsOn\[0\]: component "nett" does not exist`)
	if !ev.Signed || ev.Env != "shop/loud" || ev.File != "envs/loud.yaml" || ev.Commit != broken || ev.Revision != 2 ||
		len(ev.Errors) != 1 || !wantErr.MatchString(ev.Errors[0]) || !strings.Contains(ev.Summary, `component "nett" does not exist`) {
		t.Errorf("invalid.revision notification = %+v\nwant signed, of shop/loud, envs/loud.yaml, commit %s, revision 2, the error", ev, broken)
	}

	// The diff of the typo: one hunk of a few lines, in component web.
	var d struct {
		Groups []struct {
			Component string
			Hunks     []struct {
				Header string
				Lines  []struct{ Kind, Text string }
			}
		}
	}
	if code := s.do("GET", "/api/v1/environments/shop/loud/diff?a=1&b=2", nil, &d); code != 200 {
		t.Fatalf("GET diff: %d", code)
	}
	if len(d.Groups) != 1 || d.Groups[0].Component != "web" || len(d.Groups[0].Hunks) != 1 ||
		!strings.HasSuffix(d.Groups[0].Hunks[0].Header, "@@ component web") || len(d.Groups[0].Hunks[0].Lines) > 8 {
		t.Errorf("diff of the one-word typo: %+v\nwant one hunk of a few lines in component web", d)
	}
	diffPage := s.page("/env/shop/loud/diff?a=1&b=2")
	if !strings.Contains(diffPage, "-      dependsOn: [net]") || !strings.Contains(diffPage, htmlEscape("+      dependsOn: [nett]")) ||
		strings.Count(diffPage, `class="d-add"`) != 1 || strings.Count(diffPage, `class="d-del"`) != 1 {
		t.Errorf("the dashboard's diff is not the YAML as committed, one line changed:\n%s", diffPage)
	}

	// Two errors: every one of them is shown, at its file:line.
	typo2 := strings.Replace(typo, "      type: terraform\n      dependsOn", "      type: terrafrom\n      dependsOn", 1)
	repo.commit("and a bad type", map[string]string{"envs/loud.yaml": typo2})
	s.eventually("the second invalid.revision notification", func() bool { return len(hook.of("invalid.revision")) > 1 })
	errs := hook.of("invalid.revision")[1].Errors
	if len(errs) != 2 {
		t.Fatalf("the second invalid commit's errors: %q, want 2", errs)
	}
	remote := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	for _, args := range [][]string{{"status"}, {"status", "shop/loud"}} {
		r := w.knitWith(remote, args...)
		if r.code != 0 {
			t.Fatalf("knit %s: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "revision 3 from envs/loud.yaml") || strings.Contains(r.stdout, "(latest 3)") {
			t.Errorf("knit %s does not say revision 3 is invalid:\n%s", strings.Join(args, " "), r.stdout)
		}
		for _, e := range errs {
			first, _, _ := strings.Cut(e, "\n")
			if !strings.Contains(r.stdout, first) {
				t.Errorf("knit %s lacks the error %q:\n%s", strings.Join(args, " "), first, r.stdout)
			}
		}
	}
	list, graph := s.page("/"), s.page("/env/shop/loud")
	for name, html := range map[string]string{"list": list, "graph page": graph} {
		if !strings.Contains(html, `class="invalid" role="alert"`) {
			t.Errorf("the dashboard's %s has no banner", name)
		}
		for _, e := range errs {
			first, _, _ := strings.Cut(e, "\n")
			if !strings.Contains(html, htmlEscape(first)) {
				t.Errorf("the dashboard's %s lacks the error %q", name, first)
			}
		}
	}

	// Putting the file back as it was applies it again: the alarm ends.
	fixed := repo.commit("back as it was", map[string]string{"envs/loud.yaml": good})
	s.eventually("the fixed commit applied", func() bool { return s.appliedFrom("shop/loud", fixed) })
	if r := w.knitWith(remote, "status", "shop/loud"); strings.Contains(r.stdout, "INVALID") {
		t.Errorf("knit status still says invalid after the fix:\n%s", r.stdout)
	}
	if strings.Contains(s.page("/env/shop/loud"), `class="invalid"`) {
		t.Error("the graph page still has the banner after the fix")
	}
}

// htmlEscape is how html/template writes text.
var htmlEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace

// requiredVarModule wants at least 10 GB, which the environment does not
// give: only the tool's own validation rule can say so (knit's validation
// checks names and types, not a module's rules).
const requiredVarModule = `
variable "storage_gb" {
  type = number
  validation {
    condition     = var.storage_gb >= 10
    error_message = "The database needs storage_gb of at least 10."
  }
}
resource "terraform_data" "disk" { input = var.storage_gb }
`

// causeEnv is a gated environment whose database plan fails on the
// module's own validation rule.
const causeEnv = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: causes}
spec:
  teamName: qa
  envName: causes
  autoApprove: false
  components:
    - name: database
      type: terraform
      module: {source: ./modules/db}
      variables: [{name: storage_gb, value: 5}]
    - name: app
      type: script
      dependsOn: [database]
      script: {apply: "echo '{}'"}
`

// TestAFailingPlanLeadsWithTheToolsError: the summary of a plan that fails
// on a module's validation rule carries OpenTofu's own words, not
// "exit status 1", in the CLI's line, the API's component code and reason,
// and the run.failed notification; knit logs still has the whole log.
func TestAFailingPlanLeadsWithTheToolsError(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"envs/modules/db/main.tf": requiredVarModule, "envs/causes.yaml": causeEnv})
	cause := regexp.MustCompile(`Invalid value for variable: The database needs storage_gb of at least 10\.`)
	line := func(out, prefix string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return l
			}
		}
		return ""
	}

	// The CLI.
	r := w.knit("plan", "-f", "envs/causes.yaml")
	if l := line(r.stdout, "database"); r.code == 0 || !cause.MatchString(l) || strings.Contains(l, "exit status") {
		t.Errorf("knit plan: exit %d; the database line %q lacks the tool's error\n%s%s", r.code, l, r.stdout, r.stderr)
	}
	st := w.knit("status", "qa/causes")
	if l := line(st.stdout, "database"); l != "" && !cause.MatchString(l) {
		t.Errorf("knit status: the database line %q lacks the tool's error", l)
	}

	// The server: the API's code and reason, the notification.
	hook := newHookReceiver(t)
	repo := newGitRepo(t, map[string]string{"envs/modules/db/main.tf": requiredVarModule, "envs/causes.yaml": strings.ReplaceAll(causeEnv, "causes", "causes2")})
	s := w.startServer(append(gitServerArgs(repo), "--config", w.notifyConfig("notify.yaml", hook.url))...)
	s.eventually("the run.failed notification", func() bool { return len(hook.of("run.failed")) > 0 })
	ev := hook.of("run.failed")[0]
	if !ev.Signed || !cause.MatchString(ev.Summary) || strings.Contains(ev.Summary, "exit status") || strings.Contains(ev.Summary, "\n") {
		t.Errorf("run.failed summary = %q (signed %v), want one line with the tool's error", ev.Summary, ev.Signed)
	}
	var env struct {
		Components []struct{ Name, Code, Reason string }
	}
	s.do("GET", "/api/v1/environments/qa/causes2", nil, &env)
	for _, c := range env.Components {
		if c.Name != "database" {
			continue
		}
		firstReason, _, _ := strings.Cut(c.Reason, "\n")
		if !cause.MatchString(c.Code) || !cause.MatchString(firstReason) {
			t.Errorf("API: database code %q, reason's first line %q: want the tool's error", c.Code, firstReason)
		}
	}
	logs := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}, "logs", "qa/causes2", "database")
	if !strings.Contains(logs.stdout, "This was checked by the validation rule at") {
		t.Errorf("knit logs lacks the tool's whole diagnostic:\n%s%s", logs.stdout, logs.stderr)
	}
}

// TestNoLogOfANormalRunWarnsOfUnencryptedState: knit encrypts state and
// plans without configuring OpenTofu's plaintext fallback, so no log of an
// apply, a drift check or a teardown says "Unencrypted method".
func TestNoLogOfANormalRunWarnsOfUnencryptedState(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"files/.keep": "", "modules/file/main.tf": fileModule,
		"env.yaml": strings.ReplaceAll(gitEnv("quiet", w.path("files"), "v1", "", false), "./modules/file", w.path("modules/file"))})
	for _, step := range [][]string{{"apply", "-f", "env.yaml"}, {"drift", "shop/quiet"}, {"teardown", "shop/quiet", "--auto-approve"}} {
		w.ok(step...)
		for _, comp := range []string{"net", "web"} {
			logs := w.ok("logs", "shop/quiet", comp)
			if !strings.Contains(logs.stdout, "OpenTofu") && !strings.Contains(logs.stdout, "Initializing") && step[0] != "drift" {
				t.Errorf("knit logs after %s: the log of %s does not look like the tool's:\n%s", step[0], comp, logs.stdout)
			}
			if strings.Contains(logs.stdout, "Unencrypted method") {
				t.Errorf("the log of %s's %s warns of an unencrypted method:\n%s", comp, step[0], logs.stdout)
			}
		}
	}
}
