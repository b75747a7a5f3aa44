package spec

import (
	"fmt"
	"regexp"

	"knit.dev/knit/internal/diag"
)

var rfc1035 = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// checkName returns why s is not a valid RFC 1035 label, or "".
func checkName(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > 63:
		return fmt.Sprintf("%s is %d characters long; the limit is 63", quote(s), len(s))
	case !rfc1035.MatchString(s):
		return fmt.Sprintf("%s is not a valid name", quote(s))
	}
	return ""
}

const nameHint = "use lower-case letters, digits and '-', starting with a letter and ending with a letter or digit (RFC 1035)"

// suggest returns a "did you mean" hint for the candidate closest to s, or "".
func suggest(s string, candidates []string) string { return diag.DidYouMean(s, candidates) }
