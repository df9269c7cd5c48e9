package secrets

import "strings"

// credentialFragments make a name a credential's wherever they stand in
// it, compared case-insensitively: AWSSecretAccessKey, DB_PASSWORD,
// OPENAI_APIKEY.
var credentialFragments = []string{
	"secret", "password", "passwd", "passphrase", "credential", "authorization", "bearer", "jwt",
	"cookie", "apikey", "accesskey", "privatekey", "authtoken", "accesstoken", "refreshtoken",
}

// credentialWords make a name a credential's as a whole word of it (see
// nameWords): too short to be searched for inside other words ("pass" in
// "passage", "pat" in "path").
var credentialWords = map[string]bool{"pass": true, "pwd": true, "pat": true, "dsn": true}

// keyQualifiers are the words before "key" that make it a credential's
// name (API_KEY, signing_key); "key" alone or after another word names
// an object, a sort order or a cache entry.
var keyQualifiers = map[string]bool{
	"api": true, "access": true, "secret": true, "private": true, "auth": true, "signing": true, "sign": true,
	"encryption": true, "master": true, "client": true, "account": true, "ssh": true, "deploy": true,
	"license": true, "licence": true, "app": true, "service": true, "subscription": true, "webhook": true,
	"consumer": true, "shared": true, "storage": true, "sas": true, "session": true, "gpg": true, "pgp": true,
}

// countingWords are the words beside "token" that make it a count or a
// cursor (max_tokens, nextPageToken), not a credential.
var countingWords = map[string]bool{
	"page": true, "next": true, "prev": true, "previous": true, "continuation": true, "cursor": true,
	"sync": true, "max": true, "min": true, "total": true, "count": true, "num": true, "prompt": true,
	"completion": true, "input": true, "output": true, "limit": true, "usage": true, "cached": true,
	"reasoning": true, "context": true,
}

// IsCredentialName reports whether a value is a credential by its name
// alone, strictly enough that a tool's result may be redacted for it
// (secret-named assignments in text, secret-named members of JSON): the
// name holds secret, password, credential, apikey, … anywhere, or has
// pass, pwd, pat or dsn as a word, a token word that is no count or cursor
// (GITHUB_TOKEN, not nextPageToken or max_tokens), a key word after a
// qualifier (API_KEY, signing_key; not key, sort_key or keyword), a
// session id or a connection string. Every such name is also an
// IsSecretKey name; IsSecretKey is broader because hiding "keyword" in an
// audit log costs nothing, where hiding an object's key or a pagination
// cursor from the model breaks the tool.
func IsCredentialName(name string) bool {
	if !IsSecretKey(name) {
		return false
	}
	lower := strings.ToLower(name)
	for _, f := range credentialFragments {
		if strings.Contains(lower, f) {
			return true
		}
	}
	words := nameWords(name)
	for i, w := range words {
		switch {
		case credentialWords[w]:
			return true
		case w == "token" || w == "tokens":
			counting := false
			for _, o := range words {
				counting = counting || countingWords[o]
			}
			if !counting {
				return true
			}
		case w == "key" || w == "keys":
			if i > 0 && keyQualifiers[words[i-1]] {
				return true
			}
		case w == "session" && i+1 < len(words) && words[i+1] == "id",
			w == "connection" && i+1 < len(words) && words[i+1] == "string":
			return true
		}
	}
	return false
}

// nameWords is name's words (see eachWord) in lower case.
func nameWords(name string) []string {
	var words []string
	eachWord(name, func(w string) bool {
		words = append(words, strings.ToLower(w))
		return false
	})
	return words
}
