package proxy

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/rules"
)

// Listing of the catalog is filtered like tools/list (docs/design.md, "Deciding a request"): a
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
func (cat *catalog) hiddenFor(ctx context.Context, server string, method mcp.MCPMethod) bool {
	return cat.current().policy.Hidden(rules.Call{Profile: cat.profileOf(ctx), Server: server, Tool: string(method)})
}

// visible returns the items of a list whose server, found in routes by
// the item's key, the caller may see for method; an item no route knows
// is dropped.
func visible[T any](ctx context.Context, s *catalog, items []T, method mcp.MCPMethod, routes map[string]route, key func(T) string) []T {
	out := items[:0:0]
	for _, it := range items {
		if rt, ok := routes[key(it)]; ok && !s.hiddenFor(ctx, rt.server, method) {
			out = append(out, it)
		}
	}
	return out
}

// listedResources drops from a resources/list result the resources the
// caller may not see.
func (cat *catalog) listedResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	if res != nil {
		res.Resources = visible(ctx, cat, res.Resources, mcp.MethodResourcesRead, cat.loadRoutes().uris, func(r mcp.Resource) string { return r.URI })
	}
}

// listedTemplates drops from a resources/templates/list result the
// templates the caller may not see.
func (cat *catalog) listedTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	if res != nil {
		res.ResourceTemplates = visible(ctx, cat, res.ResourceTemplates, mcp.MethodResourcesRead, cat.loadRoutes().templates, templateText)
	}
}

// listedPrompts drops from a prompts/list result the prompts the caller
// may not see.
func (cat *catalog) listedPrompts(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
	if res != nil {
		res.Prompts = visible(ctx, cat, res.Prompts, mcp.MethodPromptsGet, cat.loadRoutes().prompts, func(p mcp.Prompt) string { return p.Name })
	}
}
