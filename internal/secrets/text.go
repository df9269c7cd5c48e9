package secrets

import (
	"regexp"
	"strings"
)

// A Kind says what sort of credential a Match is.
type Kind uint8

// The kinds of credential found in text.
const (
	// AuthHeader is the credential of a Bearer or Basic HTTP auth header.
	AuthHeader Kind = iota + 1
	// URLPassword is the password of a URL (a connection string).
	URLPassword
	// QueryParam is the value of a secret-looking URL query parameter.
	QueryParam
	// Token is a token in a well-known service format (GitHub, GitLab,
	// Slack, OpenAI, Stripe, AWS, Google, npm, Hugging Face) or a JWT.
	Token
	// PrivateKey is a private key or a fragment of one: a PEM or PGP
	// private key block from its BEGIN line, the lines of one ending at
	// its END line, a run of PEM body lines, or a PuTTY key.
	PrivateKey
	// Assignment is the value assigned to a secret-named key in text:
	// KEY=value, export KEY=value, KEY: value, "KEY": "value", key = value,
	// the key named as IsCredentialName says.
	Assignment
)

var kindNames = [...]string{AuthHeader: "auth_header", URLPassword: "url_password", QueryParam: "query_param", Token: "token", PrivateKey: "private_key", Assignment: "secret_assignment"}

// String returns the kind's name, as in "url_password".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// A Match is one credential found in text: its kind and the byte span of
// the secret itself (the token after "Bearer ", the password of a URL, the
// value of a query parameter).
type Match struct {
	Kind       Kind
	Start, End int
}

// A pattern is one credential format. The secret is the regexp's group
// named "s"; Redact replaces a match with before, the mask and after
// (regexp templates that keep the text naming the secret). Each pattern
// has literal triggers, one of which every match holds where the
// pattern's segment function starts from (segments.go): the regexp runs
// only on those segments, since most text holds none. Triggers are
// compared ignoring ASCII case when fold is set: none of their letters
// folds to a rune outside ASCII (not k, not s), which
// TestTriggersFoldOnlyInASCII checks. A pattern with wordStart begins with
// \b before a word character. A pattern with a filter counts only the
// matches its filter accepts (a secret key's name, a PEM body's shape):
// the others are matched and passed over, as in the whole text. A change
// to a pattern's regexp must keep its segment function holding every
// match (segments.go says what each assumes);
// FuzzSegmentsMatchTheReference is what notices when it does not.
type pattern struct {
	kind          Kind
	re            *regexp.Regexp
	before, after string
	triggers      []string
	fold          bool
	wordStart     bool
	segment       segmentFunc
	filter        filterFunc
}

// privateKeyRE matches a private key from its BEGIN line (PEM, OpenSSH,
// PGP) to its END line or the end of the text; the lines of one ending at
// its END line (what `tail` leaves of a key); a PuTTY key from its header
// to its Private-MAC or the end of the text; and a PuTTY key's private
// lines.
var privateKeyRE = regexp.MustCompile(`(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)` +
	`|(?:[A-Za-z0-9+/=]*\r?\n)*-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----` +
	`|PuTTY-User-Key-File-[0-9]+:(?:[\s\S]*?Private-MAC:[ \t]*[0-9A-Fa-f]*|[\s\S]*)` +
	`|Private-Lines:[ \t]*[0-9]+(?:\r?\n[A-Za-z0-9+/=]+)*)`)

// keyBodyRE matches a run of PEM body lines: a whole line of 64 base64
// characters (PEM, PGP armour, PuTTY) or 70 (OpenSSH), with the line of
// base64 before it and those after it, each whole; e keeps the line
// break after the run. keyBodyAccepted then passes over runs that are
// hexadecimal only (digests) or the body of a public block (a
// certificate).
var keyBodyRE = regexp.MustCompile(`(?m)^(?P<s>(?:[A-Za-z0-9+/=]+\r?\n)?(?:[A-Za-z0-9+/]{70}|[A-Za-z0-9+/]{64})(?:\r?\n[A-Za-z0-9+/=]+)*)(?P<e>\r?\n|\r?$)`)

// assignmentRE matches a key assigned a value of six characters or more
// that ends its line, its quotes or its item; keyNameAccepted then keeps
// the keys IsCredentialName names. The value stops at = and : (but for
// base64 padding) so that "see: PASSWORD=x…" is the assignment of
// PASSWORD, not of see.
var assignmentRE = regexp.MustCompile(`(?P<n>(?P<k>[A-Za-z_][A-Za-z0-9_.-]*)["']?[ \t]*[:=][ \t]*["']?)(?P<s>[^\s"',;&=:]{6,}=*)(?P<e>[ \t]*(?:["',;&#})\]\r\n]|$))`)

// patterns are the credential formats, in the order Redact applies them.
var patterns = []pattern{
	{AuthHeader, regexp.MustCompile(`(?i)\b(bearer)\s+(?P<s>[A-Za-z0-9._~+/=-]{6,})`), "${1} ", "",
		[]string{"bearer"}, true, true, bearerSegments, noFilter},
	{AuthHeader, regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?basic)\s+(?P<s>[A-Za-z0-9+/=._-]{4,})`), "${1} ", "",
		[]string{"authorization"}, true, false, basicSegments, noFilter},
	{URLPassword, regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]*):(?P<s>[^/\s@]+)@`), "${1}:", "@",
		[]string{"://"}, false, false, urlSegments, noFilter},
	{QueryParam, regexp.MustCompile(`(?i)([?&;](?:access_token|refresh_token|id_token|token|api_?key|key|secret|client_secret|password|passwd|sig|signature|auth)=)(?P<s>[^&;\s#"']*[^&;\s#"',])`), "${1}", "",
		[]string{"="}, false, false, querySegments, noFilter},
	{Token, regexp.MustCompile(`\b(?P<s>gh[pousr]_[A-Za-z0-9_]{16,}|github_pat_[A-Za-z0-9_]{16,}|glpat-[A-Za-z0-9_-]{16,}` +
		`|sk-[A-Za-z0-9_-]{16,}|sk_(?:live|test)_[A-Za-z0-9]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}` +
		`|npm_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?)`), "", "",
		[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "sk_live_", "sk_test_",
			"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "AKIA", "AIza", "npm_", "hf_", "eyJ"}, false, true, tokenSegments, noFilter},
	{PrivateKey, privateKeyRE, "", "",
		[]string{"-----BEGIN ", endLine, "PuTTY-User-Key-File-", "Private-Lines:"}, false, false, privateKeySegments, noFilter},
	{PrivateKey, keyBodyRE, "", "${e}",
		[]string{"\n"}, false, false, keyBodySegments, keyBodyFilter},
	{Assignment, assignmentRE, "${n}", "${e}",
		[]string{"=", ":"}, false, false, assignmentSegments, keyNameFilter},
}

// bodyPattern is the index in patterns of the PEM body lines, whose
// segments start at line starts, the text's first among them.
const bodyPattern = 6

// minLen is the length under which text is not searched. It was meant as
// the shortest text any pattern matches, a URL password ("x://:p@"), but a
// query parameter can be shorter ("&key=0", 6 bytes): kept as it is until
// that change of findings is decided on its own.
const minLen = 7

// allPatterns is the set of every pattern, bit i for patterns[i].
const allPatterns = 1<<8 - 1

// Contains reports whether s holds a credential that Find would report.
func Contains(s string) bool {
	if len(s) < minLen {
		return false
	}
	var buf [16]segment
	segs := findSegments(s, allPatterns, buf[:0])
	for i := range patterns {
		p := &patterns[i]
		for _, sg := range segs {
			if sg.p != i {
				continue
			}
			if p.filter == noFilter && p.re.MatchString(s[sg.a:sg.b]) || p.filter != noFilter && len(p.matches(s, sg.a, sg.b)) > 0 {
				return true
			}
		}
	}
	return false
}

// Find returns the credentials in s, pattern by pattern in the order
// Redact applies them (not sorted by position; spans of different kinds
// may overlap).
func Find(s string) []Match {
	if len(s) < minLen {
		return nil
	}
	var buf [16]segment
	segs := findSegments(s, allPatterns, buf[:0])
	if len(segs) == 0 {
		return nil // the common case, without a look at the patterns
	}
	var out []Match
	for i := range patterns {
		p := &patterns[i]
		k := 2 * p.re.SubexpIndex("s")
		for _, sg := range segs {
			if sg.p != i {
				continue
			}
			for _, m := range p.matches(s, sg.a, sg.b) {
				out = append(out, Match{Kind: p.kind, Start: m[k], End: m[k+1]})
			}
		}
	}
	return out
}

// Redact returns s with each credential replaced by mask. The text around
// a secret that names it stays ("Bearer <mask>", "https://bob:<mask>@",
// "?api_key=<mask>", "PASSWORD=<mask>"), except that the blanks after an
// auth scheme become one space. Patterns apply one after another, each to
// the text the previous one left, and the passes repeat until the text is
// left as it is (at most redactPasses times): a later pattern's mask can
// end a value an earlier pattern stopped short of ("&token=#00000,0": the
// query value starts at the '#', the assignment's does not), so that a
// text redacted once is not redacted further by a second Redact.
func Redact(s, mask string) string {
	for range redactPasses {
		next := redactOnce(s, mask)
		if next == s {
			break
		}
		s = next
	}
	return s
}

// redactPasses bounds Redact's passes. A pass after the first only widens
// a mask over what lies next to it, each pattern matching a mask whole,
// so the text shrinks or stays.
const redactPasses = 4

// redactOnce is one pass of Redact: every pattern applied once.
func redactOnce(s, mask string) string {
	if len(s) < minLen {
		return s
	}
	var buf [16]segment
	segs := findSegments(s, allPatterns, buf[:0])
	if len(segs) == 0 {
		return s
	}
	for i := range patterns {
		var out []byte
		done := 0
		for _, sg := range segs {
			if sg.p != i {
				continue
			}
			if next, ok := patterns[i].replace(s, sg.a, sg.b, mask); ok {
				out = append(append(out, s[done:sg.a]...), next...)
				done = sg.b
			}
		}
		if out != nil {
			s = string(append(out, s[done:]...))
			segs = findSegments(s, allPatterns&^(1<<(i+1)-1), segs[:0]) // the later patterns', in the text now
		}
	}
	return s
}

// matches returns the matches of p in s[a:b] that p's filter accepts, as
// submatch indexes into s.
func (p *pattern) matches(s string, a, b int) [][]int {
	ms := p.re.FindAllStringSubmatchIndex(s[a:b], -1)
	out := ms[:0]
	for _, m := range ms {
		for j := range m {
			if m[j] >= 0 {
				m[j] += a
			}
		}
		if p.accepts(s, m) {
			out = append(out, m)
		}
	}
	return out
}

// replace returns s[a:b] with each match of p in it that p's filter
// accepts replaced by p's template for mask, ok false when there is none.
func (p *pattern) replace(s string, a, b int, mask string) (string, bool) {
	ms := p.matches(s, a, b)
	if len(ms) == 0 {
		return "", false
	}
	tmpl := p.template(mask)
	var out []byte
	done := a
	for _, m := range ms {
		out = append(out, s[done:m[0]]...)
		out = p.re.ExpandString(out, tmpl, s, m)
		done = m[1]
	}
	return string(append(out, s[done:b]...)), true
}

// template is the replacement for a match of p: the text before the
// secret, mask, and the text after it.
func (p *pattern) template(mask string) string {
	return p.before + strings.ReplaceAll(mask, "$", "$$") + p.after
}
