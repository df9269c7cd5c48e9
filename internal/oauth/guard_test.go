package oauth

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testop"
)

// guarded serves, behind a Guard for p's tokens, a handler that answers
// with the caller's principal and profile and whether it saw a token.
func guarded(t *testing.T, p *testop.Provider, opts *Options) *httptest.Server {
	t.Helper()
	v := newVerifier(t, p, opts, nil)
	m, err := NewMatcher([]ProfileMatch{
		{"eng", Match{Groups: []string{"eng"}}},
		{"ops", Match{Groups: []string{"ops"}}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := CallerFrom(r.Context())
		fmt.Fprintf(w, "%s %s %v %q", c.Identity.Principal(), c.Profile, ok, r.Header.Get("Authorization"))
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", Guard{Verifier: v, Matcher: m}.Wrap(next))
	mux.Handle(v.MetadataPath(), MetadataHandler(v.Metadata()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestGuardAdmitsEachUserWithTheirProfile(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	srv := guarded(t, p, nil)
	host := strings.TrimPrefix(p.Issuer, "http://")
	for _, tt := range []struct{ user, want string }{
		{testop.Alice.ID, "oidc:" + host + ":alice eng true \"\""},
		{testop.Bob.ID, "oidc:" + host + ":bob ops true \"\""},
	} {
		resp, body := post(t, srv.URL+"/mcp", token(t, p, tt.user, testop.ClientJWT))
		if resp.StatusCode != 200 || body != tt.want {
			t.Errorf("%s: got %d %s, want 200 %s (the handler never sees the token)", tt.user, resp.StatusCode, body, tt.want)
		}
	}
}

func TestGuardRefusesBadTokensWithAChallenge(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, &testop.Options{Lifetime: time.Second})
	other := testop.Start(t, nil)
	srv := guarded(t, p, &Options{Leeway: time.Nanosecond})
	expired := token(t, p, testop.Alice.ID, testop.ClientJWT)
	s := segments(t, token(t, p, testop.Alice.ID, testop.ClientJWT))
	tests := []struct {
		name, token, wantErr string
	}{
		{"A request without a token is told where the metadata is.", "", ""},
		{"An expired token is refused.", expired, "invalid_token"},
		{"A token for another resource is refused.", token(t, p, testop.Alice.ID, testop.ClientOther), "invalid_token"},
		{"A token from another issuer is refused.", token(t, other, testop.Alice.ID, testop.ClientJWT), "invalid_token"},
		{"A tampered token is refused.", s[0] + "." + b64(strings.Replace(unb64(t, s[1]), "alice", "bob", 1)) + "." + s[2], "invalid_token"},
	}
	time.Sleep(2 * time.Second) // the first token expires
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, _ := post(t, srv.URL+"/mcp", tt.token)
			h := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(h, `Bearer resource_metadata="https://mcpwarden.test/.well-known/oauth-protected-resource/mcp"`) {
				t.Fatalf("got %d %q, want 401 pointing at the metadata", resp.StatusCode, h)
			}
			if tt.wantErr == "" && strings.Contains(h, "error=") || tt.wantErr != "" && !strings.Contains(h, `error="`+tt.wantErr+`"`) {
				t.Errorf("WWW-Authenticate = %s, want error %q", h, tt.wantErr)
			}
		})
	}
}

func TestGuardRefusesAUserNoProfileMatches(t *testing.T) {
	t.Parallel()
	carol := testop.User{ID: "carol", Email: "carol@corp.example", EmailVerified: true, Groups: []string{"sales"}}
	p := testop.Start(t, &testop.Options{Users: []testop.User{carol}})
	srv := guarded(t, p, nil)
	resp, body := post(t, srv.URL+"/mcp", token(t, p, carol.ID, testop.ClientJWT))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, ":carol") {
		t.Errorf("got %d %s, want 403 naming carol", resp.StatusCode, body)
	}
}

func TestMetadataIsServedAtTheWellKnownPath(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	srv := guarded(t, p, nil)
	resp, err := http.Get(srv.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"authorization_servers":["`+p.Issuer+`"]`) {
		t.Errorf("got %d %s", resp.StatusCode, body)
	}
}
