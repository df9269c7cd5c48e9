// Package remote is a remote MCP server that wants OAuth, for tests of
// mcpwarden as an OAuth client: an mcp-go streamable HTTP server behind
// internal/oauth's Guard, whose audience is its own URL, with a test
// OpenID provider (testop) as its authorization server. Real parts on both
// sides; no token is minted by hand. It is for tests only.
package remote

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/oauth"
	"github.com/mcpwarden/mcpwarden/internal/testop"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

// EchoTool is the server's one tool: it answers its "text" argument.
const EchoTool = "echo"

// A Server is a running protected MCP server. URL is its /mcp endpoint,
// OP its authorization server, Client the client registered there for
// mcpwarden (its tokens are for URL; a native client, so a loopback login
// listener may take any port).
type Server struct {
	URL    string
	OP     *testop.Provider
	Client testop.Client

	mu   sync.Mutex
	auth []string // the Authorization headers of the requests to /mcp
}

// Start runs a server until the test ends. Its provider's access tokens
// live lifetime (0: an hour).
func Start(t testing.TB, lifetime time.Duration) *Server {
	t.Helper()
	return start(t, lifetime, false)
}

// StartSSE is Start for a server on the SSE transport: URL is its /sse
// endpoint, and its messages go to /message, guarded alike.
func StartSSE(t testing.TB, lifetime time.Duration) *Server {
	t.Helper()
	return start(t, lifetime, true)
}

func start(t testing.TB, lifetime time.Duration, sse bool) *Server {
	ts := httptest.NewUnstartedServer(nil)
	endpoint := "/mcp"
	if sse {
		endpoint = "/sse"
	}
	s := &Server{URL: "http://" + ts.Listener.Addr().String() + endpoint}
	s.Client = testop.Client{ID: "mcpwarden-upstream", Secret: "upstream-secret", Audience: []string{s.URL}, Native: true}
	s.OP = testop.Start(t, &testop.Options{Lifetime: lifetime, Clients: []testop.Client{s.Client}})
	v, err := oauth.New(oauth.Config{Issuer: s.OP.Issuer, Audience: s.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := oauth.NewMatcher(nil, "anyone")
	if err != nil {
		t.Fatal(err)
	}
	srv := mcpserver.NewMCPServer("remote", "1.0.0")
	srv.AddTool(echoTool(), echo)
	mux := http.NewServeMux()
	mux.Handle(v.MetadataPath(), oauth.MetadataHandler(v.Metadata()))
	var h http.Handler = mcpserver.NewStreamableHTTPServer(srv)
	if sse {
		h = mcpserver.NewSSEServer(srv, mcpserver.WithBaseURL("http://"+ts.Listener.Addr().String()))
	}
	guarded := oauth.Guard{Verifier: v, Matcher: m}.Wrap(h)
	seen := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		guarded.ServeHTTP(w, r)
	})
	mux.Handle(endpoint, seen)
	if sse {
		mux.Handle("/message", seen)
	}
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return s
}

func echoTool() mcp.Tool {
	return mcp.NewTool(EchoTool, mcp.WithString("text"))
}

func echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(req.GetString("text", "")), nil
}

// SawToken reports whether a request came with tok as its bearer token.
func (s *Server) SawToken(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.auth {
		if a == "Bearer "+tok {
			return true
		}
	}
	return false
}

// NewTokenStore is an empty token store with a random key, in a
// directory removed when the test ends.
func NewTokenStore(t testing.TB) *tokenstore.Store {
	t.Helper()
	key := make([]byte, tokenstore.KeySize)
	rand.Read(key)
	s, err := tokenstore.Open(filepath.Join(t.TempDir(), "tokens.enc"), key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
