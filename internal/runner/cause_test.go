package runner_test

import (
	"errors"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
)

func TestCauseWriterFindsTheLineThatSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name, out, want string
	}{
		{"first error line", "connecting\nERROR: bucket quota exceeded\nerror: second\ncleanup done\n", "ERROR: bucket quota exceeded"},
		{"else the last line", "step 1\nstep 2\ncannot reach db.internal:5432\n\n", "cannot reach db.internal:5432"},
		{"without a final newline", "step 1\nno space left on device", "no space left on device"},
		{"nothing printed", "", ""},
		{"a word that only starts like error", "errorless run\n", "errorless run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w runner.CauseWriter
			// Written in pieces that split lines, as pipes deliver them.
			for i := 0; i < len(tc.out); i += 3 {
				w.Write([]byte(tc.out[i:min(i+3, len(tc.out))]))
			}
			if got := w.Cause(); got != tc.want {
				t.Errorf("Cause() = %q, want %q", got, tc.want)
			}
		})
	}
}

// A flood without newlines, or of lines, keeps the writer small and the
// cause one short line.
func TestCauseWriterIsBounded(t *testing.T) {
	var w runner.CauseWriter
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range 64 {
		w.Write(chunk)
	}
	w.Write([]byte("\n"))
	for range 100000 {
		w.Write([]byte("progress line\n"))
	}
	w.Write([]byte("Error: " + strings.Repeat("é", 1000) + "\n"))
	got := w.Cause()
	if !strings.HasPrefix(got, "Error: ééé") || len(got) > 500 {
		t.Errorf("Cause() = %d bytes starting %q, want a short Error: line", len(got), got[:min(len(got), 20)])
	}
}

func TestWithCausePutsTheCauseFirstAndKeepsTheChain(t *testing.T) {
	base := errors.New("exit status 1\nstderr tail")
	err := runner.WithCause(base, "No value for required variable\n  storage_gb")
	if !errors.Is(err, base) {
		t.Error("the tool's error is not in the chain")
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	if first != "No value for required variable storage_gb" {
		t.Errorf("first line = %q", first)
	}
	if runner.WithCause(base, "") != base || runner.WithCause(nil, "x") != nil {
		t.Error("WithCause changed an error without a cause, or made one of nil")
	}
}
