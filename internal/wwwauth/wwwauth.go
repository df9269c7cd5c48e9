// Package wwwauth reads the Bearer challenge of a WWW-Authenticate
// header (RFC 6750 §3, RFC 9728 §5.1), for mcpwarden as an OAuth client.
package wwwauth

import (
	"strings"
)

// A Challenge is what a server's 401 or 403 says in its Bearer
// WWW-Authenticate challenge: where its protected resource metadata is,
// the scope it wants, and the error (insufficient_scope, say).
type Challenge struct {
	ResourceMetadata string
	Scope            string
	Error            string
}

// ErrorInsufficientScope is the error of a 403 that wants more scope
// (RFC 6750 §3.1).
const ErrorInsufficientScope = "insufficient_scope"

// Parse reads the Bearer challenge among the WWW-Authenticate
// header values; a value with no Bearer challenge gives the zero
// challenge. Parameter names are case-insensitive; values are tokens or
// quoted strings with backslash escapes (RFC 9110 §11.2).
func Parse(values []string) Challenge {
	var c Challenge
	for _, v := range values {
		params, ok := bearerParams(v)
		if !ok {
			continue
		}
		if c.ResourceMetadata == "" {
			c.ResourceMetadata = params["resource_metadata"]
		}
		if c.Scope == "" {
			c.Scope = params["scope"]
		}
		if c.Error == "" {
			c.Error = params["error"]
		}
	}
	return c
}

// bearerParams is the auth-params of the Bearer challenge in one header
// value, which may hold several challenges.
func bearerParams(v string) (map[string]string, bool) {
	params := map[string]string{}
	in := false
	found := false
	i := 0
	for i < len(v) {
		for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == ',') {
			i++
		}
		start := i
		for i < len(v) && v[i] != ' ' && v[i] != '\t' && v[i] != ',' && v[i] != '=' {
			i++
		}
		word := v[start:i]
		if word == "" {
			break
		}
		j := i
		for j < len(v) && (v[j] == ' ' || v[j] == '\t') {
			j++
		}
		if j >= len(v) || v[j] != '=' || (j+1 < len(v) && v[j+1] == '=') {
			// A scheme name (or a token68, which Bearer challenges do not use):
			// a new challenge begins.
			in = strings.EqualFold(word, "Bearer")
			found = found || in
			continue
		}
		i = j + 1
		for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
			i++
		}
		var val string
		if i < len(v) && v[i] == '"' {
			var b strings.Builder
			i++
			for i < len(v) && v[i] != '"' {
				if v[i] == '\\' && i+1 < len(v) {
					i++
				}
				b.WriteByte(v[i])
				i++
			}
			i++ // the closing quote
			val = b.String()
		} else {
			start := i
			for i < len(v) && v[i] != ',' && v[i] != ' ' && v[i] != '\t' {
				i++
			}
			val = v[start:i]
		}
		name := strings.ToLower(word)
		if _, dup := params[name]; in && !dup {
			params[name] = val
		}
	}
	return params, found
}
