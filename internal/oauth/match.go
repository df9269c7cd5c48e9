package oauth

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gobwas/glob"
)

// A Match selects a profile by an identity's claims (profiles.<name>.match).
// Each key set must match, and a key matches when any of its globs matches
// one of the identity's values: {groups: [eng], email: ["*@corp.example"]}
// is a member of eng with a corp address. Emails compare case-insensitively
// (their domain is; most issuers fold the rest), groups and subjects
// exactly. A Match with no key set matches nothing.
type Match struct {
	Groups []string `koanf:"groups"`
	Email  []string `koanf:"email"`
	Sub    []string `koanf:"sub"`
}

// Empty reports whether the match sets no key.
func (m Match) Empty() bool { return len(m.Groups) == 0 && len(m.Email) == 0 && len(m.Sub) == 0 }

// A ProfileMatch is one profile's match, in the order profiles are tried.
type ProfileMatch struct {
	Profile string
	Match   Match
}

// A Matcher picks the profile of an identity: the first whose match it
// satisfies, else the fallback, else none (refused). A Matcher without
// any match and without a fallback gives every identity no profile ("",
// true): the global and server policies alone apply, as they do to the
// holder of auth.bearer_token_env. Its globs are compiled once, by
// NewMatcher; it is immutable and safe for concurrent use.
type Matcher struct {
	rules    []compiledMatch
	fallback string
}

type compiledMatch struct {
	profile            string
	groups, email, sub []*glob.Pattern
}

// NewMatcher compiles the matches, in order, and the fallback profile for
// an identity none matches ("" refuses it). Every bad glob is an error
// naming its key (profiles.<name>.match.email[0]).
func NewMatcher(matches []ProfileMatch, fallback string) (*Matcher, error) {
	m := &Matcher{fallback: fallback}
	var errs []error
	for _, pm := range matches {
		key := "profiles." + pm.Profile + ".match"
		if pm.Match.Empty() {
			errs = append(errs, fmt.Errorf("%s: set at least one of groups, email, sub (an empty match selects no one)", key))
			continue
		}
		c := compiledMatch{profile: pm.Profile}
		c.groups = compileGlobs(key+".groups", pm.Match.Groups, false, &errs)
		c.email = compileGlobs(key+".email", pm.Match.Email, true, &errs)
		c.sub = compileGlobs(key+".sub", pm.Match.Sub, false, &errs)
		m.rules = append(m.rules, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

func compileGlobs(key string, patterns []string, fold bool, errs *[]error) []*glob.Pattern {
	out := make([]*glob.Pattern, 0, len(patterns))
	for i, p := range patterns {
		if p == "" {
			*errs = append(*errs, fmt.Errorf("%s[%d]: empty pattern", key, i))
			continue
		}
		if fold {
			p = strings.ToLower(p)
		}
		g, err := glob.Compile(p)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s[%d]: %q is not a valid glob: %v", key, i, p, err))
			continue
		}
		out = append(out, g)
	}
	return out
}

// Profile is the profile id selects ("" for none) and whether id is
// admitted at all.
func (m *Matcher) Profile(id Identity) (string, bool) {
	if len(m.rules) == 0 && m.fallback == "" {
		return "", true
	}
	email := strings.ToLower(id.Email)
	for _, r := range m.rules {
		if matchKey(r.groups, id.Groups) && matchKey(r.email, nonEmpty(email)) && matchKey(r.sub, nonEmpty(id.Subject)) {
			return r.profile, true
		}
	}
	return m.fallback, m.fallback != ""
}

// matchKey reports whether a key's globs accept one of values; a key not
// set (no globs) accepts anything.
func matchKey(globs []*glob.Pattern, values []string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		for _, v := range values {
			if g.Match(v) {
				return true
			}
		}
	}
	return false
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
