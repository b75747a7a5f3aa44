package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// fileEnv is an environment of three files: net ← app ← web, with app
// waiting for a person (autoApprove: false).
func fileEnv(extraSpec string, comps ...string) string {
	doc := envFile("gates", comps...)
	return strings.Replace(doc, "  autoApprove: true\n", "  autoApprove: true\n"+extraSpec, 1)
}

var (
	netComp = fileComp("net", "net", "")
	appComp = fileComp("app", "app", "      autoApprove: false\n      dependsOn: [net]\n")
	webComp = fileComp("web", "web", "      dependsOn: [app]\n")
)

func (w *world) exists(name string) bool {
	_, err := os.Stat(w.path(name))
	return err == nil
}

func TestTeardownTrueIsGatedLikeAnyChange(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	w.writeFileEnv(fileEnv("", netComp, appComp, webComp))
	w.ok("apply", "-f", "env.yaml", "--auto-approve")

	w.writeFileEnv(fileEnv("  teardown: true\n", netComp, appComp, webComp))
	r := w.knit("apply", "-f", "env.yaml", "--reason", "decommission")
	if r.code != 3 {
		t.Fatalf("apply of teardown: true exits %d, want 3 (approval gate)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// web may go at once (autoApprove); app waits, and net behind it.
	if !w.exists("files/app.txt") || !w.exists("files/net.txt") {
		t.Fatal("a gated component, or what it depends on, was destroyed without approval")
	}
	if !strings.Contains(r.stdout, "knit approve qa/gates app") {
		t.Errorf("the output does not say how to approve:\n%s", r.stdout)
	}
	w.ok("approve", "qa/gates", "app", "--reason", "CAB-42")
	for _, f := range []string{"files/net.txt", "files/app.txt", "files/web.txt"} {
		if w.exists(f) {
			t.Errorf("%s survived the approved teardown", f)
		}
	}
	var audit []struct{ Action, Actor, Reason, Component string }
	if err := json.Unmarshal([]byte(w.ok("audit", "qa/gates", "-o", "json").stdout), &audit); err != nil {
		t.Fatal(err)
	}
	var teardown, approve bool
	for _, e := range audit {
		teardown = teardown || e.Action == "teardown" && e.Actor == "e2e" && e.Reason == "decommission"
		approve = approve || e.Action == "approve" && e.Component == "app" && e.Actor == "e2e" && e.Reason == "CAB-42"
	}
	if !teardown || !approve {
		t.Errorf("audit lacks the teardown or the approval: %+v", audit)
	}
}

func TestAComponentRemovedFromTheFileIsDestroyed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	w.writeFileEnv(fileEnv("", netComp, appComp, webComp))
	w.ok("apply", "-f", "env.yaml", "--auto-approve")

	// web (autoApprove) removed: planned as a destroy, destroyed by apply.
	w.writeFileEnv(fileEnv("", netComp, appComp))
	plan := w.ok("plan", "-f", "env.yaml").stdout
	if !strings.Contains(plan, "removed from file: will be destroyed") {
		t.Fatalf("plan does not show the removed component:\n%s", plan)
	}
	w.ok("apply", "-f", "env.yaml")
	if w.exists("files/web.txt") {
		t.Fatal("apply left the removed component")
	}
	// app (autoApprove: false) removed: the destroy waits for approval.
	w.writeFileEnv(fileEnv("", netComp))
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 || !w.exists("files/app.txt") {
		t.Fatalf("removing a gated component: exit %d, app.txt exists %v\n%s", r.code, w.exists("files/app.txt"), r.stdout)
	}
	// Teardown destroys it too, though the file no longer has it.
	w.ok("teardown", "qa/gates", "--auto-approve")
	if w.exists("files/app.txt") || w.exists("files/net.txt") {
		t.Fatal("teardown left a component that was removed from the file")
	}
}

func TestAPlanOfAnEditedFileMovesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	web := fileComp("web", "web", "      dependsOn: [net]\n")
	w.writeFileEnv(fileEnv("", netComp, web))
	w.ok("apply", "-f", "env.yaml")
	w.writeFileEnv(fileEnv("", fileComp("net", "edited", ""), web))
	if r := w.knit("plan", "-f", "env.yaml", "--detailed-exitcode"); r.code != 2 {
		t.Fatalf("plan of the edited file: exit %d, want 2\n%s", r.code, r.stderr)
	}
	var st struct {
		Revision        int `json:"revision"`
		AppliedRevision int `json:"appliedRevision"`
	}
	if err := json.Unmarshal([]byte(w.ok("status", "qa/gates", "-o", "json").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.AppliedRevision != 1 || st.Revision != 1 {
		t.Fatalf("after a plan: applied %d, latest %d; want 1 and 1", st.AppliedRevision, st.Revision)
	}
	// From any folder, ENV means what was applied, and it is in sync.
	elsewhere := *w
	elsewhere.dir = t.TempDir()
	if r := elsewhere.knit("drift", "qa/gates"); r.code != 0 {
		t.Fatalf("drift from another folder: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := elsewhere.knit("plan", "qa/gates", "--detailed-exitcode"); r.code != 0 {
		t.Fatalf("plan of ENV from another folder: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
