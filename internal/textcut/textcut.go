// Package textcut shortens text shown to people — in forms, logs, audit
// lines and reasons — at a character boundary, never inside a UTF-8
// sequence. It is the one home of that cutting: keep the head (what is read
// first) or the tail (a path's file name).
package textcut

import "unicode/utf8"

// Head returns the first n characters of s and how many characters follow
// them (0 when s has at most n).
func Head(s string, n int) (head string, hidden int) {
	c := utf8.RuneCountInString(s)
	if c <= n {
		return s, 0
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j], c - n
		}
		i++
	}
	return s, 0
}

// Tail returns s if it has at most n characters, else "…" followed by its
// last n-1 characters: n characters in all, the end kept (for a path, the
// file name is what tells the reader which file it was).
func Tail(s string, n int) string {
	c := utf8.RuneCountInString(s)
	if c <= n {
		return s
	}
	skip := c - n + 1
	for j := range s {
		if skip == 0 {
			return "…" + s[j:]
		}
		skip--
	}
	return s
}

// HeadBytes returns the longest prefix of s of at most n bytes that does
// not end inside a UTF-8 sequence: for limits on size rather than on what
// a reader sees.
func HeadBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
