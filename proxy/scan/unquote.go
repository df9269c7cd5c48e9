package scan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The reading of a result's JSON strings is hand-written for measured
// speed (BenchmarkScanJSON1MiB): encoding/json validates and unquotes a
// 1 MiB text a byte at a time and moves its string to the heap on every
// call. FuzzUnquoteMatchesEncodingJSON holds it to json.Unmarshal.

// stringEnd returns the index in raw of the quote that ends the JSON
// string starting at the quote raw[i], -1 if none does, and whether the
// string holds a backslash. A backslash escapes the byte after it, as
// JSON has always read strings.
func stringEnd(raw []byte, i int) (end int, escaped bool) {
	j := i + 1
	for j < len(raw) {
		q := bytes.IndexByte(raw[j:], '"')
		if q < 0 {
			return -1, escaped
		}
		bs := bytes.IndexByte(raw[j:j+q], '\\')
		if bs < 0 {
			return j + q, escaped
		}
		escaped = true
		j += bs + 2
	}
	return -1, escaped
}

// unquote returns the text of lit, a JSON string literal holding a
// backslash, as json.Unmarshal reads it, ok false when json.Unmarshal
// fails. It reads the escapes of ordinary text itself and leaves anything
// else — a control character, invalid UTF-8, a surrogate \u escape, an
// unknown escape — to json.Unmarshal.
func unquote(lit []byte) (string, bool) {
	s := lit[1 : len(lit)-1]
	b := make([]byte, 0, len(s))
	for len(s) > 0 {
		k := bytes.IndexByte(s, '\\')
		run := s
		if k >= 0 {
			run = s[:k]
		}
		if hasControl(run) || !utf8.Valid(run) {
			return unmarshalString(lit)
		}
		b = append(b, run...)
		if k < 0 {
			break
		}
		s = s[k:]
		if len(s) < 2 {
			return unmarshalString(lit)
		}
		switch c := s[1]; c {
		case '"', '\\', '/':
			b = append(b, c)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := readHex4(s[2:])
			if !ok || utf16.IsSurrogate(r) {
				return unmarshalString(lit)
			}
			b = utf8.AppendRune(b, r)
			s = s[4:]
		default:
			return unmarshalString(lit)
		}
		s = s[2:]
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), true // b is not written again
}

// unmarshalString is json.Unmarshal of lit into a string.
func unmarshalString(lit []byte) (string, bool) {
	var text string
	err := json.Unmarshal(lit, &text)
	return text, err == nil
}

// hex4 reads the four hexadecimal digits of a \u escape at the start of s.
func readHex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// hasControl reports whether b holds a byte below 0x20, which JSON does
// not allow in a string. It tests eight bytes at a time: x-0x20… borrows
// into a byte's top bit, which ^x keeps only for a byte below 0x80, just
// when some byte is below 0x20.
func hasControl(b []byte) bool {
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if (x-0x2020202020202020)&^x&0x8080808080808080 != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}
