package clientconfig

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/secrets"
)

// literalSecrets returns the credentials in v that are written out rather
// than referenced through a ${VAR}: in v outside its references, and in
// the defaults of ${VAR:-default} (which are written out). Their offsets
// are not into v.
func literalSecrets(v string) []secrets.Match {
	var out []secrets.Match
	for _, m := range refPattern.FindAllStringSubmatch(v, -1) {
		if _, def, ok := strings.Cut(m[1], ":-"); ok {
			out = append(out, secrets.Find(def)...)
		}
	}
	// A space where a reference was: its name joins no neighbour.
	out = append(out, secrets.Find(refPattern.ReplaceAllString(v, " "))...)
	return slices.DeleteFunc(out, func(m secrets.Match) bool { return isLoneKeyLine(v, m) })
}

// isLoneKeyLine reports whether m is only a private key's body line in a
// value of one line: a key comes in lines (or with a BEGIN line), and a
// single line of 64 base64 characters is as likely a long path
// (/tmp/TestSomethingLong12345678/001) that must stay an argument.
func isLoneKeyLine(v string, m secrets.Match) bool {
	return m.Kind == secrets.PrivateKey && !strings.ContainsAny(v, "\r\n") && !strings.Contains(v, "-----") && !strings.HasPrefix(v, "PuTTY-")
}

// isURLPassword reports whether m is the password of a URL.
func isURLPassword(m secrets.Match) bool { return m.Kind == secrets.URLPassword }

// authScheme matches an Authorization header value's scheme.
var authScheme = regexp.MustCompile(`^(?i)(bearer|basic|token|bot)\s+`)

// secret returns the value to write for an env value or header: the value
// itself, or, if it is a literal secret, a ${VAR} reference (keeping an
// Authorization scheme such as "Bearer ").
func (c *converter) secret(where, server, key, v string, header bool) string {
	literal := len(literalSecrets(v)) > 0
	if v == "" || strings.Contains(v, "${") && !literal {
		return v
	}
	if !secrets.IsSecretKey(key) && !literal && !authScheme.MatchString(v) {
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
		literal := literalSecrets(a)
		switch {
		case strings.Contains(a, "${"):
			continue
		case hasEq && strings.HasPrefix(flag, "-") && secrets.IsSecretKey(flag) && val != "":
			name = varName(server + "_" + strings.TrimLeft(flag, "-"))
			repl = flag + "="
		case !strings.HasPrefix(a, "-") && i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") && secrets.IsSecretKey(args[i-1]):
			name = varName(server + "_" + strings.TrimLeft(args[i-1], "-"))
			val = a
		case slices.ContainsFunc(literal, isURLPassword):
			name, val = varName(server)+"_URL", a
		case len(literal) > 0:
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
			if v == "" || strings.Contains(v, "${") || !secrets.IsSecretKey(k) && !secrets.Contains(v) {
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
