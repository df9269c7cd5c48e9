// Package jsonargs parses the arguments of a tools/call strictly, so that
// the arguments the rules check are exactly the arguments forwarded, and no
// server can read them differently: a duplicate key, two keys at one level
// that a server may read as one name (`path` and `PATH`, `source` and
// `ſource`; see keyfold), a NUL (U+0000) in any key or string (a C-string
// server stops reading there), invalid UTF-8, nesting deeper than MaxDepth
// or trailing data is rejected, and what is forwarded is the parsed value
// serialised again.
package jsonargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mcpwarden/mcpwarden/internal/keyfold"
)

// MaxDepth bounds the nesting of arguments; deeper input is rejected.
const MaxDepth = 100

// Parse decodes raw, a JSON object or null (empty input is null), into a
// map whose numbers are json.Number, and returns it with its canonical
// serialisation: keys sorted, numbers as written. A null or empty input
// gives an empty map and "{}".
func Parse(raw []byte) (map[string]any, []byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, []byte("{}"), nil
	}
	if !utf8.Valid(raw) {
		return nil, nil, errors.New("arguments are not valid UTF-8")
	}
	if m, canonical, ok := parseFlat(raw); ok {
		return m, canonical, nil
	}
	return parseSlow(raw)
}

// parseSlow is Parse for raw, which is trimmed, valid UTF-8, and neither
// empty nor null, reading every shape of arguments and deciding every
// refusal.
func parseSlow(raw []byte) (map[string]any, []byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := value(dec, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("arguments: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, errors.New("arguments: unexpected data after the JSON object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("arguments must be a JSON object, not %s", kind(v))
	}
	canonical, err := json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("arguments: %w", err)
	}
	return m, canonical, nil
}

// value reads one JSON value from dec, rejecting duplicate and folded object
// keys and NUL in strings.
func value(dec *json.Decoder, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", MaxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			var folded map[string]string // keyfold.Key → the key, built on the second key
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				if _, dup := m[key]; dup {
					return nil, fmt.Errorf("duplicate key %q", key)
				}
				if err := noNUL("key", key); err != nil {
					return nil, err
				}
				if len(m) > 0 {
					if folded == nil {
						folded = make(map[string]string, 4)
						for k := range m {
							folded[keyfold.Key(k)] = k
						}
					}
					fk := keyfold.Key(key)
					if other, clash := folded[fk]; clash {
						return nil, fmt.Errorf("keys %q and %q are the same name to a server that folds case (as Go servers do); send one of them", other, key)
					}
					folded[fk] = key
				}
				v, err := value(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m[key] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return m, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := value(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		default:
			return nil, fmt.Errorf("unexpected %v", t)
		}
	case string:
		if err := noNUL("string", t); err != nil {
			return nil, err
		}
		return t, nil
	default:
		return t, nil // json.Number, bool or nil
	}
}

// noNUL rejects a string holding U+0000: a server written in C, or one
// passing the value to the OS, stops reading it there.
func noNUL(what, s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("%s %q holds a NUL character (U+0000) at byte %d", what, s, i)
	}
	return nil
}

func kind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
}
