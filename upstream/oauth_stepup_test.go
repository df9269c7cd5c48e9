package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// A scopeRecorder is a StepUps that remembers the scopes it was told.
type scopeRecorder struct {
	mu     sync.Mutex
	scopes []string
}

func (r *scopeRecorder) NeedScope(_ context.Context, scope string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scopes = append(r.scopes, scope)
	return nil
}

func (r *scopeRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.scopes...)
}

// forbiddingServer answers every request with 403 and challenge as its
// WWW-Authenticate header.
func forbiddingServer(t *testing.T, challenge string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", challenge)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":"insufficient_scope"}`))
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func stepUpSpec(url string, rec *scopeRecorder) Spec {
	tokens := transport.NewMemoryTokenStore()
	_ = tokens.SaveToken(context.Background(), &transport.Token{AccessToken: "narrow", TokenType: "Bearer", ExpiresAt: time.Now().Add(time.Hour)})
	return Spec{Transport: TransportHTTP, URL: url, InitTimeout: 5 * time.Second, OAuth: &OAuth{
		ClientID: "c", Tokens: tokens, StepUps: rec,
	}}
}

func TestInsufficientScopeAsksForANewLoginWithThatScope(t *testing.T) {
	t.Parallel()
	rec := &scopeRecorder{}
	url := forbiddingServer(t, `Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://x.example/.well-known/oauth-protected-resource/mcp"`)
	pool := Start(t.Context(), map[string]Spec{"remote": stepUpSpec(url, rec)}, nil)
	t.Cleanup(func() { pool.Close() })

	err := pool.Err("remote")
	if !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("Err = %v, want ErrLoginRequired", err)
	}
	if want := "`mcpwarden login remote`: it wants OAuth scope \"mcp:basic mcp:write\""; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %s", err, want)
	}
	if got := rec.got(); len(got) == 0 || got[0] != "mcp:basic mcp:write" {
		t.Errorf("StepUps was told %q, want the scope the server wants", got)
	}
}

func TestForbiddenWithoutAScopeChallengeIsNotTakenForALogin(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, challenge string }{
		{"no challenge", ""},
		{"another error", `Bearer error="invalid_token"`},
		{"insufficient_scope in another scheme's challenge", `Basic error="insufficient_scope", scope="admin"`},
		{"a scope too long to keep", `Bearer error="insufficient_scope", scope="` + strings.Repeat("a ", maxStepUpScope) + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &scopeRecorder{}
			pool := Start(t.Context(), map[string]Spec{"remote": stepUpSpec(forbiddingServer(t, tt.challenge), rec)}, nil)
			t.Cleanup(func() { pool.Close() })
			err := pool.Err("remote")
			if err == nil || errors.Is(err, ErrLoginRequired) {
				t.Errorf("Err = %v, want a failure that is not a login", err)
			}
			if got := rec.got(); len(got) != 0 {
				t.Errorf("StepUps was told %q, want nothing", got)
			}
		})
	}
}
