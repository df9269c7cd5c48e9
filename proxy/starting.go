package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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
//
// A tools/call that waits is in progress for shutdown (see
// drain.enterWaiting): shutdown lets it finish within the grace period,
// and at its end the wait fails with ErrShuttingDown.
func (s *Server) awaitStarting(ctx context.Context, method mcp.MCPMethod, tool string) error {
	if s.starting == nil {
		return nil
	}
	if method == mcp.MethodToolsCall {
		if _, ok := s.Lookup(tool); ok {
			return nil
		}
		wctx, handOver, leave, ok := s.drain.EnterWaiting(ctx)
		if !ok {
			return nil // refused by the handler, or not found
		}
		for {
			if _, ok := s.Lookup(tool); ok {
				handOver(passKey(ctx, tool))
				return nil
			}
			pctx, cancel := context.WithTimeout(wctx, toolPoll)
			err := s.starting(pctx)
			cancel()
			if cause := context.Cause(wctx); errors.Is(cause, ErrShuttingDown) {
				leave()
				return fmt.Errorf("%w; %s was not forwarded", cause, tool)
			}
			if err == nil || wctx.Err() != nil {
				// Every server has started (its tools may be a moment
				// from being listed) or the client gave up: the
				// handler, if it comes, takes the request over.
				handOver(passKey(ctx, tool))
				return nil
			}
		}
	}
	if clientMethods[method] != methodDecided && !listsUpstreams[method] {
		return nil
	}
	wctx, cancel := context.WithDeadline(ctx, s.startBy)
	defer cancel()
	_ = s.starting(wctx)
	return nil
}

// passKey names a tools/call of the wire name tool on the session of ctx,
// for its handler to take over the wait before it (see
// drain.enterWaiting).
func passKey(ctx context.Context, tool string) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID() + "\x00" + tool
	}
	return "\x00" + tool
}
