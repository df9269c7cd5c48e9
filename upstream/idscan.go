package upstream

import "bytes"

// An idScanner follows one line of JSON byte by byte, keeping only the raw
// value of the top-level "id" member and whether there is a top-level
// "method". Text before the first '{' (an SSE "data:" prefix) is skipped.
type idScanner struct {
	started   bool
	depth     int
	inStr     bool
	esc       bool
	expectKey bool
	inKey     bool
	key       []byte
	keyLong   bool
	lastKey   string // "id", "method" or ""
	valueNext bool
	capturing bool
	strValue  bool
	id        []byte
	done      bool
	hasMethod bool
}

const maxIDLen = 64

// reset readies s for the next line, keeping its buffers: a fresh scanner
// per line allocated both for every message.
func (s *idScanner) reset() {
	*s = idScanner{key: s.key[:0], id: s.id[:0]}
}

// responseID is the raw id of the line scanned, if it is a response: it
// has an id and no method.
func (s *idScanner) responseID() ([]byte, bool) {
	if s.hasMethod || !s.done || len(s.id) == 0 {
		return nil, false
	}
	return s.id, true
}

// feed scans b. Most bytes of a large message are inside strings or
// nested values, which it skips with IndexByte rather than byte by byte.
func (s *idScanner) feed(b []byte) {
	for len(b) > 0 {
		switch {
		case !s.started:
			j := bytes.IndexByte(b, '{')
			if j < 0 {
				return
			}
			b = b[j:]
		case s.inStr && !s.esc && !s.inKey && !s.capturing:
			j := bytes.IndexByte(b, '"')
			if j < 0 {
				j = len(b)
			}
			if k := bytes.IndexByte(b[:j], '\\'); k >= 0 {
				j = k
			}
			b = b[j:]
			if len(b) == 0 {
				return
			}
		case !s.inStr && s.depth > 1:
			j := bytes.IndexAny(b, `"{}[]`)
			if j < 0 {
				return
			}
			b = b[j:]
		}
		s.byte(b[0])
		b = b[1:]
	}
}

func (s *idScanner) byte(c byte) {
	if !s.started {
		if c == '{' {
			s.started, s.depth, s.expectKey = true, 1, true
		}
		return
	}
	if s.depth <= 0 {
		return
	}
	if s.inStr {
		switch {
		case s.esc:
			s.esc = false
		case c == '\\':
			s.esc = true
		case c == '"':
			s.inStr = false
			if s.inKey {
				s.inKey = false
				s.lastKey = ""
				if !s.keyLong {
					switch string(s.key) {
					case "id":
						s.lastKey = "id"
					case "method":
						s.lastKey = "method"
						s.hasMethod = true
					}
				}
				return
			}
			if s.capturing {
				s.appendID(c)
				s.capturing, s.done = false, true
			}
			return
		}
		if s.inKey {
			if len(s.key) < 8 {
				s.key = append(s.key, c)
			} else {
				s.keyLong = true
			}
		} else if s.capturing {
			s.appendID(c)
		}
		return
	}
	if s.capturing && !s.strValue {
		switch c {
		case ',', '}', ']', ' ', '\t', '\r':
			s.capturing, s.done = false, true
		default:
			s.appendID(c)
			return
		}
	}
	if s.depth == 1 && s.valueNext && c != ' ' && c != '\t' && c != '\r' {
		s.valueNext = false
		if s.lastKey == "id" && !s.done && (c == '"' || c == '-' || (c >= '0' && c <= '9')) {
			s.capturing, s.strValue = true, c == '"'
			s.id = s.id[:0]
			s.appendID(c)
			if c != '"' {
				return
			}
			s.inStr = true
			return
		}
	}
	switch c {
	case '"':
		s.inStr = true
		if s.depth == 1 && s.expectKey {
			s.inKey, s.key, s.keyLong, s.expectKey = true, s.key[:0], false, false
		}
	case ':':
		if s.depth == 1 {
			s.valueNext = true
		}
	case ',':
		if s.depth == 1 {
			s.expectKey = true
		}
	case '{', '[':
		s.depth++
	case '}', ']':
		s.depth--
	}
}

func (s *idScanner) appendID(c byte) {
	if len(s.id) >= maxIDLen {
		s.capturing, s.id = false, nil // too long to be ours: give up
		return
	}
	s.id = append(s.id, c)
}
