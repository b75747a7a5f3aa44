package policy_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/policy"
)

// A policy that allocates without end (a list of six million strings,
// gigabytes of terms) is stopped by the memory bound, not left to take
// the machine's memory for the whole time bound.
func TestAPolicyThatAllocatesIsStoppedByTheMemoryBound(t *testing.T) {
	dir := write(t, map[string]string{"hog.rego": `package knit

deny contains "never" if {
	r := numbers.range(1, 2500)
	xs := [sprintf("%d-%d-padding-to-make-it-bigger", [i, j]) | some i in r; some j in r]
	count(xs) < 0
}
`})
	set, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	set.MaxMemory = 64 << 20
	set.Timeout = 5 * time.Minute // only a failure guard: the memory bound must stop it
	_, err = set.Judge(context.Background(), envPlan())
	if err == nil || !strings.Contains(err.Error(), "memory bound") {
		t.Fatalf("Judge = %v, want the memory bound's error", err)
	}
}

// A policy folder is read from inside: a .rego file that is a symbolic
// link out of it (a repository's policies/ pointing at a file of the
// server) is refused, naming it, and its content is never shown.
func TestAPolicySymlinkOutOfItsFolderIsRefused(t *testing.T) {
	outside := write(t, map[string]string{"secret.rego": "not rego: s3cr3t-of-the-server\n"})
	dir := write(t, map[string]string{"ok.rego": "package knit\n\nwarn contains \"x\" if true\n", "sub/inner.rego": "package knit\n\nwarn contains \"y\" if true\n"})
	// A link that stays inside is fine.
	if err := os.Symlink(filepath.Join(dir, "sub", "inner.rego"), filepath.Join(dir, "alias.rego")); err != nil {
		t.Fatal(err)
	}
	if _, err := policy.Load(context.Background(), dir); err != nil {
		t.Fatalf("a link inside the folder: %v", err)
	}
	for _, link := range []string{filepath.Join(outside, "secret.rego"), "../" + filepath.Base(outside) + "/secret.rego"} {
		name := filepath.Join(dir, "evil.rego")
		os.Remove(name)
		if err := os.Symlink(link, name); err != nil {
			t.Fatal(err)
		}
		_, err := policy.Load(context.Background(), dir)
		if err == nil || !strings.Contains(err.Error(), "evil.rego") || !strings.Contains(err.Error(), "outside") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("link to %s: Load = %v, want a refusal naming evil.rego, without the file's content", link, err)
		}
		var out strings.Builder
		if code := policy.Test(context.Background(), &out, time.Minute, dir); code != policy.TestError || strings.Contains(out.String(), "s3cr3t") {
			t.Errorf("link to %s: policy test exit %d:\n%s", link, code, out.String())
		}
	}
}

// print and trace in a policy never write what they print anywhere a
// run's judgement can be seen: the input may hold values a person should
// not read in logs (masked secrets aside, names and values of resources).
func TestPrintAndTraceInAPolicyWriteNothing(t *testing.T) {
	dir := write(t, map[string]string{"p.rego": `package knit

warn contains "looked" if {
	print("printed:", input.components[1].resources[0].after.filename)
	trace(sprintf("traced: %v", [input.components[1].resources[0].after.filename]))
}
`})
	set, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	got := captureStdio(t, func() {
		v, err := set.Judge(context.Background(), envPlan())
		if err != nil || len(v.Decisions) != 1 {
			t.Errorf("Judge = %+v, %v", v, err)
		}
	})
	if strings.Contains(got, "printed:") || strings.Contains(got, "traced:") || strings.Contains(got, "/etc/x") {
		t.Fatalf("the evaluation wrote:\n%s", got)
	}
}

// Policy tests cannot reach the network either: the same built-ins are
// missing from them.
func TestPolicyTestsHaveNoNetwork(t *testing.T) {
	dir := write(t, map[string]string{"p_test.rego": `package knit_test

test_fetch if {
	http.send({"method": "get", "url": "http://127.0.0.1:1/"})
}

test_lookup if {
	net.lookup_ip_addr("localhost")
}
`})
	var out strings.Builder
	if code := policy.Test(context.Background(), &out, time.Minute, dir); code != policy.TestError || !strings.Contains(out.String(), "p_test.rego:4") {
		t.Fatalf("policy test exit %d, want %d naming p_test.rego:4:\n%s", code, policy.TestError, out.String())
	}
}

// captureStdio returns what fn writes to the process's stdout and stderr.
func captureStdio(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	func() {
		defer func() { os.Stdout, os.Stderr = stdout, stderr }()
		fn()
	}()
	w.Close()
	return <-done
}

// A policy file over the bound is refused before it is read in full or
// parsed.
func TestAHugePolicyFileIsRefused(t *testing.T) {
	big := "package knit\n\nwarn contains \"x\" if true\n" + strings.Repeat("# padding\n", policy.MaxFileSize/10+1)
	_, err := policy.Load(context.Background(), write(t, map[string]string{"big.rego": big}))
	if err == nil || !strings.Contains(err.Error(), "big.rego is over") {
		t.Fatalf("Load = %v, want the file bound's error naming big.rego", err)
	}
}
