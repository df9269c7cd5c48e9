package oauthlogin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestLegacyServerRegistersWhereItsRootMetadataSays is a 2025-03-26
// server: no protected resource metadata, the authorization base URL is
// the server's URL with its path removed, and the authorization server
// metadata found there names the endpoints (here under /oauth), which
// the login must use rather than the defaults (/register …).
func TestLegacyServerRegistersWhereItsRootMetadataSays(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var hits []string
	mux := http.NewServeMux()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.Method+" "+r.URL.Path)
		mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": ts.URL, "authorization_endpoint": ts.URL + "/oauth/authorize", "token_endpoint": ts.URL + "/oauth/token",
			"registration_endpoint": ts.URL + "/oauth/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("POST /oauth/register", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"client_id": "legacy-client"})
	})
	mux.HandleFunc("/oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=c&state="+q.Get("state"), http.StatusFound)
	})
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"access_token": "legacy-token", "token_type": "Bearer", "expires_in": 3600})
	})

	store := newStore(t)
	tok, c, err := Login(t.Context(), Request{Server: "remote", URL: ts.URL + "/mcp", Store: store, Show: follow(t)})
	if err != nil {
		t.Fatalf("Login = %v; requests: %q", err, hits)
	}
	if c.ID != "legacy-client" || tok.AccessToken != "legacy-token" || tok.Issuer != ts.URL {
		t.Errorf("login used %+v and stored %+v, want the client and token of the root metadata's endpoints", c, tok)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range hits {
		if h == "POST /register" || h == "POST /token" || strings.HasPrefix(h, "GET /authorize") {
			t.Errorf("request %q went to a default endpoint, though the root metadata names its own", h)
		}
	}
}
