package proxy

import (
	"context"
	"io"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/stdio"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
)

// ServeStdio serves one client of s over in and out until ctx is done or
// in ends, with mcpwarden's own stdio transport (package stdio). Nothing
// but protocol messages is written to out.
func ServeStdio(ctx context.Context, s *Server, in io.Reader, out io.Writer) error {
	return stdio.Serve(ctx, s.mcp, directCalls{s}, s.inflight, s.logger, in, out)
}

// ListenAndServe serves s over streamable HTTP at streamable.EndpointPath
// on addr until ctx is done (package streamable), then shuts down, giving
// requests in flight a few seconds.
func ListenAndServe(ctx context.Context, s *Server, addr string, o streamable.Options) error {
	return streamable.ListenAndServe(ctx, httpHost(s), addr, o)
}

// httpHost is what the HTTP transport needs of s. A refusal it records is
// decided under the current policy, whose hash the event carries.
func httpHost(s *Server) streamable.Host {
	return streamable.Host{
		MCP:         s.mcp,
		Calls:       directCalls{s},
		Logger:      s.logger,
		Telemetry:   s.tel,
		State:       s.state.sharedStore(),
		Budget:      s.inflight,
		PrincipalOf: s.principalOf,
		ProfileOf:   s.profileOf,
		Audit: func(ctx context.Context, e audit.Event) {
			e.PolicySHA256 = s.current().policy.SHA256()
			s.writeAudit(ctx, e)
		},
	}
}
