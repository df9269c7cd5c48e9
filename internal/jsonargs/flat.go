package jsonargs

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/keyfold"
)

// The fast path, for measured speed (BenchmarkParse): most tools/call
// arguments are one flat object of plain strings, numbers, booleans and
// nulls, and for those the token-by-token json.Decoder of the slow path is
// most of Parse's cost. parseFlat reads only that shape, accepts only
// arguments the slow path accepts, and returns exactly what it returns;
// on anything else — nesting, an escape, a character json.Marshal would
// escape, a duplicate or folded key, a syntax error — it gives up and the
// slow path decides, so every refusal and its message come from one place.
// FuzzFastPathMatchesSlowPath checks the equivalence.

// maxFlatMembers bounds the members the fast path takes: its key check
// compares every pair, which is cheap only for a few keys.
const maxFlatMembers = 16

// A flatMember is one member of flat arguments: its key, its value as
// Parse returns it, and the value's JSON text, which is also its canonical
// form (the fast path takes no value whose serialisation differs).
type flatMember struct {
	key   string
	value any
	text  []byte
}

// parseFlat is Parse's fast path for raw, which is trimmed, valid UTF-8,
// and neither empty nor null. ok is false when it leaves raw to the slow
// path.
func parseFlat(raw []byte) (m map[string]any, canonical []byte, ok bool) {
	var buf [maxFlatMembers]flatMember
	members := buf[:0]
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, nil, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		i++
	} else {
		for {
			if len(members) == maxFlatMembers {
				return nil, nil, false
			}
			end, ok := plainString(raw, i)
			if !ok {
				return nil, nil, false
			}
			key := string(raw[i+1 : end-1])
			if i = skipSpace(raw, end); i == len(raw) || raw[i] != ':' {
				return nil, nil, false
			}
			i = skipSpace(raw, i+1)
			value, end, ok := scalar(raw, i)
			if !ok {
				return nil, nil, false
			}
			members = append(members, flatMember{key: key, value: value, text: raw[i:end]})
			if i = skipSpace(raw, end); i == len(raw) {
				return nil, nil, false
			}
			if raw[i] == '}' {
				i++
				break
			}
			if raw[i] != ',' {
				return nil, nil, false
			}
			i = skipSpace(raw, i+1)
		}
	}
	if skipSpace(raw, i) != len(raw) {
		return nil, nil, false
	}
	// Duplicate and folded keys are refused by the slow path, with the
	// message naming them: keyfold.Equal is true for both.
	for a := range members {
		for b := a + 1; b < len(members); b++ {
			if keyfold.Equal(members[a].key, members[b].key) {
				return nil, nil, false
			}
		}
	}
	// json.Marshal sorts a map's keys by their bytes.
	slices.SortFunc(members, func(a, b flatMember) int { return strings.Compare(a.key, b.key) })
	size := 2
	for _, e := range members {
		size += len(e.key) + len(e.text) + 4
	}
	m = make(map[string]any, len(members))
	canonical = make([]byte, 0, size)
	canonical = append(canonical, '{')
	for j, e := range members {
		m[e.key] = e.value
		if j > 0 {
			canonical = append(canonical, ',')
		}
		canonical = append(canonical, '"')
		canonical = append(canonical, e.key...)
		canonical = append(canonical, '"', ':')
		canonical = append(canonical, e.text...)
	}
	return m, append(canonical, '}'), true
}

// skipSpace returns the offset of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// plainString returns the offset just past the string starting at i, if
// it is one that needs no decoding and that json.Marshal writes back
// byte for byte: no escape, no control character, no NUL (which needs an
// escape in JSON), none of the <, > and & that json.Marshal escapes for
// HTML, no DEL, and neither U+2028 nor U+2029, which it escapes too. raw
// is valid UTF-8 (Parse checked), so a multi-byte character is whole.
func plainString(raw []byte, i int) (end int, ok bool) {
	if i == len(raw) || raw[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20 || c == '\\' || c == '<' || c == '>' || c == '&' || c == 0x7f:
			return 0, false
		case c == 0xe2 && j+2 < len(raw) && raw[j+1] == 0x80 && (raw[j+2] == 0xa8 || raw[j+2] == 0xa9):
			return 0, false
		}
	}
	return 0, false
}

// scalar reads the value at i if it is a plain string, a number, a boolean
// or null, and returns it as the slow path would (string, json.Number,
// bool, nil) with the offset just past it.
func scalar(raw []byte, i int) (v any, end int, ok bool) {
	if i == len(raw) {
		return nil, 0, false
	}
	switch raw[i] {
	case '"':
		end, ok := plainString(raw, i)
		if !ok {
			return nil, 0, false
		}
		return string(raw[i+1 : end-1]), end, true
	case 't':
		return true, i + 4, bytes.HasPrefix(raw[i:], []byte("true"))
	case 'f':
		return false, i + 5, bytes.HasPrefix(raw[i:], []byte("false"))
	case 'n':
		return nil, i + 4, bytes.HasPrefix(raw[i:], []byte("null"))
	}
	end, ok = number(raw, i)
	if !ok {
		return nil, 0, false
	}
	return json.Number(raw[i:end]), end, true
}

// number returns the offset just past the JSON number at i:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. What follows it is the
// caller's to check (a following digit or letter makes the caller give up).
func number(raw []byte, i int) (end int, ok bool) {
	if i < len(raw) && raw[i] == '-' {
		i++
	}
	switch {
	case i == len(raw):
		return 0, false
	case raw[i] == '0':
		i++
	case '1' <= raw[i] && raw[i] <= '9':
		i = digits(raw, i)
	default:
		return 0, false
	}
	if i < len(raw) && raw[i] == '.' {
		j := digits(raw, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		j := digits(raw, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

// digits returns the offset of the first byte at or after i that is not
// an ASCII digit.
func digits(raw []byte, i int) int {
	for i < len(raw) && '0' <= raw[i] && raw[i] <= '9' {
		i++
	}
	return i
}
