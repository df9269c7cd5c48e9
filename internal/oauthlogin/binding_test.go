package oauthlogin

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A newAS is the authorization server a server moved to, which records
// who asks it for tokens.
type newAS struct {
	URL   string
	mu    sync.Mutex
	asked []string // HTTP Basic user, client_id, client_secret, refresh_token of each token request
}

func startNewAS(t *testing.T) *newAS {
	t.Helper()
	a := &newAS{}
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	a.URL = ts.URL
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"issuer": ts.URL, "authorization_endpoint": ts.URL + "/authorize", "token_endpoint": ts.URL + "/token", "response_types_supported": []string{"code"}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		a.mu.Lock()
		a.asked = append(a.asked, strings.Join([]string{id, secret, r.FormValue("client_id"), r.FormValue("client_secret"), r.FormValue("refresh_token")}, " "))
		a.mu.Unlock()
		writeJSON(w, map[string]any{"access_token": "from-the-new-server", "token_type": "Bearer", "expires_in": 3600})
	})
	return a
}

// moveAndServe signs in at as with r, moves the server to another
// authorization server, and starts the server as serve does from srv:
// the new server and the server's error.
func moveAndServe(t *testing.T, as *standInAS, r Request, srv config.ServerOAuth, vars map[string]string) (*newAS, error) {
	t.Helper()
	vars["XDG_STATE_HOME"] = t.TempDir()
	vars[tokenstore.KeyEnv] = base64.StdEncoding.EncodeToString(make([]byte, tokenstore.KeySize))
	getenv := func(k string) string { return vars[k] }
	store, err := OpenStore(getenv)
	if err != nil {
		t.Fatal(err)
	}
	r.Store = store
	if _, _, err := Login(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	moved := startNewAS(t)
	as.mu.Lock()
	as.movedTo = moved.URL
	as.mu.Unlock()
	o := UpstreamOAuth("remote", config.Server{URL: as.URL, OAuth: &srv}, getenv)
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{"remote": {Transport: upstream.TransportHTTP, URL: as.URL, OAuth: o}}, nil)
	t.Cleanup(func() { pool.Close() })
	return moved, pool.Err("remote")
}

// TestRegisteredClientIsNotSentToANewAuthorizationServer: when the
// server's resource metadata names another authorization server than the
// one mcpwarden registered at (it moved, or its metadata was tampered
// with), serve sends the registration and its refresh token nowhere and
// asks for a login, which registers at the new one (SEP-2352).
func TestRegisteredClientIsNotSentToANewAuthorizationServer(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, false)
	moved, err := moveAndServe(t, as, as.request(t, nil), config.ServerOAuth{}, map[string]string{})
	if want := "its authorization server is now " + strconv.Quote(moved.URL); !errors.Is(err, upstream.ErrLoginRequired) || !strings.Contains(err.Error(), want) {
		t.Errorf("Err = %v, want ErrLoginRequired saying %s", err, want)
	}
	moved.mu.Lock()
	defer moved.mu.Unlock()
	if len(moved.asked) != 0 {
		t.Errorf("the new authorization server was asked for tokens with %q, want nobody", moved.asked)
	}
}

// TestConfiguredClientSecretIsNotSentToANewAuthorizationServer: a client
// registered by hand belongs to one authorization server too; its secret
// and the refresh token that server issued are not sent to another one
// the server now names (SEP-2352: surface an error rather than use
// mismatched credentials).
func TestConfiguredClientSecretIsNotSentToANewAuthorizationServer(t *testing.T) {
	t.Parallel()
	as := startStandInAS(t, false, false)
	r := as.request(t, nil)
	r.ClientID, r.ClientSecret = "by-hand", "by-hand-secret"
	moved, err := moveAndServe(t, as, r, config.ServerOAuth{ClientID: "by-hand", ClientSecretEnv: "SECRET"}, map[string]string{"SECRET": "by-hand-secret"})
	if !errors.Is(err, upstream.ErrLoginRequired) || !strings.Contains(err.Error(), strconv.Quote(moved.URL)) {
		t.Errorf("Err = %v, want ErrLoginRequired naming the new authorization server", err)
	}
	moved.mu.Lock()
	defer moved.mu.Unlock()
	if len(moved.asked) != 0 {
		t.Errorf("the new authorization server was asked for tokens with %q, want nobody", moved.asked)
	}
}
