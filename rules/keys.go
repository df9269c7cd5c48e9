package rules

import "github.com/mcpwarden/mcpwarden/internal/keyfold"

// A keySet is a set of argument names, compared as a server may compare
// them: under keyfold's folding (`PATH` and `filePath` are in a set holding
// `path` and `file_path`).
type keySet map[string]struct{}

func newKeySet(keys []string) keySet {
	s := make(keySet, len(keys))
	for _, k := range keys {
		s[keyfold.Key(k)] = struct{}{}
	}
	return s
}

// has reports whether k is in the set. It does not allocate for a key of up
// to 64 bytes.
func (s keySet) has(k string) bool {
	if len(s) == 0 {
		return false
	}
	var buf [64]byte
	if len(k) <= len(buf) {
		_, ok := s[string(keyfold.AppendKey(buf[:0], k))]
		return ok
	}
	_, ok := s[keyfold.Key(k)]
	return ok
}

// lookup returns the value of m at key, or else at the one key of m that a
// server may read as key (jsonargs refuses arguments with two such keys at
// one level, so there is at most one): a Go server binds `{"PATH": …}` to
// its field `path`. The exact key is tried first; lookup does not allocate.
func lookup(m map[string]any, key string) (any, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if keyfold.Equal(k, key) {
			return v, true
		}
	}
	return nil, false
}
