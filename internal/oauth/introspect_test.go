package oauth

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testop"
)

const secretEnv = "TEST_INTROSPECTION_SECRET"

// introspecting sets c to introspect at p as testop.ClientIntrospector.
func introspecting(p *testop.Provider) func(*Config) {
	return func(c *Config) {
		c.Introspection = &Introspection{URL: p.IntrospectionURL(), ClientID: testop.ClientIntrospector.ID, ClientSecretEnv: secretEnv}
	}
}

func getenv(secret string) func(string) string {
	return func(name string) string {
		if name == secretEnv {
			return secret
		}
		return ""
	}
}

func TestOpaqueTokenIsIntrospected(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	counter := &countingTransport{part: "introspect"}
	clock := newClock()
	v := newVerifier(t, p, &Options{Getenv: getenv(testop.ClientIntrospector.Secret), HTTPClient: &http.Client{Transport: counter}, Now: clock.now}, introspecting(p))
	tok := token(t, p, testop.Bob.ID, testop.ClientOpaque)
	got, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject != "bob" || got.Email != "bob@corp.example" || !slices.Equal(got.Groups, []string{"ops"}) {
		t.Errorf("identity = %+v, want bob in ops", got)
	}
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	if n := counter.n.Load(); n != 1 {
		t.Errorf("introspected %d times for two uses of a token, want 1 (cached)", n)
	}
	clock.advance(maxIntrospectionTTL + time.Second)
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	if n := counter.n.Load(); n != 2 {
		t.Errorf("introspected %d times, want the answer asked again after maxIntrospectionTTL", n)
	}
}

func TestForgedOpaqueTokenIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, &Options{Getenv: getenv(testop.ClientIntrospector.Secret)}, introspecting(p))
	real := token(t, p, testop.Bob.ID, testop.ClientOpaque)
	for _, forged := range []string{"not-a-token", strings.ToUpper(real), real[:len(real)-2]} {
		_, err := v.Verify(t.Context(), forged)
		wantRefused(t, err, CodeInvalidToken)
	}
}

func TestOpaqueTokenForAnotherResourceIsRefused(t *testing.T) {
	t.Parallel()
	other := testop.Client{ID: "other-opaque", Secret: "s", Audience: []string{testop.OtherResource}, Opaque: true}
	p := testop.Start(t, &testop.Options{Clients: []testop.Client{other}})
	v := newVerifier(t, p, &Options{Getenv: getenv(testop.ClientIntrospector.Secret)}, introspecting(p))
	_, err := v.Verify(t.Context(), token(t, p, testop.Alice.ID, other))
	wantRefused(t, err, CodeInvalidToken)
}

func TestOpaqueTokenWithoutIntrospectionIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	_, err := v.Verify(t.Context(), token(t, p, testop.Bob.ID, testop.ClientOpaque))
	wantRefused(t, err, CodeInvalidToken)
}

func TestIntrospectionWithAWrongSecretRefusesTokens(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, &Options{Getenv: getenv("wrong")}, introspecting(p))
	_, err := v.Verify(t.Context(), token(t, p, testop.Bob.ID, testop.ClientOpaque))
	wantRefused(t, err, CodeInvalidToken)
}

func TestIntrospectionSecretMustBeSet(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	cfg := Config{Issuer: p.Issuer, Audience: testop.Resource}
	introspecting(p)(&cfg)
	_, err := New(cfg, &Options{Getenv: getenv("")})
	if err == nil || !strings.Contains(err.Error(), "auth.oauth.introspection.client_secret_env") || !strings.Contains(err.Error(), secretEnv) {
		t.Errorf("err = %v, want one naming the key and the variable", err)
	}
}

func TestTokenWithoutRequiredScopeGetsInsufficientScope(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, func(c *Config) { c.RequiredScopes = []string{"mcp:tools"} })
	_, err := v.Verify(t.Context(), token(t, p, testop.Alice.ID, testop.ClientJWT))
	wantRefused(t, err, CodeInsufficientScope)
	c := NewChallenge(err, "https://m/.well-known/oauth-protected-resource", v.RequiredScopes())
	if !strings.Contains(c.Header, `scope="mcp:tools"`) {
		t.Errorf("WWW-Authenticate = %s, want the scope hint", c.Header)
	}
	got, err := v.Verify(t.Context(), token(t, p, testop.Alice.ID, testop.ClientJWT, "mcp:tools"))
	if err != nil {
		t.Fatalf("token with the scope: %v", err)
	}
	if !slices.Contains(got.Scopes, "mcp:tools") {
		t.Errorf("scopes = %v", got.Scopes)
	}
}

func TestIntrospectionRedirectDoesNotCarryTheTokenElsewhere(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	var leaked atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"active":true,"sub":"mallory","aud":"` + testop.Resource + `","exp":4102444800}`))
	}))
	t.Cleanup(sink.Close)
	redirector := httptest.NewServer(http.RedirectHandler(sink.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirector.Close)
	v := newVerifier(t, p, &Options{Getenv: getenv(testop.ClientIntrospector.Secret)}, func(c *Config) {
		introspecting(p)(c)
		c.Introspection.URL = redirector.URL
	})
	_, err := v.Verify(t.Context(), token(t, p, testop.Bob.ID, testop.ClientOpaque))
	wantRefused(t, err, CodeInvalidToken)
	if n := leaked.Load(); n != 0 {
		t.Errorf("the token followed the redirect %d times", n)
	}
}
