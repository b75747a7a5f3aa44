package engine

import "testing"

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

func TestLogBufferHandsOverCompleteLines(t *testing.T) {
	var lines []string
	l := &logBuffer{lines: func(s string) { lines = append(lines, s) }}
	l.Write([]byte("one\ntw"))
	l.Write([]byte("o\r\nthree"))
	if len(lines) != 2 || lines[0] != "one" || lines[1] != "two" {
		t.Fatalf("lines %q", lines)
	}
	if got := l.Redacted(nil); got != "one\ntwo\r\nthree" {
		t.Fatalf("buffer %q", got)
	}
}
