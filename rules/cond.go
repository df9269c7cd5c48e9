package rules

import (
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// cond compiles one parsed condition: what its key reads (an argument, a
// URL part of one, or a fact), whether its values are paths or commands,
// and its pattern.
func (c *compiler) cond(pc parsedCond) (cond, *syntaxError) {
	cd := cond{key: pc.key.text, segs: pc.segs, op: pc.op, pattern: pc.pat.text}
	if strings.HasPrefix(pc.key.text, "@") {
		f, ok := lookupFact(pc.key.text)
		if !ok {
			return cond{}, &syntaxError{pc.key.off, "unknown fact " + quote(pc.key.text) + "; the facts are " + factNames}
		}
		cd.fact, cd.segs = f, []string{pc.key.text} // one segment, so Lint can treat it as a key
		cd.pathLike = f == factPath
		c.p.annotations = c.p.annotations || f.annotation()
	} else {
		last := pc.segs[len(pc.segs)-1]
		if part := lookupURLPart(last); part != urlNone && len(pc.segs) > 1 && c.p.urlKeys.has(pc.segs[len(pc.segs)-2]) {
			cd.urlPart = part
		} else {
			cd.pathLike = c.p.pathKeys.has(last)
			cd.urlWhole = !cd.pathLike && c.p.urlKeys.has(last)
			cd.command = c.p.cmdKeys.has(last)
		}
	}
	pat := pc.pat
	if cd.pathLike {
		msg := checkPathRegexp(pat.text)
		if pc.op != opRe {
			msg = checkPathPattern(pat.text)
		}
		if msg != "" {
			return cond{}, &syntaxError{pat.off, msg}
		}
		pat.text = norm.NFC.String(pat.text)
		if c.p.foldPaths && pc.op != opRe {
			pat.text = foldCase(pat.text)
		}
	}
	var err *syntaxError
	if cd.pat, err = compileValue(pat, pc.op, cd.pathLike, cd.pathLike && c.p.foldPaths); err != nil {
		return cond{}, err
	}
	return cd, nil
}

// checkPathPattern returns why a glob on a path-like key cannot match an
// absolute path, and the fix, or "" when it can: it must start with `/`,
// `**` or `{` (each alternative of which must).
func checkPathPattern(p string) string {
	if strings.HasPrefix(p, "{") {
		for _, alt := range braceAlternatives(p) {
			if msg := checkPathPattern(alt); msg != "" {
				return "in the alternative " + quote(alt) + ": " + msg
			}
		}
		return ""
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "**") {
		return ""
	}
	const never = "a path pattern is matched against absolute paths, so it must start with /, ** or {; "
	switch {
	case p == "":
		return never + `an empty pattern matches no path; write "**" for any path`
	case strings.TrimLeftFunc(p, unicode.IsSpace) != p:
		return never + "this one starts with white space; write " + quote(strings.TrimLeftFunc(p, unicode.IsSpace))
	case strings.HasPrefix(p, "="):
		return never + "this one starts with \"=\" (a doubled \"==\"?); write " + quote(strings.TrimLeft(p, "="))
	case p == "*":
		return never + `"*" does not cross "/"; write "**" for any path`
	case strings.HasPrefix(p, "~"):
		return never + "\"~\" is not expanded in patterns; write the home directory's absolute path, or " + quote("**/"+strings.TrimLeft(strings.TrimPrefix(p, "~"), "/"))
	case strings.HasPrefix(p, "./"):
		return never + "write " + quote("**/"+strings.TrimPrefix(p, "./")) + " or an absolute path"
	}
	return never + "write " + quote("**/"+p) + " for that name anywhere, or an absolute path"
}

// checkPathRegexp returns why a regexp on a path-like key cannot match an
// absolute path, and the fix, or "": every match of an anchored regexp
// starts with its literal prefix, which must then start with `/`
// (`path~=\.env` can only match ".env"). An invalid regexp is left to
// compileValue to report.
func checkPathRegexp(p string) string {
	re, err := regexp.Compile(p)
	if err != nil {
		return ""
	}
	prefix, _ := re.LiteralPrefix()
	if prefix == "" || strings.HasPrefix(prefix, "/") {
		return ""
	}
	return "a path regexp is matched against absolute paths, whole, and every match of this one starts with " +
		quote(prefix) + ", which no absolute path does; write " + quote(".*/"+p) + " for that name anywhere"
}

// braceAlternatives splits a pattern that starts with `{` into its
// top-level alternatives, each with the text after the closing brace; a
// pattern without a closing brace is one alternative, itself, minus `{`.
func braceAlternatives(p string) []string {
	depth, start := 0, 1
	var alts []string
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				tail := p[i+1:]
				alts = append(alts, p[start:i])
				for j := range alts {
					alts[j] += tail
				}
				return alts
			}
		case ',':
			if depth == 1 {
				alts = append(alts, p[start:i])
				start = i + 1
			}
		}
	}
	return []string{p[1:]}
}
