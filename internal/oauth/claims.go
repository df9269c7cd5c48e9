package oauth

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// numericDate reads a JSON NumericDate (seconds since the epoch).
func numericDate(v any) (time.Time, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1<<40 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// isFalse reports whether a claim says false (as a JSON false or "false").
func isFalse(v any) bool {
	switch b := v.(type) {
	case bool:
		return !b
	case string:
		return strings.EqualFold(b, "false")
	}
	return false
}

// stringList reads a claim that is a list of strings or one string; other
// members are dropped.
func stringList(v any) []string {
	switch l := v.(type) {
	case string:
		if l != "" && printableUTF8(l) {
			return []string{l}
		}
	case []any:
		out := make([]string, 0, len(l))
		for _, m := range l {
			if s, ok := m.(string); ok && s != "" && printableUTF8(s) {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// scopes reads the granted scopes: "scope", a space-separated string (RFC
// 9068, RFC 7662), else "scp", a list or a string (as some issuers send).
func scopes(claims map[string]any) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	switch scp := claims["scp"].(type) {
	case string:
		return strings.Fields(scp)
	case []any:
		return stringList(scp)
	}
	return nil
}

// printableUTF8 reports whether s is valid UTF-8 without control
// characters, so it can go in a log line, a header or a page as it is.
func printableUTF8(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// checkAccessToken refuses a verified JWT that is some other kind of
// token of the issuer: one whose typ is neither absent, JWT nor at+jwt
// (RFC 9068 §2.1), or one with at_hash or c_hash, which only an ID token
// carries (OpenID Connect Core §3.1.3.6, §3.3.2.11). An ID token made out
// to this resource would otherwise pass for an access token.
func checkAccessToken(token string, claims map[string]any) *Error {
	for _, c := range []string{"at_hash", "c_hash"} {
		if _, ok := claims[c]; ok {
			return invalidToken("this is an ID token, not an access token: send the access token", nil)
		}
	}
	head, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return invalidToken("the token's header is not base64url", err)
	}
	var h struct {
		Typ string `json:"typ"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return invalidToken("the token's header is not JSON", err)
	}
	switch strings.TrimPrefix(strings.ToLower(h.Typ), "application/") {
	case "", "jwt", "at+jwt":
		return nil
	}
	return invalidToken("the token's type is not an access token's (typ)", nil)
}
