package proxy

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/rules"
)

// Listing of the catalog is filtered like tools/list (DESIGN.md §2): a
// resource or resource template of a server is hidden iff an unconditional
// deny matches mcp:<server>:resources/read for the caller, and a prompt
// iff one matches mcp:<server>:prompts/get — so mcp:<server>:* and a
// profile that cannot see the server hide all of them. Filtering is per
// server and method, not per resource: a deny with conditions (on a uri,
// say) refuses the matching reads but hides nothing, as for tools. The
// filters run as mcp-go's after-list hooks, on the result before it is
// sent; they only hide. Enforcement is in the handlers, which decide every
// read, get and completion whatever was listed.

// hiddenFor reports whether a server's requests of method are hidden from
// the caller.
func (s *Server) hiddenFor(ctx context.Context, server string, method mcp.MCPMethod) bool {
	return s.policy.Load().Hidden(rules.Call{Profile: s.profileOf(ctx), Server: server, Tool: string(method)})
}

// listedResources drops from a resources/list result the resources the
// caller may not see.
func (s *Server) listedResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	if res == nil {
		return
	}
	routes := s.catalog.loadRoutes()
	out := res.Resources[:0:0]
	for _, r := range res.Resources {
		if rt, ok := routes.uris[r.URI]; ok && !s.hiddenFor(ctx, rt.server, mcp.MethodResourcesRead) {
			out = append(out, r)
		}
	}
	res.Resources = out
}

// listedTemplates drops from a resources/templates/list result the
// templates the caller may not see.
func (s *Server) listedTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	if res == nil {
		return
	}
	routes := s.catalog.loadRoutes()
	out := res.ResourceTemplates[:0:0]
	for _, t := range res.ResourceTemplates {
		if rt, ok := routes.templates[templateText(t)]; ok && !s.hiddenFor(ctx, rt.server, mcp.MethodResourcesRead) {
			out = append(out, t)
		}
	}
	res.ResourceTemplates = out
}

// listedPrompts drops from a prompts/list result the prompts the caller
// may not see.
func (s *Server) listedPrompts(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
	if res == nil {
		return
	}
	routes := s.catalog.loadRoutes()
	out := res.Prompts[:0:0]
	for _, p := range res.Prompts {
		if rt, ok := routes.prompts[p.Name]; ok && !s.hiddenFor(ctx, rt.server, mcp.MethodPromptsGet) {
			out = append(out, p)
		}
	}
	res.Prompts = out
}
