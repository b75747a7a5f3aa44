package tgimport

import (
	"fmt"
	"hash/fnv"
	"path"
	"regexp"
	"strings"
)

var (
	notName = regexp.MustCompile(`[^a-z0-9-]+`)
	dashes  = regexp.MustCompile(`-+`)
)

// name turns folder names into a knit name (an RFC 1035 label): lower
// case, every run of other characters a '-', starting with a letter, at
// most 63 characters (a longer one keeps its start and a hash of all of it).
func name(s string) string {
	n := strings.Trim(notName.ReplaceAllString(strings.ToLower(s), "-"), "-")
	n = dashes.ReplaceAllString(n, "-")
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "u-" + n
	}
	n = strings.TrimRight(n, "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:54], "-") + "-" + shortHash(s)
	}
	return n
}

func shortHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

// uniqueNames names each of paths (slash-separated folders) by its last
// element where that is unique among them, else by the whole path; a
// name still taken gets a hash of its path.
func uniqueNames(paths []string) map[string]string {
	byLast := map[string]int{}
	for _, p := range paths {
		byLast[name(path.Base(p))]++
	}
	out := map[string]string{}
	taken := map[string]bool{}
	for _, p := range paths {
		n := name(path.Base(p))
		if byLast[n] > 1 {
			n = name(strings.ReplaceAll(p, "/", "-"))
		}
		if taken[n] {
			n = name(n + "-" + shortHash(p))
		}
		taken[n] = true
		out[p] = n
	}
	return out
}
