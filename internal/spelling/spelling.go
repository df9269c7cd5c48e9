// Package spelling finds the word a user meant: the known name spelt
// closest to what was written, for "did you mean" in config keys,
// environment variables, flags and commands.
package spelling

// Closest returns the candidate spelt closest to word, if within a third
// of the candidate's length in edits (at least one); "" if none is. Ties go
// to the candidate first in sort order.
func Closest(word string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := Distance(word, c)
		if d <= max(1, len(c)/3) && (best == "" || d < bestD || d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b: the fewest
// insertions, deletions and substitutions of bytes that turn a into b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
