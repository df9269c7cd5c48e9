package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpwarden/mcpwarden/internal/secrets"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
)

// Redacted replaces every value stored under a secret key.
const Redacted = "<redacted>"

// maxDepth bounds the walk so that a cyclic or absurdly deep value cannot
// exhaust the stack.
const maxDepth = 100

// A Redactor removes secrets from values before they are logged. The values of
// keys matching a secret pattern become Redacted, whatever their type; a string
// longer than the limit or with a line break is cut to its first line (at most
// KeepPrefixLen characters) followed by " <redacted: N chars>"; bearer tokens,
// URL passwords and well-known token formats inside strings are replaced too.
// Objects and arrays are walked to any depth. A Redactor never modifies its
// input; it is immutable and safe for concurrent use. The nil *Redactor
// redacts with the defaults.
type Redactor struct {
	keys   []keyPattern
	maxLen int
	keep   int
	// scrubOnly keeps long and multi-line strings whole (up to logMaxLen)
	// and only scrubs credentials out of them: see ForLogs.
	scrubOnly bool
}

// logMaxLen bounds a string in the human log.
const logMaxLen = 8192

// ForLogs returns a redactor for the human log: values under secret keys
// are still replaced and credentials in text still scrubbed, but strings are
// not cut at the first line or max_string_len, so that an error message
// (an upstream's stderr, say) stays readable. Strings beyond 8 KiB are cut.
func (r *Redactor) ForLogs() *Redactor {
	c := *r.orDefault()
	c.scrubOnly = true
	return &c
}

var defaultRedactor = func() *Redactor {
	r, err := NewRedactor(Config{})
	if err != nil {
		panic(err) // the zero Config has valid limits
	}
	return r
}()

// NewRedactor returns a Redactor that redacts the keys secrets.IsSecretKey
// names plus those matching cfg.RedactKeys, with the limits of cfg. Only the
// redaction fields of cfg are looked at. Patterns match whole keys,
// case-insensitively; `*` matches any run of characters and `?` one
// character.
func NewRedactor(cfg Config) (*Redactor, error) {
	maxLen, keep := cfg.limits()
	if cfg.MaxStringLen < 0 || cfg.KeepPrefixLen < 0 || keep > maxLen {
		return nil, fmt.Errorf("audit.max_string_len %d, audit.keep_prefix_len %d: invalid limits", cfg.MaxStringLen, cfg.KeepPrefixLen)
	}
	r := &Redactor{maxLen: maxLen, keep: keep}
	var errs []error
	for i, p := range cfg.RedactKeys {
		if err := checkPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("audit.redact_keys[%d]: %w", i, err))
			continue
		}
		r.keys = append(r.keys, compilePattern(p))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Redactor) orDefault() *Redactor {
	if r == nil {
		return defaultRedactor
	}
	return r
}

// IsSecretKey reports whether values stored under key are redacted: key is
// a secret key to secrets.IsSecretKey or matches a configured pattern.
func (r *Redactor) IsSecretKey(key string) bool {
	r = r.orDefault()
	if secrets.IsSecretKey(key) {
		return true
	}
	if len(r.keys) == 0 {
		return false
	}
	k := strings.ToLower(key)
	for _, p := range r.keys {
		if p.match(k) {
			return true
		}
	}
	return false
}

// Arguments returns a redacted copy of m (nil for nil). The copy shares
// nothing mutable with m.
func (r *Redactor) Arguments(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return r.orDefault().object(m, 0)
}

// Value returns a redacted copy of v as a JSON-shaped value: nil, bool,
// numbers, string, map[string]any or []any. Other types (structs, typed maps
// and slices, json.RawMessage) are converted through their JSON encoding
// first, so their secrets are found too; a value that cannot be encoded
// becomes a placeholder naming its type.
func (r *Redactor) Value(v any) any { return r.orDefault().value(v, 0) }

func (r *Redactor) object(m map[string]any, depth int) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if r.IsSecretKey(k) {
			out[k] = Redacted
		} else {
			out[k] = r.value(v, depth+1)
		}
	}
	return out
}

func (r *Redactor) value(v any, depth int) any {
	if depth > maxDepth {
		return "<redacted: too deep>"
	}
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64) // JSON has no NaN or Inf
		}
		return v
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return strconv.FormatFloat(float64(x), 'g', -1, 32)
		}
		return v
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return v
	case string:
		return r.String(x)
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err == nil && json.Valid([]byte(x)) {
			return v
		}
		return r.String(string(x))
	case map[string]any:
		return r.object(x, depth)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.value(e, depth+1)
		}
		return out
	case json.RawMessage:
		return r.fromJSON(x, depth)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<redacted: unencodable %T>", v)
	}
	return r.fromJSON(b, depth)
}

func (r *Redactor) fromJSON(b []byte, depth int) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return r.String(string(b))
	}
	return r.value(v, depth+1)
}

// String returns s with embedded credentials replaced and, if s is longer
// than the limit (in characters) or has a line break, cut to its first line
// of at most KeepPrefixLen characters plus " <redacted: N chars>", where N is
// the length of s. The result never has a line break and is never longer
// than the limit, or than the prefix and that note.
func (r *Redactor) String(s string) string {
	r = r.orDefault()
	if r.scrubOnly {
		if n := utf8.RuneCountInString(s); n > logMaxLen {
			return fmt.Sprintf("%s <redacted: %d chars>", scrub(head(s, logMaxLen)), n)
		}
		return scrub(s)
	}
	if !strings.ContainsAny(s, "\r\n") && utf8.RuneCountInString(s) <= r.maxLen {
		if out := scrub(s); utf8.RuneCountInString(out) <= r.maxLen {
			return out
		}
	}
	n := utf8.RuneCountInString(s)
	out := s
	if i := strings.IndexAny(out, "\r\n"); i >= 0 {
		out = out[:i]
	}
	// Scrub a window wider than the prefix, so that a credential crossing
	// the cut is still recognised, without scanning a huge string whole.
	out = head(scrub(head(out, r.keep+200)), r.keep)
	if out == "" {
		return fmt.Sprintf("<redacted: %d chars>", n)
	}
	return fmt.Sprintf("%s <redacted: %d chars>", out, n)
}

// scrub replaces the credentials in s (auth headers, URL passwords and
// query parameters, token formats of common services, private keys) with
// Redacted.
func scrub(s string) string { return secrets.Redact(s, Redacted) }

// A keyPattern is one compiled key pattern, matched against lower-cased keys.
type keyPattern struct {
	kind byte // '=' exact, 'c' contains, 'p' prefix, 's' suffix, 'g' glob
	lit  string
}

func checkPattern(p string) error {
	if strings.TrimSpace(p) == "" {
		return errors.New("empty pattern")
	}
	if strings.ContainsAny(p, "[]{}\\") {
		return fmt.Errorf("pattern %q: only * and ? are special; [ ] { } and \\ are not supported", p)
	}
	return nil
}

func compilePattern(p string) keyPattern {
	p = strings.ToLower(p)
	inner := strings.Trim(p, "*")
	if strings.Contains(p, "?") || strings.Contains(inner, "*") || inner == "" {
		return keyPattern{kind: 'g', lit: p}
	}
	switch pre, suf := strings.HasPrefix(p, "*"), strings.HasSuffix(p, "*"); {
	case pre && suf:
		return keyPattern{kind: 'c', lit: inner}
	case pre:
		return keyPattern{kind: 's', lit: inner}
	case suf:
		return keyPattern{kind: 'p', lit: inner}
	}
	return keyPattern{kind: '=', lit: p}
}

func (p keyPattern) match(k string) bool {
	switch p.kind {
	case '=':
		return k == p.lit
	case 'c':
		return strings.Contains(k, p.lit)
	case 'p':
		return strings.HasPrefix(k, p.lit)
	case 's':
		return strings.HasSuffix(k, p.lit)
	}
	return globMatch(p.lit, k)
}

// globMatch matches s against pattern with * and ? in O(len(pattern)*len(s)),
// by the usual backtrack-to-last-star method. Both work on runes.
func globMatch(pattern, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, 0
	for sx < len(s) {
		if px < len(pattern) {
			switch pc, pw := utf8.DecodeRuneInString(pattern[px:]); pc {
			case '*':
				starP, starS = px, sx
				px += pw
				continue
			case '?':
				_, sw := utf8.DecodeRuneInString(s[sx:])
				px += pw
				sx += sw
				continue
			default:
				sc, sw := utf8.DecodeRuneInString(s[sx:])
				if sc == pc {
					px += pw
					sx += sw
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		_, sw := utf8.DecodeRuneInString(s[starS:])
		starS += sw
		px, sx = starP+1, starS
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// head is the first n characters of s.
func head(s string, n int) string {
	h, _ := textcut.Head(s, n)
	return h
}
