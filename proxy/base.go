package proxy

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/argschema"
	"github.com/mcpwarden/mcpwarden/proxy/httpguard"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A base is what the proxy's parts share: the upstreams, the mcp-go
// server, the human log, the snapshot in force and the principal and
// profile of requests that carry none. New builds the one base of a
// Server, which holds it; its parts (the catalog, the tool set, the
// review, the relay, the egress policy, the root cache) hold a pointer to
// it. Its fields are set once, before the Server serves; only the
// snapshot is replaced, whole.
type base struct {
	upstream  Upstream
	mcp       *server.MCPServer
	logger    *slog.Logger
	snap      atomic.Pointer[snapshot] // see snapshot; replaced whole
	profile   string
	principal string
}

// A core is the decide-and-forward core as the Server's parts reach it:
// they build a request's call, have it decided, forwarded and audited
// through these methods and no others. *Server is the one implementation.
type core interface {
	newRequest(ctx context.Context, server string, method mcp.MCPMethod, exposed string, params map[string]any) *call
	request(ctx context.Context, c *call, ask asking, do func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error)
	settleFromUpstream(ctx context.Context, c *call, from *upstream.Route, nobody error) (refusal string, err error)
	handler(t naming.Tool, schema *argschema.Schema) server.ToolHandlerFunc
	armBy(ctx context.Context, c *call) error
	writeAudit(ctx context.Context, e audit.Event) error
}

var _ core = (*Server)(nil)

// current is the snapshot in force.
func (b *base) current() *snapshot { return b.snap.Load() }

// profileOf is the profile a call runs under: the one its request was
// authenticated as, else the server's default (serve --profile).
func (b *base) profileOf(ctx context.Context) string {
	if profile, ok := httpguard.ProfileOf(ctx); ok {
		return profile
	}
	return b.profile
}

// principalOf is who a request comes from: the principal its token was
// authenticated as, else the server's default (PrincipalLocal over stdio,
// PrincipalAnonymous on an HTTP listener without auth).
func (b *base) principalOf(ctx context.Context) string {
	if principal := httpguard.PrincipalOf(ctx); principal != "" {
		return principal
	}
	return b.principal
}
