package oauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpwarden/mcpwarden/internal/testop"
)

// newVerifier builds a Verifier for the provider's tokens meant for
// testop.Resource, with change applied to its config.
func newVerifier(t *testing.T, p *testop.Provider, opts *Options, change func(*Config)) *Verifier {
	t.Helper()
	cfg := Config{Issuer: p.Issuer, Audience: testop.Resource}
	if change != nil {
		change(&cfg)
	}
	v, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func token(t *testing.T, p *testop.Provider, user string, c testop.Client, scopes ...string) string {
	t.Helper()
	tok, err := p.Token(t.Context(), user, c, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// wantRefused checks that err is a refusal with code, answered with status
// and a WWW-Authenticate naming the error and the metadata.
func wantRefused(t *testing.T, err error, code ErrorCode) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want an *Error with code %q", err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %q (%v), want %q", e.Code, err, code)
	}
	const meta = "https://mcpwarden.test/.well-known/oauth-protected-resource/mcp"
	c := NewChallenge(err, meta, nil)
	if c.Status != code.Status() {
		t.Errorf("status = %d, want %d", c.Status, code.Status())
	}
	if want := `error="` + string(code) + `"`; code != CodeNone && !strings.Contains(c.Header, want) {
		t.Errorf("WWW-Authenticate = %s, want it to hold %s", c.Header, want)
	}
	if !strings.HasPrefix(c.Header, `Bearer resource_metadata="`+meta+`"`) {
		t.Errorf("WWW-Authenticate = %s, want it to point at the metadata", c.Header)
	}
}

func TestAliceTokenVerifiesToHerIdentityAndGroups(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	got, err := v.Verify(t.Context(), token(t, p, testop.Alice.ID, testop.ClientJWT))
	if err != nil {
		t.Fatal(err)
	}
	want := Identity{Issuer: p.Issuer, Subject: "alice", Email: "alice@corp.example", Groups: []string{"eng"}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Identity{}, "Expiry", "Scopes")); diff != "" {
		t.Errorf("identity (-want +got):\n%s", diff)
	}
	if time.Until(got.Expiry) < 50*time.Minute {
		t.Errorf("expiry = %v, want about an hour from now", got.Expiry)
	}
	host := strings.TrimPrefix(p.Issuer, "http://")
	if got, want := got.Principal(), "oidc:"+host+":alice"; got != want {
		t.Errorf("principal = %q, want %q", got, want)
	}
}

func TestBobTokenVerifiesToHisGroups(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	got, err := v.Verify(t.Context(), token(t, p, testop.Bob.ID, testop.ClientJWT))
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject != "bob" || !slices.Equal(got.Groups, []string{"ops"}) {
		t.Errorf("identity = %+v, want bob in ops", got)
	}
}

func TestExplicitJWKSURLNeedsNoDiscovery(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, func(c *Config) { c.JWKSURL = p.KeysURL() })
	if _, err := v.Verify(t.Context(), token(t, p, testop.Alice.ID, testop.ClientJWT)); err != nil {
		t.Fatal(err)
	}
}

func TestExpiredTokenIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, &testop.Options{Lifetime: time.Minute})
	tok := token(t, p, testop.Alice.ID, testop.ClientJWT)
	// Each instant is relative to the token's own exp, not to when a
	// subtest happens to run: on a loaded machine a parallel subtest may
	// start many seconds after the token was minted.
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal([]byte(unb64(t, segments(t, tok)[1])), &claims); err != nil || claims.Exp == 0 {
		t.Fatalf("the token's exp: %v", err)
	}
	exp := time.Unix(claims.Exp, 0)
	tests := []struct {
		name  string
		after time.Duration // after exp
		ok    bool
	}{
		{"A token within its life is accepted.", -30 * time.Second, true},
		{"A token just expired is accepted within the leeway.", DefaultLeeway / 2, true},
		{"A token expired beyond the leeway is refused.", DefaultLeeway + 2*time.Second, false},
		{"A token expired long ago is refused.", 24 * time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			at := exp.Add(tt.after)
			v := newVerifier(t, p, &Options{Now: func() time.Time { return at }}, nil)
			_, err := v.Verify(t.Context(), tok)
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantRefused(t, err, CodeInvalidToken)
		})
	}
}

func TestTokenUsedBeforeItsTimeIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	tok := token(t, p, testop.Alice.ID, testop.ClientJWT)
	at := time.Now().Add(-time.Hour)
	v := newVerifier(t, p, &Options{Now: func() time.Time { return at }}, nil)
	_, err := v.Verify(t.Context(), tok)
	wantRefused(t, err, CodeInvalidToken)
}

func TestTokenForAnotherResourceIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	_, err := v.Verify(t.Context(), token(t, p, testop.Alice.ID, testop.ClientOther))
	wantRefused(t, err, CodeInvalidToken)
}

func TestIDTokenIsNotAnAccessToken(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	tok, err := p.Login(t.Context(), testop.Alice.ID, testop.ClientJWT)
	if err != nil {
		t.Fatal(err)
	}
	idToken, _ := tok.Extra("id_token").(string)
	if idToken == "" {
		t.Fatal("no id_token")
	}
	_, err = v.Verify(t.Context(), idToken)
	wantRefused(t, err, CodeInvalidToken)
}

func TestTokenFromAnotherIssuerIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	other := testop.Start(t, nil)
	tok := token(t, other, testop.Alice.ID, testop.ClientJWT)
	tests := []struct {
		name   string
		change func(*Config)
	}{
		{"A verifier of the issuer refuses the other's token.", nil},
		{"A verifier given the other issuer's keys still refuses its iss.", func(c *Config) { c.JWKSURL = other.KeysURL() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newVerifier(t, p, nil, tt.change)
			_, err := v.Verify(t.Context(), tok)
			wantRefused(t, err, CodeInvalidToken)
		})
	}
}

// segments splits a JWS and returns a function that joins it back with
// some parts replaced.
func segments(t *testing.T, tok string) [3]string {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a compact JWS", tok)
	}
	return [3]string(parts)
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func unb64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTamperedTokenIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	tok := token(t, p, testop.Alice.ID, testop.ClientJWT)
	s := segments(t, tok)
	payload := unb64(t, s[1])
	sig := []byte(s[2])
	sig[10] ^= 0x01
	if sig[10] == '.' || sig[10] == '=' {
		sig[10] = 'A'
	}
	tests := []struct {
		name  string
		token string
	}{
		{"A flipped bit in the signature is refused.", s[0] + "." + s[1] + "." + string(sig)},
		{"Alice's token made out to bob is refused.", s[0] + "." + b64(strings.Replace(payload, `"sub":"alice"`, `"sub":"bob"`, 1)) + "." + s[2]},
		{"Alice's token with ops added to her groups is refused.", s[0] + "." + b64(strings.Replace(payload, `"groups":["eng"]`, `"groups":["eng","ops"]`, 1)) + "." + s[2]},
		{"A token without its signature is refused.", s[0] + "." + s[1] + "."},
		{"A token with a second, unsigned payload appended is refused.", tok + "." + s[1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.token == tok {
				t.Fatal("the tampering changed nothing")
			}
			_, err := v.Verify(t.Context(), tt.token)
			wantRefused(t, err, CodeInvalidToken)
		})
	}
}

func TestAlgNoneIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	s := segments(t, token(t, p, testop.Alice.ID, testop.ClientJWT))
	for _, header := range []string{`{"alg":"none"}`, `{"alg":"none","kid":"key1"}`, `{"alg":"None","kid":"key1"}`, `{"alg":"","kid":"key1"}`} {
		t.Run(header, func(t *testing.T) {
			t.Parallel()
			for _, sig := range []string{"", s[2]} {
				_, err := v.Verify(t.Context(), b64(header)+"."+s[1]+"."+sig)
				wantRefused(t, err, CodeInvalidToken)
			}
		})
	}
}

func TestKeyRotationIsFollowed(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	clock := newClock()
	v := newVerifier(t, p, &Options{Now: clock.now}, nil)
	before := token(t, p, testop.Alice.ID, testop.ClientJWT)
	if _, err := v.Verify(t.Context(), before); err != nil {
		t.Fatal(err)
	}
	if err := p.RotateKey(false); err != nil {
		t.Fatal(err)
	}
	after := token(t, p, testop.Bob.ID, testop.ClientJWT)
	if segments(t, after)[0] == segments(t, before)[0] {
		t.Fatal("the rotation did not change the signing key")
	}
	// A token naming a new key has the keys fetched again, once
	// minRefetch has passed since the last fetch.
	clock.advance(minRefetch + time.Second)
	if _, err := v.Verify(t.Context(), after); err != nil {
		t.Fatalf("token signed by the new key: %v", err)
	}
	if _, err := v.Verify(t.Context(), before); err != nil {
		t.Fatalf("token signed by the old key, still published: %v", err)
	}
}

// A clock is a settable clock for a verifier.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }
