package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendEvent appends e to dst as encoding/json's Encoder with
// SetEscapeHTML(false) encodes it, byte for byte, but without reflection:
// an audit line is written twice per call, and reflecting over the Event
// was most of what writing it cost. The line ends with the prev_sha256 key
// and its colon, for writeLine to complete with the hash of the previous
// line. Values in Arguments of types the encoder does not know (none, once
// the Redactor has made them JSON-shaped) are encoded by encoding/json
// itself. FuzzAppendEventMatchesEncodingJSON holds the two encodings equal.
func appendEvent(dst []byte, e *Event) ([]byte, error) {
	if !e.Event.valid() {
		return dst, fmt.Errorf("json: error calling MarshalText for type audit.Kind: invalid audit event kind %d", uint8(e.Event))
	}
	dst = append(dst, `{"time":"`...)
	n0 := len(dst)
	dst = e.Time.AppendFormat(dst, time.RFC3339Nano)
	if err := checkRFC3339(dst[n0:]); err != nil {
		return dst, fmt.Errorf("json: error calling MarshalJSON for type time.Time: Time.MarshalJSON: %w", err)
	}
	dst = append(dst, `","event":"`...)
	dst = append(dst, kindNames[e.Event]...)
	dst = append(dst, `","id":`...)
	dst = appendString(dst, e.ID)
	dst = appendField(dst, `,"replica":`, e.Replica)
	dst = appendField(dst, `,"decision_id":`, e.DecisionID)
	dst = appendField(dst, `,"session":`, e.Session)
	if c := e.Client; c != nil {
		dst = append(dst, `,"client":{`...)
		sep := ""
		if c.Name != "" {
			dst = appendString(append(dst, `"name":`...), c.Name)
			sep = ","
		}
		if c.Version != "" {
			dst = appendString(append(append(dst, sep...), `"version":`...), c.Version)
		}
		dst = append(dst, '}')
	}
	dst = appendField(dst, `,"principal":`, e.Principal)
	dst = appendField(dst, `,"profile":`, e.Profile)
	dst = appendField(dst, `,"server":`, e.Server)
	dst = appendField(dst, `,"method":`, e.Method)
	dst = appendField(dst, `,"tool":`, e.Tool)
	dst = appendField(dst, `,"wire_name":`, e.WireName)
	if e.Shadow {
		dst = append(dst, `,"shadow":true`...)
	}
	dst = appendField(dst, `,"decision":`, e.Decision)
	dst = appendField(dst, `,"rule":`, e.Rule)
	dst = appendField(dst, `,"armed_by":`, e.ArmedBy)
	if int(e.GrantedBy) >= len(grantedByNames) {
		return dst, fmt.Errorf("json: error calling MarshalText for type audit.GrantedBy: invalid granted_by %d", uint8(e.GrantedBy))
	}
	dst = appendField(dst, `,"granted_by":`, grantedByNames[e.GrantedBy])
	if int(e.Outcome) >= len(outcomeNames) {
		return dst, fmt.Errorf("json: error calling MarshalText for type audit.Outcome: invalid outcome %d", uint8(e.Outcome))
	}
	dst = appendField(dst, `,"outcome":`, outcomeNames[e.Outcome])
	dst = appendField(dst, `,"reason":`, e.Reason)
	if len(e.Arguments) > 0 {
		var err error
		if dst, err = appendObject(append(dst, `,"arguments":`...), e.Arguments, 0); err != nil {
			return dst, err
		}
	}
	if e.DurationMS != nil {
		dst = strconv.AppendInt(append(dst, `,"duration_ms":`...), *e.DurationMS, 10)
	}
	if e.IsError != nil {
		dst = strconv.AppendBool(append(dst, `,"is_error":`...), *e.IsError)
	}
	if e.ResultBytes != nil {
		dst = strconv.AppendInt(append(dst, `,"result_bytes":`...), *e.ResultBytes, 10)
	}
	dst = appendField(dst, `,"result_preview":`, e.ResultPreview)
	if e.Lost != 0 {
		dst = strconv.AppendInt(append(dst, `,"lost":`...), e.Lost, 10)
	}
	dst = appendField(dst, `,"error":`, e.Error)
	dst = appendField(dst, `,"detail":`, e.Detail)
	dst = appendField(dst, `,"instance":`, e.Instance)
	dst = appendField(dst, `,"sandbox":`, e.Sandbox)
	dst = appendField(dst, `,"checkpoint":`, e.Checkpoint)
	if len(e.Subtrees) > 0 {
		dst = append(dst, `,"subtrees":[`...)
		for i, h := range e.Subtrees {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, h)
		}
		dst = append(dst, ']')
	}
	dst = appendField(dst, `,"policy_sha256":`, e.PolicySHA256)
	dst = appendField(dst, `,"previous_policy_sha256":`, e.PreviousPolicySHA256)
	if e.Changed != 0 {
		dst = strconv.AppendInt(append(dst, `,"changed":`...), e.Changed, 10)
	}
	if e.Widened != 0 {
		dst = strconv.AppendInt(append(dst, `,"widened":`...), e.Widened, 10)
	}
	return append(dst, `,"prev_sha256":`...), nil
}

// checkRFC3339 refuses what time.Time.MarshalJSON refuses: a time whose
// year is not four digits, or whose zone offset is not within 23 hours.
func checkRFC3339(b []byte) error {
	switch {
	case b[len("9999")] != '-':
		return errors.New("year outside of range [0,9999]")
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		hh := 10*(b[len(b)-len("07:00")]-'0') + (b[len(b)-len("7:00")] - '0')
		if isDigit(c) || hh >= 24 {
			return errors.New("timezone hour outside of range [0,23]")
		}
	}
	return nil
}

// appendField appends key and s unless s is empty (omitempty).
func appendField(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return appendString(append(dst, key...), s)
}

// maxEncodeDepth is how deep appendValue goes before it hands a value to
// encoding/json, which detects cycles; redacted arguments are never deeper
// than maxDepth.
const maxEncodeDepth = 2 * maxDepth

// appendObject appends m with its keys sorted, as encoding/json does.
func appendObject(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	var small [16]string // most arguments have few keys: no allocation for them
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendString(dst, k), ':')
		var err error
		if dst, err = appendValue(dst, m[k], depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendValue appends v, a JSON-shaped value; any other type goes to
// encoding/json.
func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxEncodeDepth {
		return appendReflect(dst, v)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, x), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case float64:
		return appendFloat(dst, x, 64)
	case float32:
		return appendFloat(dst, float64(x), 32)
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case json.Number:
		s := string(x)
		if s == "" {
			s = "0"
		}
		if !validNumber(s) {
			return dst, fmt.Errorf("json: invalid number literal %q", s)
		}
		return append(dst, s...), nil
	case map[string]any:
		return appendObject(dst, x, depth)
	case []any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	return appendReflect(dst, v)
}

// appendReflect appends v as encoding/json encodes it, without escaping
// HTML, for the values appendValue does not know.
func appendReflect(dst []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// appendFloat appends f as encoding/json does: like ES6's number to string
// conversion, the exponent not padded; NaN and infinities are errors.
func appendFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, bits))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// e-09 becomes e-9.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json does without HTML
// escaping: `"` and `\` escaped, control characters as \b \f \n \r \t or
// \u00XX, invalid UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// validNumber reports whether s is a JSON number literal (RFC 8259,
// section 6), the check encoding/json makes on a json.Number.
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		if s = s[1:]; s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = skipDigits(s[1:])
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && isDigit(s[1]) {
		s = skipDigits(s[2:])
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			if s = s[1:]; s == "" {
				return false
			}
		}
		s = skipDigits(s)
	}
	return s == ""
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func skipDigits(s string) string {
	for len(s) > 0 && isDigit(s[0]) {
		s = s[1:]
	}
	return s
}
