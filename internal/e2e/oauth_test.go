package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/oauth"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/internal/testop"
)

// oauthFixture is the standard world behind an OAuth listener: the test
// provider's eng group gets the everything profile, ops the fs profile.
// opts configures the provider (nil: the defaults).
func oauthFixture(t *testing.T, opts *testop.Options) (*fixture, *testop.Provider, string) {
	t.Helper()
	p := testop.Start(t, opts)
	f := standardFixture(t, testkit.FreeAddr(t))
	f.appendConfig(t, fmt.Sprintf(`auth:
  oauth:
    issuer: %q
    audience: %q
profiles:
  eng:
    servers: [everything]
    match: {groups: [eng]}
  ops:
    servers: [fs]
    match: {groups: [ops]}
`, p.Issuer, testop.Resource))
	url, _ := startHTTP(t, f)
	return f, p, url
}

func TestOAuthUsersSeeAndCallOnlyTheirProfile(t *testing.T) {
	t.Parallel()
	f, p, url := oauthFixture(t, nil)
	aliceToken, err := p.Token(t.Context(), testop.Alice.ID, testop.ClientJWT)
	if err != nil {
		t.Fatal(err)
	}
	bobToken, err := p.Token(t.Context(), testop.Bob.ID, testop.ClientJWT)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := connectHTTPWithToken(t, url, aliceToken), connectHTTPWithToken(t, url, bobToken)
	aliceTools, bobTools := toolNames(t, alice), toolNames(t, bob)
	if !slices.Contains(aliceTools, "everything__echo") || slices.ContainsFunc(aliceTools, func(n string) bool { return strings.HasPrefix(n, "fs__") }) {
		t.Errorf("alice (eng) sees %v, want everything's tools only", aliceTools)
	}
	if !slices.Contains(bobTools, "fs__list_allowed_directories") || slices.Contains(bobTools, "everything__echo") {
		t.Errorf("bob (ops) sees %v, want fs's tools only", bobTools)
	}
	if res := callTool(t, alice, "everything__echo", map[string]any{"message": "hi"}); res.IsError {
		t.Errorf("alice's echo refused: %s", testkit.Text(res))
	}
	if res, err := bob.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "hi"}}}); err == nil && !res.IsError {
		t.Error("bob called a tool of alice's profile")
	}

	principals := map[string]string{}
	for _, e := range readAudit(t, f.auditPath, "decision") {
		if e.Tool == "mcp:everything:echo" {
			principals[e.Profile] = e.Principal
		}
	}
	for profile, user := range map[string]string{"eng": testop.Alice.ID, "ops": testop.Bob.ID} {
		if got := principals[profile]; !strings.HasPrefix(got, "oidc:") || !strings.HasSuffix(got, ":"+user) {
			t.Errorf("the %s decision names principal %q, want oidc:<issuer host>:%s", profile, got, user)
		}
	}
}

// TestOAuthRefusesBadTokensWithAChallenge sends bad tokens to the real
// binary (an expired one: TestOAuthRefusesAnExpiredTokenWithAChallenge).
func TestOAuthRefusesBadTokensWithAChallenge(t *testing.T) {
	t.Parallel()
	_, p, url := oauthFixture(t, nil)
	good, err := p.Token(t.Context(), testop.Alice.ID, testop.ClientJWT)
	if err != nil {
		t.Fatal(err)
	}
	other, err := p.Token(t.Context(), testop.Alice.ID, testop.ClientOther)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := testop.Start(t, nil).Token(t.Context(), testop.Alice.ID, testop.ClientJWT)
	if err != nil {
		t.Fatal(err)
	}
	tampered := good[:len(good)-4] + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, good[len(good)-4:])
	tests := []struct {
		name, token string
		wantError   string
	}{
		{"no token", "", ""},
		{"a token for another resource", other, "invalid_token"},
		{"a tampered token", tampered, "invalid_token"},
		{"a token from another issuer", foreign, "invalid_token"},
		{"not a token at all", "hello", "invalid_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantChallenge(t, postPing(t, url, tt.token), tt.wantError)
		})
	}
}

// TestOAuthRefusesAnExpiredTokenWithAChallenge takes a token from a
// provider whose tokens live two seconds, sees it accepted, and sees it
// refused once it has expired past the verifier's leeway for clock skew.
func TestOAuthRefusesAnExpiredTokenWithAChallenge(t *testing.T) {
	t.Parallel()
	const lifetime = 2 * time.Second
	_, p, url := oauthFixture(t, &testop.Options{Lifetime: lifetime})
	token, err := p.Token(t.Context(), testop.Alice.ID, testop.ClientJWT)
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(lifetime)
	if resp := postPing(t, url, token); resp.StatusCode == http.StatusUnauthorized {
		t.Fatalf("a fresh token got 401 (%s)", resp.Header.Get("WWW-Authenticate"))
	}
	time.Sleep(time.Until(expires.Add(oauth.DefaultLeeway + time.Second)))
	wantChallenge(t, postPing(t, url, token), "invalid_token")
}

// wantChallenge fails t unless resp is a 401 whose Bearer challenge points
// to the protected resource metadata and carries wantError (none if "").
func wantChallenge(t *testing.T, resp *http.Response, wantError string) {
	t.Helper()
	const metadataURL = "https://mcpwarden.test/.well-known/oauth-protected-resource/mcp"
	challenge := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", resp.StatusCode)
	}
	if !strings.Contains(challenge, `resource_metadata="`+metadataURL+`"`) {
		t.Errorf("WWW-Authenticate %q does not point to %s", challenge, metadataURL)
	}
	if hasError := strings.Contains(challenge, "error="); (wantError == "") == hasError || !strings.Contains(challenge, wantError) {
		t.Errorf("WWW-Authenticate %q, want error %q", challenge, wantError)
	}
}

func TestOAuthMetadataIsServedWithoutAToken(t *testing.T) {
	t.Parallel()
	_, p, url := oauthFixture(t, nil)
	metadata := strings.TrimSuffix(url, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
	resp, err := http.Get(metadata)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", metadata, resp.StatusCode, err)
	}
	if doc.Resource != testop.Resource || !slices.Equal(doc.AuthorizationServers, []string{p.Issuer}) {
		t.Errorf("metadata %+v, want resource %s served by %s", doc, testop.Resource, p.Issuer)
	}
}

// postPing sends a ping to url with token (none if "") and returns the
// response, closed.
func postPing(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}
