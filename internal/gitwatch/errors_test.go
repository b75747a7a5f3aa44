package gitwatch_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/testtools"
)

func TestBadRepositoryGivesAClearError(t *testing.T) {
	t.Parallel()
	testtools.Git(t)
	missing := "file://" + filepath.Join(t.TempDir(), "missing.git")
	w := newWatcher(t, gitwatch.Config{URL: missing})
	_, err := w.Poll(context.Background(), "")
	if err == nil {
		t.Fatal("polling a missing repository succeeded")
	}
	for _, want := range []string{missing, "branch main", "does not appear to be a git repository"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestMissingBranch(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url, Branch: "production"})
	if _, err := w.Poll(context.Background(), ""); !errors.Is(err, gitwatch.ErrBranchNotFound) {
		t.Errorf("err = %v, want ErrBranchNotFound", err)
	}
}

func TestCancelledPoll(t *testing.T) {
	t.Parallel()
	r := newRemote(t, initialFiles)
	w := newWatcher(t, gitwatch.Config{URL: r.url})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Poll(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]gitwatch.Config{
		"no URL":           {CacheDir: "c"},
		"option URL":       {URL: "--upload-pack=touch /tmp/x", CacheDir: "c"},
		"option branch":    {URL: "file:///r", Branch: "-x", CacheDir: "c"},
		"refspec branch":   {URL: "file:///r", Branch: "a:b", CacheDir: "c"},
		"path leaves repo": {URL: "file:///r", Path: "../x", CacheDir: "c"},
		"no cache":         {URL: "file:///r"},
		"missing key":      {URL: "ssh://h/r", SSHKeyFile: "/nonexistent/key", CacheDir: "c"},
		"missing token":    {URL: "https://h/r", TokenFile: "/nonexistent/token", CacheDir: "c"},
	} {
		if _, err := gitwatch.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

func TestPollRejectsAfterThatIsNotAHash(t *testing.T) {
	t.Parallel()
	w := newWatcher(t, gitwatch.Config{URL: "file:///nowhere"})
	if _, err := w.Poll(context.Background(), "--all"); err == nil || !strings.Contains(err.Error(), "not a full commit hash") {
		t.Errorf("err = %v", err)
	}
}

const secretToken = "ghp_s3cr3tT0kenValue"

func writeToken(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTokenNeverAppearsInErrors(t *testing.T) {
	t.Parallel()
	testtools.Git(t)
	w := newWatcher(t, gitwatch.Config{URL: "http://127.0.0.1:1/repo.git", TokenFile: writeToken(t, secretToken+"\n")})
	_, err := w.Poll(context.Background(), "")
	if err == nil {
		t.Fatal("fetching from a closed port succeeded")
	}
	if !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("error %q does not name the server", err)
	}
	if strings.Contains(err.Error(), secretToken) {
		t.Errorf("error shows the token: %s", err)
	}
}

// TestTokenIsSentAndRedacted runs a git HTTP server that refuses every fetch
// with a message quoting the Authorization header it received, as a
// careless server might: the header must arrive, and the error must not
// repeat it.
func TestTokenIsSentAndRedacted(t *testing.T) {
	t.Parallel()
	testtools.Git(t)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		auth := req.Header.Get("Authorization")
		mu.Lock()
		got = append(got, auth)
		mu.Unlock()
		rw.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		fmt.Fprint(rw, pktLine("# service=git-upload-pack\n"), "0000", pktLine("ERR denied for "+auth+"\n"))
	}))
	defer srv.Close()

	for name, content := range map[string]string{
		"bare token":  secretToken,
		"with scheme": "Bearer " + secretToken,
	} {
		w := newWatcher(t, gitwatch.Config{URL: srv.URL + "/repo.git", TokenFile: writeToken(t, content)})
		_, err := w.Poll(context.Background(), "")
		if err == nil || !strings.Contains(err.Error(), "denied for") {
			t.Fatalf("%s: err = %v, want the server's refusal", name, err)
		}
		basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + secretToken))
		if strings.Contains(err.Error(), secretToken) || strings.Contains(err.Error(), basic) {
			t.Errorf("%s: error shows the token: %s", name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+secretToken)), "Bearer " + secretToken}
	for _, w := range want {
		if !contains(got, w) {
			t.Errorf("server never received Authorization %q; got %q", w, got)
		}
	}
}

func pktLine(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
