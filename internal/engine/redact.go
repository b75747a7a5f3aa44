package engine

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// masked is what a secret is replaced with.
const masked = "(sensitive value)"

// shortSecret is the length below which a secret is masked only where it
// stands as a whole value (not inside a longer word): a 2-character
// password is masked wherever it appears on its own, and "ab" does not
// turn "about" into noise. Longer secrets are masked wherever they appear.
const shortSecret = 8

// masker is knit's one masking rule, for every line a person or the store
// sees: live log events, stored logs, error messages. It masks text line by
// line, and a secret by its lines: each line of a multi-line value (a PEM
// key) is a secret of its own, so a tool that prints one line of it, or
// prints the value over several lines, shows none of it.
type masker struct {
	secrets []string // non-empty, longest first
}

// newMasker returns the rule for secrets (values of any length and shape).
func newMasker(secrets []string) *masker {
	m := &masker{}
	m.add(secrets)
	return m
}

// add makes the masker mask secrets too.
func (m *masker) add(secrets []string) {
	seen := make(map[string]bool, len(m.secrets))
	for _, s := range m.secrets {
		seen[s] = true
	}
	for _, sec := range secrets {
		for _, line := range strings.Split(sec, "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.TrimSpace(line) == "" || seen[line] {
				continue
			}
			seen[line] = true
			m.secrets = append(m.secrets, line)
		}
	}
	// Longest first, so that overlapping secrets go whole.
	sort.SliceStable(m.secrets, func(i, j int) bool { return len(m.secrets[i]) > len(m.secrets[j]) })
}

// line masks one line (text without a newline).
func (m *masker) line(s string) string {
	for _, sec := range m.secrets {
		if !strings.Contains(s, sec) {
			continue
		}
		if len(sec) >= shortSecret {
			s = strings.ReplaceAll(s, sec, masked)
		} else {
			s = replaceWhole(s, sec)
		}
	}
	return s
}

// text masks every line of s.
func (m *masker) text(s string) string {
	if len(m.secrets) == 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = m.line(l)
	}
	return strings.Join(lines, "\n")
}

// redact masks secrets in s by the masker's rule.
func redact(s string, secrets []string) string {
	return newMasker(secrets).text(s)
}

// replaceWhole masks each occurrence of sec in s that is not part of a
// longer word: the characters on either side are not letters or digits.
func replaceWhole(s, sec string) string {
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, sec)
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		b.WriteString(rest[:i])
		after, _ := utf8.DecodeRuneInString(rest[i+len(sec):])
		if !wordRune(lastRune(b.String())) && !wordRune(after) {
			b.WriteString(masked)
			rest = rest[i+len(sec):]
			continue
		}
		// Not a whole value here: keep its first rune and look further.
		_, n := utf8.DecodeRuneInString(rest[i:])
		b.WriteString(rest[i : i+n])
		rest = rest[i+n:]
	}
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// wordRune reports whether r continues a word (utf8.RuneError stands for
// "no character": the start or end of the text).
func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
