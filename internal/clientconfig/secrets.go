package clientconfig

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// secretWords are the words of a key that mark its value as a secret.
var secretWords = []string{
	"token", "secret", "password", "passwd", "pass", "pwd", "key", "apikey",
	"auth", "authorization", "credential", "credentials", "pat", "cookie",
	"bearer", "jwt", "dsn", "signature",
}

// isSecretKey reports whether an env, header or flag name marks its value
// as a secret. The name is split into words at non-letters and at
// lower-to-upper case changes (GITHUB_PERSONAL_ACCESS_TOKEN, apiKey,
// X-Api-Key).
func isSecretKey(k string) bool {
	var words []string
	var cur []rune
	prevLower := false
	for _, r := range k {
		isLetter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		upper := r >= 'A' && r <= 'Z'
		if !isLetter || (upper && prevLower) {
			if len(cur) > 0 {
				words = append(words, strings.ToLower(string(cur)))
			}
			cur = nil
		}
		if isLetter {
			cur = append(cur, r)
		}
		prevLower = r >= 'a' && r <= 'z'
	}
	if len(cur) > 0 {
		words = append(words, strings.ToLower(string(cur)))
	}
	for _, w := range words {
		if slices.Contains(secretWords, w) {
			return true
		}
	}
	lk := strings.ToLower(k)
	return strings.Contains(lk, "token") || strings.Contains(lk, "secret") || strings.Contains(lk, "password") || strings.Contains(lk, "apikey")
}

// tokenPattern matches well-known credential formats and URLs with a
// password.
var tokenPattern = regexp.MustCompile(`(ghp_|gho_|ghu_|ghs_|ghr_|github_pat_)[A-Za-z0-9_]{16,}` +
	`|glpat-[A-Za-z0-9_-]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{16,}|sk_(live|test)_[A-Za-z0-9]{16,}` +
	`|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|npm_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,}` +
	`|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}|://[^/\s:@]+:[^/\s@]+@`)

// urlPassword matches a URL with a password (a connection string).
var urlPassword = regexp.MustCompile(`://[^/\s:@]+:[^/\s@]+@`)

// authScheme matches an Authorization header value's scheme.
var authScheme = regexp.MustCompile(`^(?i)(bearer|basic|token|bot)\s+`)

// secret returns the value to write for an env value or header: the value
// itself, or, if it is a literal secret, a ${VAR} reference (keeping an
// Authorization scheme such as "Bearer ").
func (c *converter) secret(where, server, key, v string, header bool) string {
	if v == "" || strings.Contains(v, "${") && !tokenPattern.MatchString(v) {
		return v
	}
	if !isSecretKey(key) && !tokenPattern.MatchString(v) && !authScheme.MatchString(v) {
		return v
	}
	prefix := ""
	if m := authScheme.FindString(v); m != "" && header {
		prefix, v = m, v[len(m):]
	}
	var name string
	switch {
	case !header && envName.MatchString(key):
		name = key
	case header && strings.EqualFold(key, "authorization"):
		name = varName(server) + "_TOKEN"
	case header && upperEnvName.MatchString(key):
		name = key // CONTEXT7_API_KEY: already a variable's name
	default:
		name = varName(server + "_" + strings.TrimPrefix(strings.TrimPrefix(key, "X-"), "x-"))
	}
	name = c.freeName(name, server, v)
	c.use(name, where, v, "")
	return prefix + "${" + name + "}"
}

// freeName returns name, or a server-prefixed variant, that is not yet
// used for a different secret.
func (c *converter) freeName(name, server, secret string) string {
	ok := func(n string) bool {
		v := c.vars[n]
		return v == nil || v.Secret == secret
	}
	if ok(name) {
		return name
	}
	base := varName(server) + "_" + name
	if strings.HasPrefix(name, varName(server)+"_") {
		base = name
	}
	for i := 1; ; i++ {
		n := base
		if i > 1 {
			n = fmt.Sprintf("%s_%d", base, i)
		}
		if ok(n) {
			return n
		}
	}
}

// varName turns s into an environment variable name: upper case, every
// character outside [A-Z0-9_] replaced by '_'.
func varName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	n := b.String()
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	return n
}

// argSecrets replaces literal secrets in args (a token, --token=VALUE,
// --api-key VALUE) with ${VAR} references and says that mcpwarden does not
// expand them there: a literal token is never copied, and the config
// points at what to fix.
func (c *converter) argSecrets(server string, args []string) {
	for i, a := range args {
		where := fmt.Sprintf("servers.%s.args[%d]", server, i)
		flag, val, hasEq := strings.Cut(a, "=")
		var name, repl string
		switch {
		case strings.Contains(a, "${"):
			continue
		case hasEq && strings.HasPrefix(flag, "-") && isSecretKey(flag) && val != "":
			name = varName(server + "_" + strings.TrimLeft(flag, "-"))
			repl = flag + "="
		case !strings.HasPrefix(a, "-") && i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") && isSecretKey(args[i-1]):
			name = varName(server + "_" + strings.TrimLeft(args[i-1], "-"))
			val = a
		case urlPassword.MatchString(a):
			name, val = varName(server)+"_URL", a
		case tokenPattern.MatchString(a):
			name, val = varName(server)+"_TOKEN", a
		default:
			continue
		}
		name = c.freeName(name, server, val)
		c.use(name, where, val, "")
		args[i] = repl + "${" + name + "}"
		c.notef("%s: a literal secret was replaced with ${%s}, but mcpwarden does not expand variables in args: pass the secret to the server through env instead (most servers read it from an environment variable) and fix the args", where, name)
	}
}

// urlSecrets replaces a password in the URL and the values of secret-looking
// query parameters with ${VAR} references, with a note.
func (c *converter) urlSecrets(server, raw string) string {
	if raw == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	where := "servers." + server + ".url"
	changed := false
	if p, ok := u.User.Password(); ok && !strings.Contains(p, "${") {
		name := c.freeName(varName(server)+"_PASSWORD", server, p)
		c.use(name, where, p, "")
		u.User = url.UserPassword(u.User.Username(), "${"+name+"}")
		changed = true
	}
	q := u.Query()
	for _, k := range sortedKeys(q) {
		for i, v := range q[k] {
			if v == "" || strings.Contains(v, "${") || !isSecretKey(k) && !tokenPattern.MatchString(v) {
				continue
			}
			name := c.freeName(varName(server+"_"+k), server, v)
			c.use(name, where, v, "")
			q[k][i] = "${" + name + "}"
			changed = true
		}
	}
	if !changed {
		return raw
	}
	u.RawQuery = q.Encode()
	out := strings.NewReplacer("%24%7B", "${", "%7D", "}", "%24", "$", "%7B", "{").Replace(u.String())
	c.notef("%s: literal secrets in the URL were replaced with ${VAR} references, but mcpwarden does not expand variables in url: send the secret in a header (headers are expanded) and fix the url", where)
	return out
}
