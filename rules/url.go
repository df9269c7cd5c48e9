package rules

import (
	"net/url"
	"path"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
)

// A urlPart names the part of a URL a condition such as `url.host` reads.
type urlPart uint8

const (
	urlNone urlPart = iota // the whole value
	urlScheme
	urlHost
	urlPort
	urlPath
	urlQuery
)

// lookupURLPart returns the part a key's last segment names, or urlNone.
func lookupURLPart(seg string) urlPart {
	switch seg {
	case "scheme":
		return urlScheme
	case "host":
		return urlHost
	case "port":
		return urlPort
	case "path":
		return urlPath
	case "query":
		return urlQuery
	}
	return urlNone
}

// A urlValue is a URL-like value parsed and normalised as a client that
// fetches it would resolve it.
type urlValue struct {
	scheme, host, port, path, query string
	explicitPort                    bool
}

// parseURL parses s, which must be absolute (`scheme://host…`), and
// normalises its host: lower case, no trailing dot, IDNA to ASCII, userinfo
// dropped, every IPv4 spelling (decimal `2852039166`, octal, hex, short
// `169.254.43518`, IPv4-mapped IPv6) as a dotted quad, IPv6 in its
// canonical form. ok is false for anything else, which then never
// satisfies an allow on a part and satisfies every deny and ask on one.
func (p *Policy) parseURL(s string) (urlValue, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return urlValue{}, false
	}
	v := urlValue{scheme: strings.ToLower(u.Scheme), path: u.Path, query: u.RawQuery}
	if h := u.Hostname(); h != "" || u.Host != "" {
		host, ok := hostport.NormalizeHost(h)
		if !ok {
			return urlValue{}, false
		}
		v.host = host
	} else if v.scheme != "file" {
		return urlValue{}, false
	}
	v.port, v.explicitPort = u.Port(), u.Port() != ""
	if !v.explicitPort {
		v.port = defaultPort(v.scheme)
	}
	return v, true
}

// defaultPort is the port a scheme implies, or "".
func defaultPort(scheme string) string {
	switch scheme {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	case "ftp":
		return "21"
	}
	return ""
}

// part returns the text of one part.
func (v *urlValue) part(p urlPart) string {
	switch p {
	case urlScheme:
		return v.scheme
	case urlHost:
		return v.host
	case urlPort:
		return v.port
	case urlPath:
		return v.path
	case urlQuery:
		return v.query
	}
	return ""
}

// String re-assembles the URL from its normalised parts (userinfo and
// fragment dropped), so that a pattern on a whole URL also meets the host
// every spelling of it names.
func (v *urlValue) String() string {
	var b strings.Builder
	b.WriteString(v.scheme)
	b.WriteString("://")
	if strings.Contains(v.host, ":") {
		b.WriteString("[" + v.host + "]")
	} else {
		b.WriteString(v.host)
	}
	if v.explicitPort {
		b.WriteString(":" + v.port)
	}
	b.WriteString((&url.URL{Path: v.path}).EscapedPath())
	if v.query != "" {
		b.WriteString("?" + v.query)
	}
	return b.String()
}

// urlText tests one value at a URL-like key: for a condition on a part,
// that part of the parsed value (a value that does not parse fails an
// allow and satisfies a deny or ask); for a condition on the whole value,
// the value as written and, when it parses, re-assembled from its
// normalised parts.
func (x *evalCtx) urlText(c *cond, s string, isString bool, st *condState) bool {
	if c.urlPart == urlNone {
		if st.visit(witness{text: s, isString: isString}, c.holds(s)) {
			return true
		}
		if !isString {
			return false
		}
		v, ok := x.p.parseURL(s)
		if !ok {
			// A host spelt with percent escapes (`%31%36%39.254…`) does not
			// parse here, but some clients decode it: read it decoded.
			d, err := url.PathUnescape(s)
			if err != nil || d == s {
				return false
			}
			if v, ok = x.p.parseURL(d); !ok {
				return false
			}
		}
		if n := v.String(); n != s {
			return st.visit(witness{text: n, isString: true}, c.holds(n))
		}
		return false
	}
	v, ok := x.p.parseURL(s)
	if !isString || !ok {
		return st.visit(witness{text: s, isString: isString, kind: wBadURL}, !st.all)
	}
	part := v.part(c.urlPart)
	if st.visit(witness{text: part, isString: true}, c.holds(part)) {
		return true
	}
	if c.urlPart == urlPath {
		if clean := path.Clean(part); part != "" && clean != part {
			return st.visit(witness{text: clean, isString: true}, c.holds(clean))
		}
	}
	return false
}
