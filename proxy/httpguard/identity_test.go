package httpguard

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/oauth"
	"github.com/mcpwarden/mcpwarden/internal/testop"
)

// TestTokenDoesNotReachTheHandler: whichever way a request is admitted,
// the client's bearer token is removed before the MCP handler (and so any
// upstream) sees the request.
func TestTokenDoesNotReachTheHandler(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v, err := oauth.New(oauth.Config{Issuer: p.Issuer, Audience: testop.Resource}, &oauth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := oauth.NewMatcher(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	jwt, err := p.Token(t.Context(), testop.Alice.ID, testop.ClientJWT)
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{Token: "static-secret", OAuth: oauth.Guard{Verifier: v, Matcher: m}}
	for name, token := range map[string]string{"a static token": "static-secret", "an OAuth access token": jwt} {
		t.Run(name, func(t *testing.T) {
			var seen *http.Request
			h := id.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r }))
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if seen == nil {
				t.Fatalf("refused: %d %s", rec.Code, rec.Body)
			}
			if got := seen.Header.Get("Authorization"); got != "" {
				t.Errorf("the handler got Authorization %q", got)
			}
		})
	}
}
