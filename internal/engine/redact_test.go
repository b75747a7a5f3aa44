package engine

import (
	"fmt"
	"strings"
	"testing"
)

func TestRedactMasksSecretsOfAnyLengthAsWholeValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"password=ab done", "password=(sensitive value) done"},
		{"ab", "(sensitive value)"},
		{"about abc cab ab.", "about abc cab (sensitive value)."},
		{`{"token":"ab"}`, `{"token":"(sensitive value)"}`},
		{"x", "x"},
		{"longsecret-123 inside prefixlongsecret-123suffix", "(sensitive value) inside prefix(sensitive value)suffix"},
	} {
		if got := redact(tc.in, []string{"ab", "longsecret-123", ""}); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStepLogPublishesCompleteLinesMaskedAndStoresTheSame(t *testing.T) {
	var lines []string
	l := &stepLog{}
	l.begin([]string{"hunter2-long"}, false, func(s string) { lines = append(lines, s) })
	l.Write([]byte("one hunter2-long\ntw"))
	l.Write([]byte("o\r\nthree"))
	if len(lines) != 2 || lines[0] != "one (sensitive value)" || lines[1] != "two" {
		t.Fatalf("live lines %q", lines)
	}
	if got := l.finish(nil); got != "one (sensitive value)\ntwo\nthree\n" {
		t.Fatalf("stored %q", got)
	}
	if len(lines) != 3 || lines[2] != "three" {
		t.Fatalf("the last line without a newline was not published at the end: %q", lines)
	}
}

const pem = "-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"

func TestAMultiLineSecretIsMaskedLineByLine(t *testing.T) {
	var live []string
	l := &stepLog{}
	l.begin([]string{pem}, false, func(s string) { live = append(live, s) })
	// The value printed as it is (three lines), one line of it alone, and
	// JSON-escaped on one line.
	l.Write([]byte("key:\n" + pem + "\nmiddle only: MIIBVQIBADANBgkqhkiG9w0BAQEFAASC\n" +
		`{"key":"-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"}` + "\n"))
	stored := l.finish(nil)
	for _, text := range append(live, stored) {
		if strings.Contains(text, "MIIBVQ") || strings.Contains(text, "BEGIN PRIVATE") {
			t.Fatalf("a line of the PEM shows: %q", text)
		}
	}
	if !strings.Contains(stored, "middle only: (sensitive value)") {
		t.Fatalf("stored %q", stored)
	}
	if got := redact("error: "+pem, []string{pem}); strings.Contains(got, "MIIB") {
		t.Fatalf("redact of a message: %q", got)
	}
}

func TestHeldLinesWaitForTheOutputsThenGoMasked(t *testing.T) {
	var live []string
	l := &stepLog{}
	l.begin(nil, true, func(s string) { live = append(live, s) })
	l.Write([]byte("new token is tok-0123456789\n"))
	if len(live) != 0 {
		t.Fatalf("a held line was published before the outputs were known: %q", live)
	}
	stored := l.finish([]string{"tok-0123456789"})
	if len(live) != 1 || live[0] != "new token is (sensitive value)" || stored != live[0]+"\n" {
		t.Fatalf("live %q stored %q", live, stored)
	}
}

func TestALogKeepsItsStartAndEndWithinBounds(t *testing.T) {
	var published int
	l := &stepLog{}
	l.begin(nil, false, func(string) { published++ })
	const n = 200000
	for i := range n {
		fmt.Fprintf(l, "line %07d of the tool's output\n", i)
	}
	stored := l.finish(nil)
	if published != n {
		t.Fatalf("published %d lines, want %d", published, n)
	}
	if len(stored) > logHeadBytes+logTailBytes+n/10*8 || !strings.HasPrefix(stored, "line 0000000 ") ||
		!strings.HasSuffix(stored, fmt.Sprintf("line %07d of the tool's output\n", n-1)) || !strings.Contains(stored, "lines omitted") {
		t.Fatalf("stored log of %d bytes: %.200q … %.200q", len(stored), stored, stored[len(stored)-200:])
	}
	// A held log publishes what it kept, and says how many it could not.
	published = 0
	var notes []string
	h := &stepLog{live: func(s string) {
		if strings.HasPrefix(s, "knit:") {
			notes = append(notes, s)
		}
		published++
	}, hold: true}
	for i := range n {
		fmt.Fprintf(h, "line %07d of the tool's output\n", i)
	}
	h.finish(nil)
	if len(notes) != 1 || published >= n || published < 1000 {
		t.Fatalf("held log: %d published, notes %q", published, notes)
	}
}
