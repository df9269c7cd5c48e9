// Package rawjson walks JSON without decoding it: the members of an
// object and the elements of an array, each handed over as the bytes that
// encode it. Strings are skipped with a byte search rather than decoded,
// so splitting a megabyte of text costs little more than a memchr over it.
//
// It is for input already known to be valid JSON (a message the JSON-RPC
// layer has parsed) and checks only what it must to stay in bounds: the
// structure around the values it walks, and that brackets pair up. Values
// it hands over are not validated further; encoding/json does that when
// they are encoded again.
package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every error about malformed input.
var ErrSyntax = errors.New("malformed JSON")

// Object calls f with the key and raw value of each member of the JSON
// object data, in order, and stops at the first error f returns. data may
// have white space around it, nothing else.
func Object(data []byte, f func(key string, value []byte) error) error {
	i, done, err := open(data, '{', '}')
	for !done && err == nil {
		i, err = member(data, i, f)
		if err == nil {
			i, done, err = next(data, i, '}')
		}
	}
	return err
}

// member hands the member at offset i to f and returns the offset just
// past it.
func member(data []byte, i int, f func(key string, value []byte) error) (int, error) {
	if i >= len(data) || data[i] != '"' {
		return 0, syntaxError(data, i, "want a member name")
	}
	kend, err := stringEnd(data, i)
	if err != nil {
		return 0, err
	}
	key, err := memberName(data[i:kend])
	if err != nil {
		return 0, err
	}
	i = skipSpace(data, kend)
	if i >= len(data) || data[i] != ':' {
		return 0, syntaxError(data, i, "want ':'")
	}
	i = skipSpace(data, i+1)
	vend, err := valueEnd(data, i)
	if err != nil {
		return 0, err
	}
	return vend, f(key, data[i:vend])
}

// Array calls f with the raw bytes of each element of the JSON array data,
// in order, and stops at the first error f returns. data may have white
// space around it, nothing else.
func Array(data []byte, f func(elem []byte) error) error {
	i, done, err := open(data, '[', ']')
	for !done && err == nil {
		var vend int
		if vend, err = valueEnd(data, i); err == nil {
			if err = f(data[i:vend]); err == nil {
				i, done, err = next(data, vend, ']')
			}
		}
	}
	return err
}

// open checks that data starts a container with the bracket opening, and
// returns the offset of its first member or element, or done when the
// container is empty (and all there is).
func open(data []byte, opening, closing byte) (i int, done bool, err error) {
	i = skipSpace(data, 0)
	if i >= len(data) || data[i] != opening {
		return 0, false, syntaxError(data, i, fmt.Sprintf("want %q", opening))
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == closing {
		return 0, true, end(data, i+1)
	}
	return i, false, nil
}

// next moves past a member or element that ends at offset i: to the
// offset of the next one, or done when the bracket closing ends the
// container (and all there is).
func next(data []byte, i int, closing byte) (int, bool, error) {
	i = skipSpace(data, i)
	switch {
	case i < len(data) && data[i] == ',':
		return skipSpace(data, i+1), false, nil
	case i < len(data) && data[i] == closing:
		return 0, true, end(data, i+1)
	}
	return 0, false, syntaxError(data, i, fmt.Sprintf("want ',' or %q", closing))
}

// String decodes v, the raw value of a string, as encoding/json decodes a
// string: escapes resolved, invalid UTF-8 replaced with U+FFFD. A value
// that is not a string is an error.
func String(v []byte) (string, error) {
	if len(v) < 2 || v[0] != '"' {
		return "", fmt.Errorf("%w: want a string, not %.20s", ErrSyntax, v)
	}
	return decodeString(v)
}

// Named reports whether encoding/json reads a member named key into a
// struct field named field: exactly, or under Unicode case folding.
func Named(key, field string) bool {
	return key == field || strings.EqualFold(key, field)
}

// ReadString reads the raw value v into *dst as json.Unmarshal reads a
// value into a string: null leaves *dst as it is, and a value that is not
// a string is an error.
func ReadString(v []byte, dst *string) error {
	if IsNull(v) {
		return nil
	}
	s, err := String(v)
	if err != nil {
		return err
	}
	*dst = s
	return nil
}

// IsNull reports whether the raw value v is the literal null.
func IsNull(v []byte) bool { return string(bytes.TrimSpace(v)) == "null" }

// end checks that only white space follows offset i.
func end(data []byte, i int) error {
	if i = skipSpace(data, i); i != len(data) {
		return syntaxError(data, i, "unexpected data after the value")
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset just past the string literal that starts
// with the quote at b[i].
func stringEnd(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, syntaxError(b, i, "unterminated string")
		}
		j += k
		// The quote ends the string unless an odd number of backslashes
		// escapes it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// valueEnd returns the offset just past the value that starts at b[i].
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, syntaxError(b, i, "want a value")
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		return containerEnd(b, i)
	case ',', ':', '}', ']':
		return 0, syntaxError(b, i, "want a value")
	}
	// A number, true, false or null: up to the next delimiter.
	j := i
	for j < len(b) && !isDelimiter(b[j]) {
		j++
	}
	return j, nil
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', ':', '}', ']', '{', '[', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// containerEnd returns the offset just past the object or array that
// starts at b[i], checking only that its brackets pair up.
func containerEnd(b []byte, i int) (int, error) {
	stack := make([]byte, 0, 16)
	for j := i; j < len(b); {
		k := bytes.IndexAny(b[j:], `"{}[]`)
		if k < 0 {
			break
		}
		j += k
		switch c := b[j]; c {
		case '"':
			e, err := stringEnd(b, j)
			if err != nil {
				return 0, err
			}
			j = e
			continue
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		default:
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return 0, syntaxError(b, j, fmt.Sprintf("unexpected %q", c))
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return j + 1, nil
			}
		}
		j++
	}
	return 0, syntaxError(b, i, "unterminated object or array")
}

// memberName decodes s, the JSON string naming a member. The names of the
// members of MCP's messages are returned as constants rather than
// allocated: every message walked has a handful (for measured speed: they
// were about 7 of the 140 allocations of a call over HTTP).
func memberName(s []byte) (string, error) {
	if len(s) >= 2 {
		// A switch on string(b) compares in place, without allocating.
		switch raw := s[1 : len(s)-1]; string(raw) {
		case "jsonrpc":
			return "jsonrpc", nil
		case "id":
			return "id", nil
		case "method":
			return "method", nil
		case "params":
			return "params", nil
		case "result":
			return "result", nil
		case "error":
			return "error", nil
		case "name":
			return "name", nil
		case "arguments":
			return "arguments", nil
		case "_meta":
			return "_meta", nil
		case "progressToken":
			return "progressToken", nil
		case "content":
			return "content", nil
		case "structuredContent":
			return "structuredContent", nil
		case "isError":
			return "isError", nil
		case "type":
			return "type", nil
		case "text":
			return "text", nil
		case "code":
			return "code", nil
		case "message":
			return "message", nil
		case "data":
			return "data", nil
		}
	}
	return decodeString(s)
}

// decodeString decodes the string literal s; valid UTF-8 without escapes
// is taken as it is.
func decodeString(s []byte) (string, error) {
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s[1 : len(s)-1]), nil
	}
	var out string
	if err := json.Unmarshal(s, &out); err != nil {
		return "", fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return out, nil
}

func syntaxError(b []byte, i int, what string) error {
	return fmt.Errorf("%w at offset %d of %d: %s", ErrSyntax, i, len(b), what)
}
