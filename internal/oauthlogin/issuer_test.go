package oauthlogin

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// withIss is the answer of an authorization server: a code, the state,
// and iss set to each of iss (none when there are none).
func withIss(iss ...string) func(issuer, state string) url.Values {
	return func(_, state string) url.Values {
		v := url.Values{"code": {"c"}, "state": {state}}
		if len(iss) > 0 {
			v["iss"] = iss
		}
		return v
	}
}

// mixUp is a login to an authorization server whose answer is made by
// answer: the stand-in (to see whether the code reached its token
// endpoint), whether a token was stored, and the login's error.
func mixUp(t *testing.T, issSupported bool, answer func(issuer, state string) url.Values) (*standInAS, bool, error) {
	t.Helper()
	as := startStandInAS(t, false, false)
	as.issSupported, as.answer = issSupported, answer
	store := newStore(t)
	_, _, err := Login(t.Context(), as.request(t, store))
	tok, _, _ := store.Get(t.Context(), "remote") // the registered client is kept either way
	return as, tok.AccessToken != "", err
}

// TestLoginRefusesAMismatchedIssuer is the RFC 9207 mix-up attack: the
// authorization response names another authorization server than the one
// mcpwarden sent the person to, so its code must reach no token endpoint.
func TestLoginRefusesAMismatchedIssuer(t *testing.T) {
	t.Parallel()
	for _, supported := range []bool{true, false} {
		as, stored, err := mixUp(t, supported, withIss("https://attacker.example"))
		if !errors.Is(err, ErrIssuerMismatch) {
			t.Errorf("advertised %v: Login = %v, want ErrIssuerMismatch", supported, err)
		}
		if stored || len(as.grants) != 0 {
			t.Errorf("advertised %v: token requests %q, stored %v: want the code never exchanged", supported, as.grants, stored)
		}
	}
}

// TestLoginRefusesAMissingIssuer: an authorization server that says it
// always names itself (authorization_response_iss_parameter_supported)
// and an answer that does not is someone else's answer.
func TestLoginRefusesAMissingIssuer(t *testing.T) {
	t.Parallel()
	as, stored, err := mixUp(t, true, withIss())
	if !errors.Is(err, ErrIssuerMismatch) {
		t.Errorf("Login = %v, want ErrIssuerMismatch", err)
	}
	if stored || len(as.grants) != 0 {
		t.Errorf("token requests %q, stored %v: want the code never exchanged", as.grants, stored)
	}
}

// TestLoginRefusesAnIssuerSpeltAnotherWay: the issuer is compared as a
// string (RFC 3986 §6.2.1), with none of the normalisations the
// 2026-07-28 authorization spec forbids: a trailing slash, case, percent
// encoding. A second iss is refused too, whichever comes first.
func TestLoginRefusesAnIssuerSpeltAnotherWay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		spell func(issuer string) []string
	}{
		{"a trailing slash", func(i string) []string { return []string{i + "/"} }},
		{"an upper-case scheme", func(i string) []string { return []string{"HTTP" + strings.TrimPrefix(i, "http")} }},
		{"a percent-encoded dot", func(i string) []string { return []string{strings.Replace(i, ".", "%2E", 1)} }},
		{"the issuer and another", func(i string) []string { return []string{i, "https://attacker.example"} }},
		{"another and the issuer", func(i string) []string { return []string{"https://attacker.example", i} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as, stored, err := mixUp(t, true, func(issuer, state string) url.Values {
				return withIss(tt.spell(issuer)...)(issuer, state)
			})
			if !errors.Is(err, ErrIssuerMismatch) {
				t.Errorf("Login = %v, want ErrIssuerMismatch", err)
			}
			if stored || len(as.grants) != 0 {
				t.Errorf("token requests %q, stored %v: want the code never exchanged", as.grants, stored)
			}
		})
	}
}

// TestMismatchedIssuerErrorIsNotShown: an error response from another
// authorization server is not acted on or shown (its description is the
// attacker's text), only the mismatch is.
func TestMismatchedIssuerErrorIsNotShown(t *testing.T) {
	t.Parallel()
	_, _, err := mixUp(t, false, func(_, state string) url.Values {
		return url.Values{"error": {"access_denied"}, "error_description": {"call +1 555 0100 to unlock"}, "state": {state}, "iss": {"https://attacker.example"}}
	})
	if !errors.Is(err, ErrIssuerMismatch) || strings.Contains(err.Error(), "555") {
		t.Errorf("Login = %v, want ErrIssuerMismatch without the error's description", err)
	}
}

func TestLoginTakesTheRightIssuerOrNoneWhereNoneIsPromised(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		supported bool
		answer    func(issuer, state string) url.Values
	}{
		{"the issuer, advertised", true, func(issuer, state string) url.Values { return withIss(issuer)(issuer, state) }},
		{"the issuer, not advertised", false, func(issuer, state string) url.Values { return withIss(issuer)(issuer, state) }},
		{"no issuer, not advertised", false, withIss()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, stored, err := mixUp(t, tt.supported, tt.answer); err != nil || !stored {
				t.Errorf("Login = %v (stored %v), want a token", err, stored)
			}
		})
	}
}

// FuzzIssuerCheckTakesOnlyTheExactIssuer parses the query of any
// redirect to the loopback listener: it is taken only when it names the
// issuer exactly once, or names none where none is required.
func FuzzIssuerCheckTakesOnlyTheExactIssuer(f *testing.F) {
	const issuer = "https://as.example/tenant"
	f.Add("code=c&state=s&iss=https%3A%2F%2Fas.example%2Ftenant", true)
	f.Add("code=c&state=s&iss=https%3A%2F%2Fas.example%2Ftenant%2F", true)
	f.Add("code=c&state=s&iss=https%3A%2F%2FAS.example%2Ftenant&iss=https%3A%2F%2Fas.example%2Ftenant", false)
	f.Add("error=access_denied&state=s", true)
	f.Add("code=c;iss=x&state=s", false)
	f.Fuzz(func(t *testing.T, raw string, required bool) {
		q, _ := url.ParseQuery(raw)
		err := issuerCheck{issuer: issuer, required: required}.check(q)
		iss, present := q["iss"]
		want := (present && len(iss) == 1 && iss[0] == issuer) || (!present && !required)
		if (err == nil) != want {
			t.Fatalf("check(%q, required %v) = %v, want taken %v", raw, required, err, want)
		}
		if err != nil && !errors.Is(err, ErrIssuerMismatch) {
			t.Fatalf("check(%q) = %v, want ErrIssuerMismatch", raw, err)
		}
	})
}
