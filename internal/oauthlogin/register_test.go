package oauthlogin

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A standInAS is a protected MCP endpoint (/mcp, which only answers 401)
// with its own authorization server on the same origin, for what the test
// provider does not do: dynamic client registration and client ID
// metadata documents. It redirects at once from /authorize.
type standInAS struct {
	URL    string // the MCP endpoint
	issuer string
	cimd   bool // advertises client_id_metadata_document_supported
	noDCR  bool // offers no registration endpoint
	// issSupported advertises authorization_response_iss_parameter_supported;
	// answer, when set, makes the query of /authorize's redirect from the
	// issuer and the redirect's state (by default a code, the state and no
	// iss). Both are set before the login starts.
	issSupported bool
	answer       func(issuer, state string) url.Values
	// refuseRegistration, when set, is /register's 400 answer.
	refuseRegistration string
	mu                 sync.Mutex
	movedTo            string           // when set, the authorization server the resource metadata names instead
	reg                int              // registrations
	regs               []map[string]any // the registration requests' bodies
	authIDs            []string         // client_ids of the authorization requests
	authScopes         []string         // scopes of the authorization requests
	basic              []string         // client_ids sent with HTTP Basic to /token ("" without)
	grants             []string         // grant types asked of /token
}

func startStandInAS(t *testing.T, cimd, noDCR bool) *standInAS {
	t.Helper()
	s := &standInAS{cimd: cimd, noDCR: noDCR}
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	s.issuer, s.URL = ts.URL, ts.URL+"/mcp"
	prm := ts.URL + "/.well-known/oauth-protected-resource/mcp"
	mcp := mcpserver.NewStreamableHTTPServer(mcpserver.NewMCPServer("stand-in", "1"))
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer issued-token") {
			mcp.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+prm+`"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		as := cmp.Or(s.movedTo, s.issuer)
		s.mu.Unlock()
		writeJSON(w, map[string]any{"resource": s.URL, "authorization_servers": []string{as}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		md := map[string]any{
			"issuer": s.issuer, "authorization_endpoint": s.issuer + "/authorize", "token_endpoint": s.issuer + "/token",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"client_id_metadata_document_supported":          s.cimd,
			"authorization_response_iss_parameter_supported": s.issSupported,
		}
		if !s.noDCR {
			md["registration_endpoint"] = s.issuer + "/register"
		}
		writeJSON(w, md)
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		if s.refuseRegistration != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(s.refuseRegistration))
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.regs = append(s.regs, body)
		s.reg++
		n := s.reg
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, map[string]any{"client_id": fmt.Sprintf("registered-%d", n), "client_secret": "registered-secret", "token_endpoint_auth_method": "client_secret_basic"})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		s.mu.Lock()
		s.authIDs = append(s.authIDs, q.Get("client_id"))
		s.authScopes = append(s.authScopes, q.Get("scope"))
		s.mu.Unlock()
		answer := url.Values{"code": {"c"}, "state": {q.Get("state")}}
		if s.answer != nil {
			answer = s.answer(s.issuer, q.Get("state"))
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+answer.Encode(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		id, _, _ := r.BasicAuth()
		s.mu.Lock()
		s.basic = append(s.basic, id)
		s.grants = append(s.grants, r.FormValue("grant_type"))
		n := len(s.grants)
		s.mu.Unlock()
		// Tokens that live less than tokenstore.RefreshAhead: each is
		// refreshed before its first use.
		writeJSON(w, map[string]any{"access_token": fmt.Sprintf("issued-token-%d", n), "token_type": "Bearer", "expires_in": 30, "refresh_token": "refresh"})
	})
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// follow opens the authorization URL as a browser would.
func follow(t *testing.T) func(string) error {
	return func(u string) error {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
}

func (s *standInAS) request(t *testing.T, store *tokenstore.Store) Request {
	return Request{Server: "remote", URL: s.URL, Store: store, Show: follow(t)}
}

func TestLoginWithoutAClientRegistersOneAndReusesIt(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, false)
	store := newStore(t)
	for i, want := range []ClientOrigin{ClientRegisteredNow, ClientRegisteredEarlier} {
		_, got, err := Login(t.Context(), as.request(t, store))
		if err != nil {
			t.Fatalf("login %d: %v", i+1, err)
		}
		if got.How != want || got.ID != "registered-1" {
			t.Errorf("login %d used %+v, want registered-1 (%v)", i+1, got, want)
		}
	}
	if as.reg != 1 {
		t.Errorf("%d registrations, want 1: the second login reuses the client", as.reg)
	}
	if len(as.basic) != 2 || as.basic[1] != "registered-1" {
		t.Errorf("token requests with HTTP Basic by %q, want both by the registered client as it registered", as.basic)
	}
	tok, _, err := store.Get(t.Context(), "remote")
	if err != nil || tok.Client == nil || tok.Client.Issuer != as.issuer || tok.Client.AuthMethod != "client_secret_basic" {
		t.Fatalf("stored %+v, %v: want the registration, with its issuer and method", tok.Client, err)
	}
}

func TestRegisteredClientSecretIsNotStoredInTheClear(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, false)
	store := newStore(t)
	if _, _, err := Login(t.Context(), as.request(t, store)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(store.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"registered-secret", "registered-1", "issued-token-1"} {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("the token file holds %q in the clear", s)
		}
	}
}

func TestRegistrationAtAnotherIssuerIsNotReused(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, false)
	store := newStore(t)
	// A client registered at another authorization server, as if the
	// server moved or the entry was planted: its credentials must not be
	// sent to this one.
	tokens := &tokenstore.ServerTokens{Store: store, Server: "remote", Resource: as.URL}
	if err := tokens.SaveClient(t.Context(), &tokenstore.Client{ID: "elsewhere", Secret: "elsewhere-secret", Issuer: "https://other.example"}); err != nil {
		t.Fatal(err)
	}
	_, got, err := Login(t.Context(), as.request(t, store))
	if err != nil {
		t.Fatal(err)
	}
	if got.How != ClientRegisteredNow || as.reg != 1 {
		t.Errorf("login used %+v after %d registrations, want a new registration", got, as.reg)
	}
	for _, id := range append(as.authIDs, as.basic...) {
		if id == "elsewhere" {
			t.Error("the client of another issuer was sent to this one")
		}
	}
}

func TestMetadataDocumentIsUsedOnlyWhereTheServerTakesIt(t *testing.T) {
	t.Parallel()
	const doc = "https://client.example/mcpwarden.json"
	tests := []struct {
		name   string
		cimd   bool
		wantID string
		want   ClientOrigin
	}{
		{"a server that takes them", true, doc, ClientMetadataDocument},
		{"a server that does not: registration", false, "registered-1", ClientRegisteredNow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as := startStandInAS(t, tt.cimd, false)
			r := as.request(t, newStore(t))
			r.ClientMetadataURL = doc
			_, got, err := Login(t.Context(), r)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != tt.wantID || got.How != tt.want || len(as.authIDs) != 1 || as.authIDs[0] != tt.wantID {
				t.Errorf("login used %+v (authorization by %q), want %s (%v)", got, as.authIDs, tt.wantID, tt.want)
			}
		})
	}
}

func TestLoginWithNoWayToGetAClientSaysSo(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, true)
	_, _, err := Login(t.Context(), as.request(t, newStore(t)))
	if err == nil || !errors.Is(err, ErrNoClient) {
		t.Fatalf("err = %v, want ErrNoClient", err)
	}
	if len(as.authIDs) != 0 {
		t.Errorf("authorization requests by %q, want none", as.authIDs)
	}
}

func TestServeRefreshesAsTheRegisteredClient(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, false)
	vars := map[string]string{"XDG_STATE_HOME": t.TempDir(), tokenstore.KeyEnv: base64.StdEncoding.EncodeToString(make([]byte, tokenstore.KeySize))}
	getenv := func(k string) string { return vars[k] }
	store, err := OpenStore(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Login(t.Context(), as.request(t, store)); err != nil {
		t.Fatal(err)
	}
	// The server's spec as serve builds it from a config with no client:
	// the registration in the store is the client.
	o := UpstreamOAuth("remote", config.Server{URL: as.URL, OAuth: &config.ServerOAuth{}}, getenv)
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{"remote": {Transport: upstream.TransportHTTP, URL: as.URL, OAuth: o}}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("remote"); err != nil {
		t.Fatalf("Err = %v", err)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if len(as.grants) < 2 || as.grants[1] != "refresh_token" {
		t.Fatalf("token requests %q, want the code exchange then a refresh", as.grants)
	}
	if as.basic[1] != "registered-1" {
		t.Errorf("the refresh authenticated as %q, want the registered client", as.basic[1])
	}
}

// TestRegistrationSaysMcpwardenIsANativeApp: the 2026-07-28 authorization
// spec requires an application_type in dynamic client registration, and
// an OpenID provider takes a missing one for "web", which may refuse the
// loopback redirect URI of a CLI. mcpwarden's login is a native app.
func TestRegistrationSaysMcpwardenIsANativeApp(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, false)
	if _, _, err := Login(t.Context(), as.request(t, newStore(t))); err != nil {
		t.Fatal(err)
	}
	if len(as.regs) != 1 {
		t.Fatalf("%d registrations, want 1", len(as.regs))
	}
	got := as.regs[0]
	if got["application_type"] != "native" {
		t.Errorf("registration %v: application_type %v, want native", got, got["application_type"])
	}
	uris, _ := got["redirect_uris"].([]any)
	if len(uris) != 1 || !strings.HasPrefix(fmt.Sprint(uris[0]), "http://127.0.0.1:") || !strings.HasSuffix(fmt.Sprint(uris[0]), CallbackPath) {
		t.Errorf("registration %v: redirect_uris %v, want the loopback listener", got, uris)
	}
}

// TestRefusedRegistrationSaysWhy: an authorization server that refuses
// the registration (an OpenID provider's redirect URI rules, say) has its
// reason shown.
func TestRefusedRegistrationSaysWhy(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, false)
	as.refuseRegistration = `{"error":"invalid_redirect_uri","error_description":"loopback redirects need application_type native"}`
	_, _, err := Login(t.Context(), as.request(t, newStore(t)))
	if err == nil || !strings.Contains(err.Error(), "invalid_redirect_uri") || !strings.Contains(err.Error(), "loopback redirects need") {
		t.Fatalf("Login = %v, want the server's reason", err)
	}
}

// TestStepUpAsksForTheScopesAlreadyGrantedToo: after a 403
// insufficient_scope, the next login asks for the union of the scope the
// token was granted and the scope the server wants (SEP-2350), so that
// stepping up for one operation does not lose another.
func TestStepUpAsksForTheScopesAlreadyGrantedToo(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, false)
	store := newStore(t)
	tokens := &tokenstore.ServerTokens{Store: store, Server: "remote", Resource: as.URL}
	if err := store.Put(t.Context(), "remote", tokenstore.Token{AccessToken: "narrow", Scope: "mcp:basic mcp:read", Resource: as.URL}); err != nil {
		t.Fatal(err)
	}
	if err := tokens.NeedScope(t.Context(), "mcp:write mcp:read"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Login(t.Context(), as.request(t, store)); err != nil {
		t.Fatal(err)
	}
	if want := "mcp:basic mcp:read mcp:write"; len(as.authScopes) != 1 || as.authScopes[0] != want {
		t.Errorf("authorization requests asked for scopes %q, want %q", as.authScopes, want)
	}
}
