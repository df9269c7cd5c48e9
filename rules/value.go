package rules

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
)

// scalarText returns the text a rule pattern is matched against for a decoded
// JSON value: a string as is, a number or boolean by its JSON text, nil as
// "null". ok is false for objects, arrays and any other type, which no
// pattern matches (and every `!=` pattern does).
//
// Arguments may have been decoded with or without json.Decoder.UseNumber and
// must decide alike: a json.Number that is an integer literal is used as
// written (exact however large); any other json.Number is re-formatted from
// its float64 value exactly as encoding/json formats a float64 (1 not 1e+00,
// 1.5, 1e+21, 1e-7), so `1.0` and `1` both read "1". Formatting a number
// outside 0..99 allocates; strings never do.
func scalarText(v any) (s string, isString, ok bool) {
	switch v := v.(type) {
	case string:
		return v, true, true
	case json.Number:
		return numberText(v), false, true
	case float64:
		return floatText(v, 64), false, true
	case float32:
		return floatText(float64(v), 32), false, true
	case int, int8, int16, int32, int64:
		return strconv.FormatInt(reflect.ValueOf(v).Int(), 10), false, true
	case uint, uint8, uint16, uint32, uint64:
		return strconv.FormatUint(reflect.ValueOf(v).Uint(), 10), false, true
	case bool:
		if v {
			return "true", false, true
		}
		return "false", false, true
	case nil:
		return "null", false, true
	}
	return "", false, false
}

// numberText canonicalises a json.Number; see scalarText.
func numberText(n json.Number) string {
	s := string(n)
	if isIntLiteral(s) {
		if s == "-0" {
			return "0" // a server reads -0 as 0
		}
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s // not a number after all: match it as written
	}
	return floatText(f, 64)
}

// isIntLiteral reports whether s is a JSON integer: -?(0|[1-9][0-9]*).
func isIntLiteral(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	if s == "" || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// floatText formats f as encoding/json does: the shortest representation,
// without an exponent for 1e-6 <= |f| < 1e21, and a clean exponent (1e-7, not
// 1e-07) outside that range. Integers in float64 thus read as integers.
func floatText(f float64, bits int) string {
	if f == 0 {
		f = 0 // -0 reads 0, as a server comparing numbers sees it
	}
	if f == math.Trunc(f) && math.Abs(f) < 100 && !math.Signbit(f) {
		return strconv.FormatInt(int64(f), 10) // no allocation for 0..99
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b := strconv.AppendFloat(make([]byte, 0, 32), f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b)
}
