package proxy

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// listsUpstreams are the methods answered locally from what the upstreams
// listed: they wait for the upstreams still starting, as the decided ones
// do (see Options.Starting).
var listsUpstreams = map[mcp.MCPMethod]bool{
	mcp.MethodToolsList:              true,
	mcp.MethodResourcesList:          true,
	mcp.MethodResourcesTemplatesList: true,
	mcp.MethodPromptsList:            true,
}

// toolPoll is how often a tools/call of a tool not listed yet looks again.
const toolPoll = 50 * time.Millisecond

// awaitStarting holds a request while upstreams are on their first start
// (see Options.Starting). A tools/call waits for its tool to be listed, or
// for every upstream to have started or failed (each bounded by its
// init_timeout), whichever comes first: a tool that exists is found, one
// that does not is refused then. A request that lists or reaches the
// upstreams otherwise waits until the startup deadline at most.
// initialize, ping and the other local methods never wait.
func (s *Server) awaitStarting(ctx context.Context, method mcp.MCPMethod, tool string) {
	if s.starting == nil {
		return
	}
	if method == mcp.MethodToolsCall {
		for {
			if _, ok := s.lookup(tool); ok {
				return
			}
			wctx, cancel := context.WithTimeout(ctx, toolPoll)
			err := s.starting(wctx)
			cancel()
			if err == nil || ctx.Err() != nil {
				return
			}
		}
	}
	if clientMethods[method] != methodDecided && !listsUpstreams[method] {
		return
	}
	wctx, cancel := context.WithDeadline(ctx, s.startBy)
	defer cancel()
	_ = s.starting(wctx)
}
