package rules

import (
	"net/url"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/mcpwarden/mcpwarden/internal/keyfold"
)

// A pathEnv is what reading a path-like value needs to know about the
// server: where relative values are joined, whose home `~` is, and the
// physical forms the proxy resolved on disk.
type pathEnv struct {
	root     string            // "" = unknown
	extra    []string          // further roots (ServerSpec.ExtraRoots)
	handed   []string          // MCP roots handed to the server (Call.UpstreamRoots)
	home     string            // "" = unknown
	physical map[string]string // raw reading → physical form (Call.Physical)
	fold     bool              // compare paths case-insensitively
}

// readings calls fn with every reading of the path-like value s the upstream
// may act on, until fn returns true, and reports whether it did. A known
// reading is absolute and joined to the root but not cleaned (raw, as the
// kernel would walk it); a guess (known false) is a reading whose location
// cannot be known, which an allow never accepts. The readings are:
//
//   - a `file:` URI: its decoded path (and the path up to a decoded NUL);
//     what is left once a naive server strips `file:` or `file://`, each
//     also percent-decoded; and the value as a relative path (a server that
//     reads no URIs opens `file:/…` in its directory);
//   - another URI (`https://…`): nothing known; guesses;
//   - `~` or `~/…` (and `$HOME/…`, `${HOME}/…`, which a server that expands
//     variables reads so): joined to the server's home (a guess without
//     one), and the value as a relative path; `~user/…` is a guess at
//     user's home;
//   - anything else: an absolute value as it is, a relative one joined to
//     the root, to each extra root and to each MCP root handed to the
//     server, one reading each (and guesses without a root: the value
//     cleaned, and rooted at `/`);
//   - any of these that is read in the server's view (`/proc/self/…`,
//     `/dev/fd/…`, `/proc/<pid>/…`, see viewOf): not known; guesses at
//     where it leads (see view).
func (e *pathEnv) readings(s string, fn func(raw string, known bool) bool) bool {
	return e.plainReadings(s, func(raw string, known bool) bool {
		if known || filepath.IsAbs(raw) { // a guess rooted at / too
			if v, ok := viewOf(raw); ok {
				return e.view(raw, v, fn)
			}
		}
		return fn(raw, known)
	})
}

// plainReadings is readings without the server's view: a known reading
// may be `/proc/self/…`.
func (e *pathEnv) plainReadings(s string, fn func(raw string, known bool) bool) bool {
	if scheme, ok := uriScheme(s); ok {
		if !strings.EqualFold(scheme, "file") {
			return e.guesses(s, fn)
		}
		if p, ok := fileURIPath(s); ok {
			if fn(p, true) {
				return true
			}
			// %00 decodes to a NUL, where a C-string server stops reading.
			if i := strings.IndexByte(p, 0); i >= 0 && fn(p[:i], true) {
				return true
			}
		} else if e.guesses(s, fn) {
			return true
		}
		return e.strippedURI(s[len(scheme)+1:], fn) || e.literal(s, fn)
	}
	for _, v := range [...]string{"$HOME", "${HOME}"} {
		// A server that expands environment variables reads these as ~.
		if rest, ok := strings.CutPrefix(s, v); ok && (rest == "" || rest[0] == '/') {
			if e.plainReadings("~"+rest, fn) {
				return true
			}
			return e.literal(s, fn)
		}
	}
	if rest, ok := strings.CutPrefix(s, "~"); ok {
		user, rest, _ := strings.Cut(rest, "/")
		switch {
		case user == "" && e.home != "":
			if fn(e.home+"/"+rest, true) {
				return true
			}
		case user == "":
			if fn(filepath.Join("/", rest), false) {
				return true
			}
		default:
			for _, h := range []string{filepath.Join(filepath.Dir(e.home), user), "/home/" + user, "/Users/" + user, "/" + user} {
				if fn(filepath.Join(h, rest), false) {
					return true
				}
			}
		}
		return e.literal(s, fn)
	}
	return e.literal(s, fn)
}

// strippedURI calls fn with the readings of a `file:` URI whose scheme a
// naive server strips: rest (`//etc/passwd` is /etc/passwd), rest without
// its `//` (`file://etc/passwd` read as etc/passwd), and each
// percent-decoded.
func (e *pathEnv) strippedURI(rest string, fn func(raw string, known bool) bool) bool {
	for _, r := range [2]string{rest, strings.TrimPrefix(rest, "//")} {
		if e.literal(r, fn) {
			return true
		}
		if d, err := url.PathUnescape(r); err == nil && d != r && e.literal(d, fn) {
			return true
		}
	}
	return false
}

// literal calls fn with s read as a plain path: an absolute s as it is, a
// relative one against every root the server may resolve it against, the
// unknown root (guesses) included when there is no root.
func (e *pathEnv) literal(s string, fn func(raw string, known bool) bool) bool {
	if filepath.IsAbs(s) {
		return fn(s, true)
	}
	if e.root != "" && fn(e.root+"/"+s, true) {
		return true
	}
	for _, dir := range e.extra {
		if fn(dir+"/"+s, true) {
			return true
		}
	}
	for _, dir := range e.handed {
		if filepath.IsAbs(dir) && fn(filepath.Clean(dir)+"/"+s, true) {
			return true
		}
	}
	return e.root == "" && e.guesses(s, fn)
}

// guesses calls fn with the readings a deny or ask is tried on for a value
// whose location is unknown: the value cleaned as a relative path, and the
// value as if rooted at `/` (so `../../etc/passwd` also reads `/etc/passwd`),
// read in the server's view when it is one.
func (e *pathEnv) guesses(s string, fn func(raw string, known bool) bool) bool {
	if !filepath.IsAbs(s) {
		// Rooted at /, before cleaning: `../dev/fd/../cwd/x` is the
		// server's cwd.
		if v, ok := viewOf("/" + s); ok && e.view("/"+s, v, fn) {
			return true
		}
	}
	return fn(filepath.Clean(s), false) || fn(filepath.Join("/", s), false)
}

// forms calls fn with every form of the path-like value s, until fn returns
// true, and reports whether it did: for each known reading its lexical form
// (cleaned), its NFC form when that differs (a server or filesystem that
// normalises Unicode reads `cafe\u0301` as `café`, and the KELVIN SIGN as
// K), and the physical form the proxy resolved for the raw reading, if
// any; each guess as it is (known false). Forms are not case-folded; see
// fold. It does not allocate for a clean absolute value in NFC.
func (e *pathEnv) forms(s string, fn func(form string, known bool) bool) bool {
	return e.readings(s, func(raw string, known bool) bool {
		if !known {
			if fn(raw, false) {
				return true
			}
			// A path read in the server's view, which the proxy resolved
			// there.
			p, ok := e.physical[raw]
			return ok && e.physicalForms(p, "", fn)
		}
		lex := filepath.Clean(raw)
		if fn(lex, true) {
			return true
		}
		if !isNFC(lex) {
			if fn(norm.NFC.String(lex), true) {
				return true
			}
		}
		p, ok := e.physical[raw]
		return ok && e.physicalForms(p, lex, fn)
	})
}

// physicalForms calls fn with the physical form p of a reading whose
// lexical form is lex, and its NFC form; a p still in the server's view
// (the proxy could not resolve `/proc/self` there: it does not know the
// serving process) is only guessed at.
func (e *pathEnv) physicalForms(p, lex string, fn func(form string, known bool) bool) bool {
	if p == lex {
		return false
	}
	if v, ok := viewOf(p); ok {
		return e.view(p, v, func(raw string, _ bool) bool { return fn(raw, false) })
	}
	if fn(p, true) {
		return true
	}
	return !isNFC(p) && fn(norm.NFC.String(p), true)
}

// isNFC reports whether s is in Unicode normal form C; an ASCII string
// always is, and is checked without allocating.
func isNFC(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return norm.NFC.IsNormalString(s)
		}
	}
	return true
}

// foldPath returns s case-folded when paths compare case-insensitively,
// else s. It allocates only when a rune changes.
func (e *pathEnv) foldPath(s string) string {
	if !e.fold {
		return s
	}
	return foldCase(s)
}

// foldCase maps every rune to the representative of its simple case
// folding orbit, so that `.ENV`, `.env` and a long s or KELVIN SIGN
// spelling compare equal, as on a case-insensitive filesystem; runes that
// no case folding relates (`İ` and `i`) stay apart, so that an allow on one
// never covers the other.
// An ASCII letter folds to lower case, so that a path already in lower case
// is returned without allocating.
func foldCase(s string) string {
	return strings.Map(foldRune, s)
}

func foldRune(r rune) rune {
	if r >= utf8.RuneSelf {
		r = keyfold.Rune(r)
	}
	if 'A' <= r && r <= 'Z' {
		r += 'a' - 'A'
	}
	return r
}

// uriScheme returns the scheme of s if s starts with one
// (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":") followed by `//`, or is
// a `file:` URI; a Windows drive letter (`C:`) or a name with a colon
// (`a:b`) is not a URI.
func uriScheme(s string) (string, bool) {
	i := strings.IndexByte(s, ':')
	if i <= 1 || !isIdentStart(s[0]) {
		return "", false
	}
	for j := 1; j < i; j++ {
		c := s[j]
		if !isIdentStart(c) && !('0' <= c && c <= '9') && c != '+' && c != '.' && c != '-' {
			return "", false
		}
	}
	scheme := s[:i]
	if strings.HasPrefix(s[i+1:], "//") || strings.EqualFold(scheme, "file") {
		return scheme, true
	}
	return "", false
}

// fileURIPath returns the local path a `file:` URI names, percent-decoded:
// `file:///etc/passwd`, `file://localhost/etc/passwd` and `file:/etc/passwd`
// name /etc/passwd. ok is false for another host, a relative path or a
// malformed URI.
func fileURIPath(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return "", false
	}
	if u.Host != "" && !strings.EqualFold(u.Hostname(), "localhost") {
		return "", false
	}
	if !strings.HasPrefix(u.Path, "/") {
		return "", false
	}
	return u.Path, true
}

// within reports whether the clean absolute path p is dir or beneath it;
// `/srv/apple` is not within `/srv/app`.
func within(p, dir string) bool {
	if !strings.HasPrefix(p, dir) {
		return false
	}
	return len(p) == len(dir) || dir == "/" || p[len(dir)] == '/'
}
