package diag

import "fmt"

// maxSuggest bounds the length of words DidYouMean compares: names and fields
// are short, and the edit distance costs the product of the two lengths.
const maxSuggest = 64

// DidYouMean returns a "did you mean" hint for the candidate closest to s
// (at most two edits away, case aside), or "".
func DidYouMean(s string, candidates []string) string {
	best, bestD := "", 3
	if len(s) > maxSuggest {
		return ""
	}
	for _, c := range candidates {
		if len(c) > maxSuggest || len(c) > len(s)+bestD || len(s) > len(c)+bestD {
			continue // too long to compare, or too different in length to be close
		}
		if d := distance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("did you mean %q?", best)
}

// distance is the Levenshtein edit distance, case-insensitive on ASCII.
func distance(a, b string) int {
	lower := func(r byte) byte {
		if r >= 'A' && r <= 'Z' {
			return r + 32
		}
		return r
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if lower(a[i-1]) == lower(b[j-1]) {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
