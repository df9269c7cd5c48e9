// Package secrets recognises secrets: the names of keys (env variables,
// headers, flags, JSON object keys) whose values are secrets, and the
// formats of credentials inside free text (auth headers, URL passwords,
// query parameters, service tokens, private keys and their fragments,
// secret-named assignments such as PASSWORD=…). It is the one
// detector that the audit redactor, the client-config importer and the
// scanning of tool results share, so that what one of them calls a secret
// the others do too. It does no I/O and holds no state; everything in it is
// safe for concurrent use.
package secrets

import (
	"slices"
	"strings"
)

// keyFragments are the fragments that make a key secret wherever they stand
// in it, compared case-insensitively. Fragments are deliberately broad
// ("key" also catches "keyword"): hiding a harmless value is cheap, leaking
// a key is not.
var keyFragments = []string{
	"token", "secret", "password", "passwd", "passphrase", "authorization",
	"key", "credential", "cookie", "session_id", "bearer", "jwt",
	"connection_string", "signature",
}

// fragmentsByFirst indexes keyFragments by their first byte, so that a
// name is searched for all of them in one pass.
var fragmentsByFirst = func() (idx [256][]string) {
	for _, f := range keyFragments {
		idx[f[0]] = append(idx[f[0]], f)
	}
	return idx
}()

// keyWords are the words that make a key secret only as a whole word of
// it: too short to be searched for inside other words ("pat" in "path").
var keyWords = []string{"pass", "pwd", "auth", "pat", "dsn"}

// IsSecretKey reports whether the value stored under name is a secret: the
// name holds one of the secret fragments (token, secret, password, key, …)
// anywhere, case-insensitively, or one of the short secret words (pass,
// pwd, auth, pat, dsn) as a word. Words are split at characters other than
// ASCII letters and digits and at lower-to-upper case changes, so
// GITHUB_PERSONAL_ACCESS_TOKEN, apiKey and X-Api-Key are all secret keys.
func IsSecretKey(name string) bool {
	if len(name) < 3 { // shorter than every fragment and word
		return false
	}
	if asciiOnly(name) { // the common case, searched without allocating
		for i := 0; i < len(name); i++ {
			for _, f := range fragmentsByFirst[toLowerASCII(name[i])] {
				if hasPrefixFold(name[i:], f) {
					return true
				}
			}
		}
		return hasWord(name, keyWords)
	}
	lower := strings.ToLower(name) // as Unicode folds: "\u212Aey" holds "key"
	for _, f := range keyFragments {
		if strings.Contains(lower, f) {
			return true
		}
	}
	return hasWord(name, keyWords)
}

// hasWord reports whether a word of name (see eachWord) equals one of
// words (lower case), ignoring case.
func hasWord(name string, words []string) bool {
	return eachWord(name, func(w string) bool {
		// Words are 3 or 4 letters: the length test spares the
		// comparisons for most words (assignment triggers call this on
		// every name before a = or :).
		return len(w) >= 3 && len(w) <= 4 && slices.ContainsFunc(words, func(k string) bool { return strings.EqualFold(w, k) })
	})
}

// eachWord calls fn with each word of name, as written, until fn returns
// true, and reports whether it did. Words are split at characters other
// than ASCII letters and digits and where a lower-case letter is followed
// by an upper-case one (apiKey is api, Key). It does not allocate.
func eachWord(name string, fn func(w string) bool) bool {
	start := -1
	prevLower := false
	for i := 0; i <= len(name); i++ {
		var c byte
		if i < len(name) {
			c = name[i]
		}
		upper := c >= 'A' && c <= 'Z'
		lower := c >= 'a' && c <= 'z'
		alnum := upper || lower || c >= '0' && c <= '9'
		if start >= 0 && (!alnum || upper && prevLower) {
			if fn(name[start:i]) {
				return true
			}
			start = -1
		}
		if alnum && start < 0 {
			start = i
		}
		prevLower = lower
	}
	return false
}
