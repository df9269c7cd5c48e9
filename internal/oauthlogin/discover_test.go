package oauthlogin

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
	"github.com/mcpwarden/mcpwarden/internal/wwwauth"
)

func TestAdvertisedMetadataOnAnotherOriginIsNotRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, advertised string
		want             []string
	}{
		{"on the server's origin", "https://mcp.example/meta",
			[]string{"https://mcp.example/meta", "https://mcp.example/.well-known/oauth-protected-resource/mcp", "https://mcp.example/.well-known/oauth-protected-resource"}},
		{"on another host", "https://evil.example/meta",
			[]string{"https://mcp.example/.well-known/oauth-protected-resource/mcp", "https://mcp.example/.well-known/oauth-protected-resource"}},
		{"over another scheme", "http://mcp.example/meta",
			[]string{"https://mcp.example/.well-known/oauth-protected-resource/mcp", "https://mcp.example/.well-known/oauth-protected-resource"}},
		{"on another port", "https://mcp.example:8443/meta",
			[]string{"https://mcp.example/.well-known/oauth-protected-resource/mcp", "https://mcp.example/.well-known/oauth-protected-resource"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := resourceMetadataURLs("https://mcp.example/mcp", tt.advertised); !slices.Equal(got, tt.want) {
				t.Errorf("resourceMetadataURLs = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScopeIsTheChallengesElseTheResourcesElseNone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		challenge string
		supported []string
		stepUp    []string
		want      []string
	}{
		{"the challenge's scope first", "mcp:basic", []string{"a", "b"}, nil, []string{"mcp:basic"}},
		{"else every scope supported", "", []string{"a", "b"}, nil, []string{"a", "b"}},
		{"else none", "", nil, nil, nil},
		{"a step-up adds what is missing", "mcp:basic", nil, []string{"mcp:basic", "mcp:write"}, []string{"mcp:basic", "mcp:write"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := withScopes(chooseScopes(wwwauth.Challenge{Scope: tt.challenge}, resource{found: true, scopesSupported: tt.supported}), tt.stepUp)
			if !slices.Equal(got, tt.want) {
				t.Errorf("scopes = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRootMetadataNamingAnotherResourceGetsNoToken(t *testing.T) {
	t.Parallel()
	// The evil server has no metadata under its path and no pointer in its
	// 401; its root metadata names another server as the resource, so that
	// a token for that server would be minted and sent to the evil one.
	victim := startStandInAS(t, false, false)
	mux := http.NewServeMux()
	evil := httptest.NewServer(mux)
	t.Cleanup(evil.Close)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"resource": victim.URL, "authorization_servers": []string{victim.issuer}})
	})
	store := newStore(t)
	r := victim.request(t, store)
	r.URL = evil.URL + "/mcp"
	_, _, err := Login(t.Context(), r)
	t.Logf("login: %v", err)
	if err == nil {
		t.Fatal("login to a server whose root metadata names another resource succeeded")
	}
	if len(victim.authIDs) != 0 {
		t.Errorf("an authorization was asked for at the victim's server by %q", victim.authIDs)
	}
	if tok, ok, _ := store.Get(t.Context(), "remote"); ok && tok.AccessToken != "" {
		t.Errorf("a token was stored: %+v", tok)
	}
}

func TestRootMetadataOfTheServersOriginSignsIn(t *testing.T) {
	t.Parallel()
	// A server at a path whose metadata is only at the root well-known
	// URL, naming its origin as the resource (RFC 9728 §3.1), as the
	// conformance suite's auth/metadata-var2 has it.
	as := startStandInAS(t, false, false)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"resource": srv.URL, "authorization_servers": []string{as.issuer}})
	})
	r := as.request(t, newStore(t))
	r.URL = srv.URL + "/mcp"
	shown := ""
	r.Show = func(u string) error { shown = u; return follow(t)(u) }
	if _, _, err := Login(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if q := mustQuery(t, shown); q.Get("resource") != srv.URL {
		t.Errorf("asked for resource %q, want the origin the metadata declares, %q", q.Get("resource"), srv.URL)
	}
}

func TestGrantedScopesAreKeptOnlyByAStepUp(t *testing.T) {
	t.Parallel()
	const url = "https://mcp.example/mcp"
	tests := []struct {
		name string
		prev tokenstore.Token
		want []string
	}{
		{"no step-up: the config's scopes alone", tokenstore.Token{Scope: "a wide", Resource: url}, []string{"a"}},
		{"a step-up: granted and wanted too", tokenstore.Token{Scope: "a b", StepUpScope: "c", Resource: url}, []string{"a", "b", "c"}},
		{"a step-up after a token for another URL: not its scopes", tokenstore.Token{Scope: "b", StepUpScope: "c", Resource: "https://other.example/mcp"}, []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := stepUpScopes([]string{"a"}, tt.prev, url); !slices.Equal(got, tt.want) {
				t.Errorf("stepUpScopes = %q, want %q", got, tt.want)
			}
		})
	}
}
