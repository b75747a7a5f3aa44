package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"knit.dev/knit/internal/cli"
)

// knit logs ends what it prints with a newline even when the log does not
// (a tool cut off mid-line): the shell's prompt, or the next command's
// output, starts on a line of its own.
func TestLogsEndWithANewline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/environments/qa/x/components/db/logs" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"runId":"r1","env":"qa/x","component":"db","operation":"apply","status":"failed","log":"first\nlast line, cut off"}`))
	}))
	defer srv.Close()
	t.Setenv("KNIT_TOKEN", "token")
	var stdout, stderr bytes.Buffer
	if code := cli.Run(context.Background(), []string{"--server", srv.URL, "logs", "qa/x", "db"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got := stdout.String(); got != "first\nlast line, cut off\n" {
		t.Errorf("stdout %q", got)
	}
	if got := stderr.String(); got != "# apply of db in run r1: failed\n" {
		t.Errorf("stderr %q", got)
	}
}
